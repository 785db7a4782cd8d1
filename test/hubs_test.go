package test

import (
	"context"
	"encoding/json"
	"fmt"
	"regexp"
	"strconv"
	"strings"
	"testing"
	"time"

	"github.com/twmb/franz-go/pkg/kgo"
)

// produce sends records to partition 0 of "status", in order.
func (e *env) produce(recs ...*kgo.Record) {
	e.t.Helper()
	for _, r := range recs {
		r.Topic, r.Partition = "status", 0
	}
	if err := e.producer().ProduceSync(context.Background(), recs...).FirstErr(); err != nil {
		e.t.Fatal(err)
	}
}

// clustersOf returns the hub's managed cluster names, sorted.
func (e *env) clustersOf(hub string) string {
	e.t.Helper()
	var names string
	if err := e.pool.QueryRow(context.Background(), `
		SELECT coalesce(string_agg(cluster_name, ',' ORDER BY cluster_name), '')
		FROM stb.managed_clusters WHERE hub = $1`, hub).Scan(&names); err != nil {
		e.t.Fatal(err)
	}
	return names
}

// hubState returns the hub's state in stb.hubs ("" without a row).
func (e *env) hubState(hub string) string {
	e.t.Helper()
	var st string
	err := e.pool.QueryRow(context.Background(), `SELECT state FROM stb.hubs WHERE name = $1`, hub).Scan(&st)
	if err != nil && !strings.Contains(err.Error(), "no rows") {
		e.t.Fatal(err)
	}
	return st
}

// waitFor polls cond until it holds or the timeout ends.
func (e *env) waitFor(what string, timeout time.Duration, cond func() bool) {
	e.t.Helper()
	deadline := time.Now().Add(timeout)
	for !cond() {
		if time.Now().After(deadline) {
			e.t.Fatalf("timed out waiting for %s", what)
		}
		time.Sleep(100 * time.Millisecond)
	}
}

func clusters(names ...string) []byte {
	var objs []string
	for _, n := range names {
		objs = append(objs, fmt.Sprintf(`{"metadata":{"name":%q,"uid":"uid-%s"}}`, n, n))
	}
	return []byte(`{"objects":[` + strings.Join(objs, ",") + `]}`)
}

// TestHubDeleteAndResetWhileRunning: an operator deletes a hub and resets
// another while the bridge runs. The deleted hub's rows go at once; a
// bundle of its old incarnation read afterwards cannot bring it back; a
// newer incarnation can. The reset hub, rebuilt with a lower incarnation,
// is written without restarting the bridge, which must have dropped the
// versions it held in memory.
func TestHubDeleteAndResetWhileRunning(t *testing.T) {
	e := newEnv(t, 1)
	e.produce(
		ceRecord("a1", "hub-a", "managedclusters", "3.1", clusters("a1", "a2")),
		ceRecord("r1", "hub-r", "managedclusters", "7.5", clusters("r-old")),
		ceRecord("k1", "hub-keep", "managedclusters", "1.1", clusters("k1")),
	)
	b := e.startBridge()
	e.waitFor("the three hubs written", time.Minute, func() bool {
		return e.clustersOf("hub-a") == "a1,a2" && e.clustersOf("hub-r") == "r-old" && e.clustersOf("hub-keep") == "k1"
	})

	out, err := e.stb("hub", "delete", "hub-a", "--database-url", e.dbURL)
	if err != nil || !strings.Contains(out, `hub "hub-a" deleted: 2 rows removed`) || !strings.Contains(out, "tombstones at incarnation 3") {
		t.Fatalf("stb hub delete: %v\n%s", err, out)
	}
	t.Logf("%s", strings.TrimSpace(out))
	if c, st := e.clustersOf("hub-a"), e.hubState("hub-a"); c != "" || st != "deleted" {
		t.Fatalf("after delete: clusters %q, state %q", c, st)
	}
	out, err = e.stb("hub", "reset", "hub-r", "--database-url", e.dbURL)
	if err != nil || !strings.Contains(out, `hub "hub-r" reset: 1 rows removed, 1 stored versions forgotten`) {
		t.Fatalf("stb hub reset: %v\n%s", err, out)
	}
	t.Logf("%s", strings.TrimSpace(out))
	e.waitFor("the bridge to apply both requests", 30*time.Second, func() bool {
		s, err := b.scrape()
		return err == nil && s.sumWith("stb_hubs_requests_applied_total", "action", "delete") == 1 &&
			s.sumWith("stb_hubs_requests_applied_total", "action", "reset") == 1
	})

	// Late copy of the deleted incarnation, the rebuilt hub's first
	// bundle, then a marker the test waits for (one partition: in order).
	e.produce(
		ceRecord("a2", "hub-a", "managedclusters", "3.9", clusters("a-late")),
		ceRecord("r2", "hub-r", "managedclusters", "1.1", clusters("r-new")),
		ceRecord("k2", "hub-keep", "managedclusters", "1.2", clusters("k2")),
	)
	e.waitFor("the marker", time.Minute, func() bool { return e.clustersOf("hub-keep") == "k2" })
	e.waitFor("the reset hub's new incarnation", 30*time.Second, func() bool { return e.clustersOf("hub-r") == "r-new" })
	if c, st := e.clustersOf("hub-a"), e.hubState("hub-a"); c != "" || st != "deleted" {
		t.Fatalf("a bundle of the deleted incarnation brought the hub back: clusters %q, state %q", c, st)
	}

	// A newer incarnation comes back cleanly.
	e.produce(ceRecord("a3", "hub-a", "managedclusters", "4.1", clusters("a-new")))
	e.waitFor("the deleted hub's newer incarnation", time.Minute, func() bool {
		return e.clustersOf("hub-a") == "a-new" && e.hubState("hub-a") == "active"
	})

	// Idempotent: deleting twice says so and removes nothing more. (A
	// hub the database holds nothing of is refused instead: issue 33,
	// TestHubCommandsRefuseAnUnknownHub.)
	if _, err := e.stb("hub", "delete", "hub-keep", "--database-url", e.dbURL); err != nil {
		t.Fatal(err)
	}
	out, err = e.stb("hub", "delete", "hub-keep", "--database-url", e.dbURL)
	if err != nil || !strings.Contains(out, "already deleted") || !strings.Contains(out, "0 rows removed") {
		t.Fatalf("second delete: %v\n%s", err, out)
	}
	if out, err := e.stb("hub", "delete", "hub-gone", "--database-url", e.dbURL); err == nil || !strings.Contains(out, "unknown hub") {
		t.Fatalf("delete of a hub never seen: %v, want it refused as an unknown hub\n%s", err, out)
	}
	b.stop(30 * time.Second)
}

// TestInactiveHubs: a hub that stops sending heartbeats is marked
// inactive, counted in stb_hubs, shown on the console, and turns active
// on its next bundle; with --hub-delete-after it is then deleted.
func TestInactiveHubs(t *testing.T) {
	e := newEnv(t, 1)
	e.produce(
		ceRecord("q1", "hub-quiet", "heartbeat", "1.1", []byte(`{}`)),
		ceRecord("q2", "hub-quiet", "managedclusters", "1.2", clusters("q1")),
	)
	b := e.startBridge("--hub-inactive-after", "2s")
	e.waitFor("the hub marked inactive", time.Minute, func() bool { return e.hubState("hub-quiet") == "inactive" })
	e.waitFor("stb_hubs{state=inactive} 1", 30*time.Second, func() bool {
		s, err := b.scrape()
		return err == nil && s.sumWith("stb_hubs", "state", "inactive") == 1 && s.sumWith("stb_hubs", "state", "active") == 0
	})
	status, body, err := b.get("/hub?name=hub-quiet")
	if err != nil || status != 200 || !strings.Contains(body, `id="hub-state" class="bad">inactive</b>`) {
		t.Fatalf("hub page: %d %v\n%s", status, err, body)
	}

	e.produce(ceRecord("q3", "hub-quiet", "heartbeat", "1.3", []byte(`{}`)))
	e.waitFor("the hub active again", 30*time.Second, func() bool { return e.hubState("hub-quiet") == "active" })
	b.stop(30 * time.Second)

	b = e.startBridge("--hub-inactive-after", "1s", "--hub-delete-after", "1s")
	e.waitFor("the inactive hub deleted", time.Minute, func() bool {
		return e.hubState("hub-quiet") == "deleted" && e.clustersOf("hub-quiet") == ""
	})
	e.waitFor("stb_hubs_deleted_inactive_total 1", 30*time.Second, func() bool {
		s, err := b.scrape()
		n, _ := s.sum("stb_hubs_deleted_inactive_total")
		return err == nil && n == 1
	})
	b.stop(30 * time.Second)
}

// TestResyncRecoversLostBases: hubs whose agents lose compliance reports
// (never published) and go on with deltas on them, so the bridge holds
// deltas on bases it never reads. It asks for a resync; the simulated
// agents answer with a complete report at a new generation; the database
// must end with every hub's state and no dead letter. A hub that ignores
// requests gets at most one per --resync-interval.
func TestResyncRecoversLostBases(t *testing.T) {
	e := newEnv(t, 2)
	sim := e.simulateAsync("lossy", "--hubs", "12", "--clusters", "4", "--generations", "10", "--seed", "23",
		"--restart-probability", "-1", "--lose-probability", "0.7", "--resync-topic", "status-resync", "--resync-quiet", "10s")
	b := e.startBridge("--resync-topic", "status-resync", "--resync-after", "1s", "--resync-interval", "3s",
		"--dependency-timeout", "10m")
	exp := sim.wait(t, 2*time.Minute)
	if !strings.Contains(lastLine(sim.out.String()), "resyncs answered") || strings.Contains(lastLine(sim.out.String()), " 0 resyncs answered") {
		t.Fatalf("no resync answered: %s", lastLine(sim.out.String()))
	}
	e.waitVerified(exp, time.Minute)
	var dead int
	if err := e.pool.QueryRow(context.Background(), `SELECT count(*) FROM stb.dead_letters`).Scan(&dead); err != nil {
		t.Fatal(err)
	}
	if dead != 0 {
		t.Fatalf("%d dead letters, want none: a lost base is resynced, not dead-lettered", dead)
	}
	s, err := b.scrape()
	if err != nil {
		t.Fatal(err)
	}
	asked := s.sumWith("stb_resync_requests_total", "result", "queued")
	if asked == 0 {
		t.Fatal("stb_resync_requests_total{result=queued} is 0")
	}
	t.Logf("%v resync requests sent", asked)
	b.stop(30 * time.Second)

	// A hub that ignores the requests: its delta's base never comes. The
	// bridge must keep asking it, at most once per --resync-interval.
	//
	// "At most N in a window" is checked against bounds, not after a
	// sleep. A request is made on a wake-up of the bridge (every second)
	// at which the delta has waited --resync-after and the last request
	// for the hub and type is --resync-interval old
	// (conflation.Unit.resyncsLocked). So with n requests made, the n-th
	// was made at least after + (n-1)·interval after the delta began to
	// wait. The test waits until the hub has been asked three times (asked,
	// then asked again after the interval, twice), then checks that twice:
	//   - inside the bridge, exactly: one snapshot of the hub's unit
	//     (/debug/units, taken under the unit's lock at one instant) gives
	//     how long the delta has waited and how long ago the last request
	//     was, so (n-1)·interval <= waited - lastAgo - after;
	//   - from outside, on the test's clock: the delta waits from when the
	//     bridge read it, after started (taken before the bridge was
	//     started), and a count read at seen holds only requests made
	//     before it, so count <= 1 + (seen-started-after)/interval. This
	//     is how the metric and the console page are held to the interval.
	// A loaded machine only delays the requests, which keeps them inside
	// both bounds; a bridge that ignored the interval would ask at every
	// wake-up and fail the first at once (3 requests within ~2 s of
	// waiting past --resync-after, where 8 s are needed).
	const after, interval = time.Second, 4 * time.Second
	e.produce(ceRecord("d1", "hub-deaf", "compliancedelta", "5.9", []byte(`{"objects":[]}`), withHeader("ce_extdependencyversion", "5.8")))
	started := time.Now()
	b = e.startBridge("--resync-topic", "status-resync", "--resync-after", after.String(), "--resync-interval", interval.String())
	atMost := func(seen time.Time) float64 {
		waited := seen.Sub(started) - after
		if waited < 0 {
			return 0
		}
		return float64(1 + waited/interval)
	}
	var unit deafUnit
	e.waitFor("three resync requests for the deaf hub in /debug/units", 2*time.Minute, func() bool {
		var ok bool
		unit, ok = b.deafUnit("hub-deaf")
		return ok && unit.resyncs >= 3
	})
	if gap := unit.waited - unit.lastResyncAgo - after.Seconds(); float64(unit.resyncs-1)*interval.Seconds() > gap+0.001 {
		t.Fatalf("the deaf hub's unit made %d resync requests, the last %.3fs ago, its delta waiting %.3fs: more than one per --resync-interval %v after --resync-after %v\n%s",
			unit.resyncs, unit.lastResyncAgo, unit.waited, interval, after, unit.raw)
	}
	_, page, err := b.get("/hub?name=hub-deaf")
	pageSeen := time.Now()
	if n := hubPageResyncs(page); err != nil || n < float64(unit.resyncs) || n > atMost(pageSeen) {
		t.Fatalf("the deaf hub's page shows %v resyncs %v after the bridge was started, want %d (its unit) to %v (one per --resync-interval %v after --resync-after %v); %v:\n%s",
			n, pageSeen.Sub(started).Round(time.Millisecond), unit.resyncs, atMost(pageSeen), interval, after, err, page)
	}
	s, err = b.scrape()
	scraped := time.Now()
	if err != nil {
		t.Fatal(err)
	}
	// The metric counts every hub's requests; the deaf hub is the only one
	// waiting for a base (the lossy hubs were verified above).
	n := s.sumWith("stb_conflation_resyncs_total", "type", "compliance")
	if limit := atMost(scraped); n < float64(unit.resyncs) || n > limit {
		t.Fatalf("stb_conflation_resyncs_total{type=compliance} is %v %v after the bridge was started, want %d (the deaf hub's unit) to %v (one per --resync-interval %v after --resync-after %v)",
			n, scraped.Sub(started).Round(time.Millisecond), unit.resyncs, limit, interval, after)
	}
	t.Logf("%v resync requests for the deaf hub %v after the bridge was started (at most %v allowed); its unit: %d, the last %.1fs ago, its delta waiting %.1fs",
		n, scraped.Sub(started).Round(time.Millisecond), atMost(scraped), unit.resyncs, unit.lastResyncAgo, unit.waited)
	b.stop(30 * time.Second)
}

// deafUnit is what one /debug/units snapshot says of a hub whose delta
// waits for a compliance base: the resyncs asked of its compliance, how
// long ago the last one was, and how long its oldest delta has waited, in
// seconds, all at the snapshot's one instant.
type deafUnit struct {
	resyncs               int
	lastResyncAgo, waited float64
	raw                   string
}

// deafUnit reads the hub's unit from /debug/units; ok is false while the
// bridge has no unit of the hub or no delta of it waiting.
func (b *bridge) deafUnit(hub string) (u deafUnit, ok bool) {
	status, body, err := b.get("/debug/units?hub=" + hub)
	if err != nil || status != 200 {
		return u, false
	}
	var units []struct {
		Types []struct {
			Type             string  `json:"type"`
			HeldCount        int     `json:"heldCount"`
			AgeSec           float64 `json:"ageSeconds"`
			Resyncs          int     `json:"resyncs"`
			LastResyncAgeSec float64 `json:"lastResyncAgeSeconds"`
		} `json:"types"`
	}
	if err := json.Unmarshal([]byte(body), &units); err != nil || len(units) != 1 {
		return u, false
	}
	u.raw = body
	waiting := false
	for _, ts := range units[0].Types {
		switch ts.Type {
		case "compliance":
			u.resyncs, u.lastResyncAgo = ts.Resyncs, ts.LastResyncAgeSec
		case "compliancedelta":
			u.waited, waiting = ts.AgeSec, ts.HeldCount > 0
		}
	}
	return u, waiting
}

// hubResyncsRE matches the resyncs cell of a bundle type's row on a hub's
// console page (internal/console): "<n>, last <age> ago".
var hubResyncsRE = regexp.MustCompile(`class="resyncs">([0-9]+), last`)

// hubPageResyncs adds up the resync requests a hub's console page shows,
// over its bundle types.
func hubPageResyncs(page string) float64 {
	var n float64
	for _, m := range hubResyncsRE.FindAllStringSubmatch(page, -1) {
		v, err := strconv.ParseFloat(m[1], 64)
		if err == nil {
			n += v
		}
	}
	return n
}
