package verify

import (
	"context"
	"strconv"
	"strings"
	"testing"

	"github.com/jackc/pgx/v5"

	"github.com/stbridge/stb/pkg/db"
	"github.com/stbridge/stb/pkg/db/dbtest"
	"github.com/stbridge/stb/pkg/sim"
)

// TestVerifyAcceptsEarlierRunsAndTombstones: a database simulated into
// twice, the second run with --first-incarnation 100 and fewer rounds,
// holds what the first left: its policy events (a stream: nothing removes
// them) and the versions of the types the second run did not send. Verify
// takes them for what they are, as it does a tombstone of a type the hub
// did not send (stb hub delete), and still reports a version or an event
// the run cannot explain. The regression: every event of the earlier run
// was an unexpected event, and every such version an unexpected version.
func TestVerifyAcceptsEarlierRunsAndTombstones(t *testing.T) {
	pool, _ := dbtest.New(t)
	ctx := context.Background()
	earlier := simulate(t, sim.Config{Hubs: 3, Clusters: 4, Generations: 6, Seed: 7, RestartProbability: -1})
	later := simulate(t, sim.Config{Hubs: 3, Clusters: 4, Generations: 1, Seed: 8, RestartProbability: -1, FirstIncarnation: 100})
	if later.FirstIncarnation != 100 {
		t.Fatalf("Expected.FirstIncarnation = %d, want 100", later.FirstIncarnation)
	}
	load(t, pool, earlier)
	// What the bridge does with the second run: snapshots replace the
	// first run's, versions of the types sent move forward, events stay.
	sent := map[string]bool{}
	for _, st := range later.Hubs {
		for typ := range st.Versions {
			sent[typ] = true
		}
	}
	var sentTypes []string
	for typ := range sent {
		sentTypes = append(sentTypes, typ)
	}
	for _, q := range []string{`DELETE FROM stb.hubs`, `DELETE FROM stb.hub_heartbeats`, `DELETE FROM stb.managed_clusters`,
		`DELETE FROM stb.compliance`} {
		if _, err := pool.Exec(ctx, q); err != nil {
			t.Fatal(err)
		}
	}
	if _, err := pool.Exec(ctx, `DELETE FROM stb.bundle_versions WHERE bundle_type = ANY($1)`, sentTypes); err != nil {
		t.Fatal(err)
	}
	load(t, pool, later)
	// A tombstone of a type hub-001 did not send in the second run, at
	// an incarnation no earlier run had.
	hub := "hub-001"
	var unsent string
	for _, typ := range []string{sim.TypeComplianceDelta, sim.TypePolicyEvents, sim.TypeHeartbeat} {
		if _, ok := later.Hubs[hub].Versions[typ]; !ok {
			if _, ok := later.Hubs[hub].VersionsAtMost[typ]; !ok {
				unsent = typ
				break
			}
		}
	}
	if unsent == "" {
		t.Fatal("hub-001 sent every type; pick another seed")
	}
	if _, err := pool.Exec(ctx, `INSERT INTO stb.bundle_versions (hub, bundle_type, incarnation, generation) VALUES ($1, $2, 200, $3::numeric)
		ON CONFLICT (hub, bundle_type) DO UPDATE SET incarnation = 200, generation = excluded.generation`,
		hub, unsent, strconv.FormatUint(db.TombstoneGeneration, 10)); err != nil {
		t.Fatal(err)
	}
	var left, events int
	if err := pool.QueryRow(ctx, `SELECT (SELECT count(*) FROM stb.bundle_versions WHERE incarnation < 100),
		(SELECT count(*) FROM stb.policy_events)`).Scan(&left, &events); err != nil {
		t.Fatal(err)
	}
	if left == 0 || events <= later.PolicyEvents() {
		t.Fatalf("the first run left %d versions and %d of %d events: nothing to check", left, events-later.PolicyEvents(), events)
	}

	rep, err := Verify(ctx, pool, later)
	if err != nil {
		t.Fatal(err)
	}
	if !rep.OK() {
		t.Fatalf("Verify after two runs:\n%s", rep.Summary())
	}
	if rep.Tombstones != 1 || rep.Earlier != left+events-later.PolicyEvents() {
		t.Errorf("report: %d tombstones, %d rows of earlier runs; want 1 and %d versions + %d events",
			rep.Tombstones, rep.Earlier, left, events-later.PolicyEvents())
	}
	if s := rep.Summary(); !strings.Contains(s, "1 tombstones of deleted hubs") {
		t.Errorf("summary does not count the tombstone: %s", s)
	}

	// What no run explains is still reported: a live version of a type
	// not sent, newer than the run's start, and an event of this run's
	// name that was never sent.
	inTx(t, pool, func(tx pgx.Tx) {
		if _, err := tx.Exec(ctx, `UPDATE stb.bundle_versions SET generation = 5 WHERE hub = $1 AND bundle_type = $2`, hub, unsent); err != nil {
			t.Fatal(err)
		}
		if _, err := tx.Exec(ctx, `INSERT INTO stb.policy_events (hub, policy_id, cluster_name, event_name) VALUES ($1, 'p', 'c', $2)`,
			hub, sim.EventName("policy-001", 100, 999)); err != nil {
			t.Fatal(err)
		}
		rep, err := Verify(ctx, tx, later)
		if err != nil {
			t.Fatal(err)
		}
		if rep.Counts[Category{UnexpectedVersion, unsent}] != 1 || rep.Counts[Category{Kind: UnexpectedEvent}] != 1 || rep.Differences != 2 {
			t.Fatalf("a version and an event no run explains, want 2 differences:\n%s", rep.Summary())
		}
	})
}
