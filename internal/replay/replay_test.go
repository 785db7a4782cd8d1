package replay

import (
	"context"
	"errors"
	"fmt"
	"slices"
	"strings"
	"testing"
	"time"

	"github.com/jackc/pgx/v5/pgxpool"
	"go.uber.org/zap"

	"github.com/stbridge/stb/pkg/broker"
	"github.com/stbridge/stb/pkg/bundle"
	"github.com/stbridge/stb/pkg/db"
	"github.com/stbridge/stb/pkg/db/dbtest"
	"github.com/stbridge/stb/pkg/deadletter"
	"github.com/stbridge/stb/pkg/transport"
)

// The tests store dead letters as the bridge does (deadletter.Writer),
// replay them against a real PostgreSQL, and check what each became, what
// the database then holds and how the letters are marked. Kafka is a
// real protocol server (kfake, over TCP) where a test fetches from it.

func ver(inc, gen uint64) bundle.Version { return bundle.Version{Incarnation: inc, Generation: gen} }

// letter is a read-side dead letter of env as the reader stores one: its
// headers, key and whole data, from topic status, partition 0, at offset.
func letter(t *testing.T, env transport.Envelope, offset int64, reason deadletter.Reason) deadletter.Letter {
	t.Helper()
	if env.Topic == "" {
		env.Topic = "status"
	}
	msg, err := transport.Encode(env, transport.DefaultTypePrefix)
	if err != nil {
		t.Fatal(err)
	}
	h := map[string]string{}
	for _, x := range msg.Headers {
		h[x.Key] = string(x.Value)
	}
	return deadletter.Letter{Hub: env.Hub, Type: env.Type, Version: env.Version.String(),
		Origin: bundle.Origin{Topic: env.Topic, Partition: 0, Offset: offset}, Reason: reason,
		Err: errors.New("as rejected"), Headers: h, Data: msg.Value, Key: msg.Key}
}

func store(t *testing.T, pool *pgxpool.Pool, letters ...deadletter.Letter) {
	t.Helper()
	if _, err := deadletter.NewWriter(pool).Write(context.Background(), letters...); err != nil {
		t.Fatal(err)
	}
}

// run replays with cfg and returns the results by letter id.
func run(t *testing.T, pool *pgxpool.Pool, cfg Config) map[int64]Result {
	t.Helper()
	out := map[int64]Result{}
	_, err := Run(context.Background(), pool, cfg, zap.NewNop(), func(r Result) { out[r.Row.ID] = r })
	if err != nil {
		t.Fatal(err)
	}
	return out
}

// byHub returns the letters of hub, oldest first.
func byHub(t *testing.T, pool *pgxpool.Pool, hub string) []deadletter.Row {
	t.Helper()
	rows, err := deadletter.List(context.Background(), pool, deadletter.Filter{Hub: hub})
	if err != nil {
		t.Fatal(err)
	}
	return rows
}

func held(t *testing.T, pool *pgxpool.Pool, hub, typ string) (bundle.Version, bool) {
	t.Helper()
	v, ok, err := db.LoadVersion(context.Background(), pool, hub, typ)
	if err != nil {
		t.Fatal(err)
	}
	return v.Version, ok
}

// TestReplayOutcomes: a letter that applies is written and marked
// applied; one older than what the database holds is stale and writes
// nothing; one whose data is still bad fails again with its new reason;
// one whose event is neither in Kafka nor stored whole is skipped and left
// as it was. A second run replays only what neither applied nor was stale.
func TestReplayOutcomes(t *testing.T) {
	pool, _ := dbtest.New(t)
	store(t, pool,
		letter(t, transport.Envelope{Hub: "hub-a", Type: "heartbeat", Version: ver(1, 5), Data: []byte(`{}`)}, 10, deadletter.TooLarge),
		letter(t, transport.Envelope{Hub: "hub-a", Type: "heartbeat", Version: ver(1, 3), Data: []byte(`{}`)}, 11, deadletter.TooLarge),
		letter(t, transport.Envelope{Hub: "hub-b", Type: "managedclusters", Version: ver(1, 1), Data: []byte(`{"objects":7}`)}, 12, deadletter.TooLarge),
	)
	// A letter written after decoding holds the payload, not the event:
	// without Kafka there is nothing to replay it from.
	store(t, pool, deadletter.Bundles([]*bundle.Bundle{{Hub: "hub-c", Type: "heartbeat", Version: ver(1, 1),
		Origin: bundle.Origin{Topic: "status", Offset: 13}, Payload: map[string]any{}}}, deadletter.DataException, errors.New("boom"))...)

	res := run(t, pool, DefaultConfig())
	if len(res) != 4 {
		t.Fatalf("%d results, want 4: %v", len(res), res)
	}
	want := map[string]deadletter.ReplayOutcome{"hub-a 1.5": deadletter.ReplayApplied, "hub-a 1.3": deadletter.ReplayStale,
		"hub-b 1.1": deadletter.ReplayFailed, "hub-c 1.1": deadletter.ReplaySkipped}
	for _, r := range res {
		k := r.Row.Hub + " " + r.Row.Version
		if r.Outcome != want[k] {
			t.Errorf("%s: %s (%s: %v), want %s", k, r.Outcome, r.Reason, r.Err, want[k])
		}
		if wantFrom := map[bool]deadletter.ReplaySource{true: "", false: deadletter.ReplayFromStored}[k == "hub-c 1.1"]; r.From != wantFrom {
			t.Errorf("%s: from %q, want %q", k, r.From, wantFrom)
		}
		if !strings.Contains(r.Line("replay"), string(r.Outcome)) {
			t.Errorf("%s: line %q does not say %s", k, r.Line("replay"), r.Outcome)
		}
	}
	if v, ok := held(t, pool, "hub-a", "heartbeat"); !ok || v != ver(1, 5) {
		t.Fatalf("hub-a heartbeat stored at %v (%v), want 1.5", v, ok)
	}
	if _, ok := held(t, pool, "hub-b", "managedclusters"); ok {
		t.Fatal("a bad payload was written")
	}
	for _, r := range byHub(t, pool, "hub-b") {
		if r.ReplayOutcome != deadletter.ReplayFailed || r.Reason != deadletter.BadPayload {
			t.Errorf("hub-b letter marked %q with reason %s, want failed, bad_payload", r.ReplayOutcome, r.Reason)
		}
	}
	for _, r := range byHub(t, pool, "hub-c") {
		if r.ReplayOutcome != "" || r.Reason != deadletter.DataException {
			t.Errorf("skipped letter marked %q, reason %s; want it left as it was", r.ReplayOutcome, r.Reason)
		}
	}

	again := run(t, pool, DefaultConfig())
	for _, r := range again {
		if r.Row.Hub == "hub-a" {
			t.Errorf("letter %d of hub-a (%s) replayed again", r.Row.ID, r.Row.ReplayOutcome)
		}
	}
	if len(again) != 2 {
		t.Errorf("second run replayed %d letters, want the failed and the skipped one", len(again))
	}
}

// TestReplayBounds: the filter bounds a replay (its hub, its limit, oldest
// first), and a dry run writes and marks nothing.
func TestReplayBounds(t *testing.T) {
	pool, _ := dbtest.New(t)
	for i, hub := range []string{"hub-1", "hub-2", "hub-3", "hub-1"} {
		store(t, pool, letter(t, transport.Envelope{Hub: hub, Type: "heartbeat", Version: ver(1, uint64(i+1)), Data: []byte(`{}`)}, int64(i), deadletter.TooLarge))
	}

	cfg := DefaultConfig()
	cfg.DryRun = true
	res := run(t, pool, cfg)
	if len(res) != 4 {
		t.Fatalf("dry run: %d results, want 4", len(res))
	}
	for _, r := range res {
		if r.Outcome != deadletter.ReplayApplied {
			t.Errorf("dry run of %s %s: %s, want applied", r.Row.Hub, r.Row.Version, r.Outcome)
		}
	}
	for _, hub := range []string{"hub-1", "hub-2", "hub-3"} {
		if _, ok := held(t, pool, hub, "heartbeat"); ok {
			t.Fatalf("dry run wrote %s", hub)
		}
		for _, r := range byHub(t, pool, hub) {
			if r.ReplayOutcome != "" {
				t.Fatalf("dry run marked a letter of %s %s", hub, r.ReplayOutcome)
			}
		}
	}

	cfg = DefaultConfig()
	cfg.Filter = deadletter.Filter{Limit: 2}
	res = run(t, pool, cfg)
	if len(res) != 2 {
		t.Fatalf("limit 2: %d results", len(res))
	}
	for _, r := range res {
		if r.Row.Version != "1.1" && r.Row.Version != "1.2" {
			t.Errorf("limit 2 replayed %s %s, want the two oldest", r.Row.Hub, r.Row.Version)
		}
	}
	if _, ok := held(t, pool, "hub-3", "heartbeat"); ok {
		t.Fatal("a letter past the limit was replayed")
	}

	cfg = DefaultConfig()
	cfg.Filter = deadletter.Filter{Hub: "hub-1"}
	res = run(t, pool, cfg)
	if len(res) != 1 {
		t.Fatalf("hub-1 after the limited run: %d results, want its one letter not yet applied", len(res))
	}
	for _, r := range res {
		if r.Row.Hub != "hub-1" || r.Row.Version != "1.4" || r.Outcome != deadletter.ReplayApplied {
			t.Errorf("hub filter replayed %s %s: %s", r.Row.Hub, r.Row.Version, r.Outcome)
		}
	}
	if _, ok := held(t, pool, "hub-3", "heartbeat"); ok {
		t.Fatal("the hub filter replayed another hub")
	}
}

// TestReplayDependency: a letter is written only if the database holds
// what it depends on, by conflation's rule: a compliance bundle waits for
// its clusterspolicies at the version it names (dependency_timeout while
// it is older or missing), a delta applies on exactly the compliance
// version it names (stale_base once a newer one is held).
func TestReplayDependency(t *testing.T) {
	pool, _ := dbtest.New(t)
	ctx := context.Background()
	hold := func(hub, typ string, v bundle.Version) {
		t.Helper()
		if _, err := pool.Exec(ctx, `INSERT INTO stb.bundle_versions (hub, bundle_type, incarnation, generation) VALUES ($1, $2, $3, $4)
			ON CONFLICT (hub, bundle_type) DO UPDATE SET incarnation = excluded.incarnation, generation = excluded.generation`,
			hub, typ, v.Incarnation, v.Generation); err != nil {
			t.Fatal(err)
		}
	}
	dep := ver(1, 4)
	compliance := []byte(`{"objects":[]}`)
	delta := []byte(`{"objects":[]}`)
	store(t, pool,
		// hub-x holds no clusterspolicies at all.
		letter(t, transport.Envelope{Hub: "hub-x", Type: "compliance", Version: ver(1, 5), Dependency: &dep, Data: compliance}, 1, deadletter.DependencyTimeout),
		// hub-y holds clusterspolicies 1.3, older than the 1.4 needed.
		letter(t, transport.Envelope{Hub: "hub-y", Type: "compliance", Version: ver(1, 5), Dependency: &dep, Data: compliance}, 2, deadletter.DependencyTimeout),
		// hub-z holds compliance 1.6, newer than the delta's base 1.4.
		letter(t, transport.Envelope{Hub: "hub-z", Type: "compliancedelta", Version: ver(1, 7), Dependency: &dep, Data: delta}, 3, deadletter.DependencyTimeout),
	)
	hold("hub-y", "managedclusters", ver(1, 1))
	hold("hub-y", "clusterspolicies", ver(1, 3))
	hold("hub-z", "compliance", ver(1, 6))

	want := map[string]deadletter.Reason{"hub-x": deadletter.DependencyTimeout, "hub-y": deadletter.DependencyTimeout, "hub-z": deadletter.StaleBase}
	for _, r := range run(t, pool, DefaultConfig()) {
		if r.Outcome != deadletter.ReplayFailed || r.Reason != want[r.Row.Hub] {
			t.Errorf("%s %s: %s (%s: %v), want failed with %s", r.Row.Hub, r.Row.Type, r.Outcome, r.Reason, r.Err, want[r.Row.Hub])
		}
	}

	// Once hub-y's clusterspolicies reach 1.4, its compliance applies.
	hold("hub-y", "clusterspolicies", ver(1, 4))
	cfg := DefaultConfig()
	cfg.Filter.Hub = "hub-y"
	for _, r := range run(t, pool, cfg) {
		if r.Outcome != deadletter.ReplayApplied {
			t.Errorf("hub-y compliance with its dependency held: %s (%s: %v), want applied", r.Outcome, r.Reason, r.Err)
		}
	}
	if v, ok := held(t, pool, "hub-y", "compliance"); !ok || v != ver(1, 5) {
		t.Fatalf("hub-y compliance stored at %v (%v), want 1.5", v, ok)
	}
}

// TestReplayFromKafka: the event comes from Kafka at the letter's origin
// while the topic holds it, even when the stored copy is not the event
// (a letter written after decoding); once the topic no longer holds the
// offset and no whole copy is stored, the event is gone and the letter is
// skipped.
func TestReplayFromKafka(t *testing.T) {
	brk, err := broker.Start(broker.Config{Topics: []string{"status"}, Partitions: 1}, zap.NewNop())
	if err != nil {
		t.Fatal(err)
	}
	t.Cleanup(brk.Close)
	pool, _ := dbtest.New(t)
	ctx, cancel := context.WithTimeout(context.Background(), time.Minute)
	defer cancel()

	pub, err := transport.NewPublisher(transport.PublisherConfig{Brokers: brk.Addr()}, zap.NewNop())
	if err != nil {
		t.Fatal(err)
	}
	msg, err := transport.Encode(transport.Envelope{Topic: "status", Hub: "hub-k", Type: "heartbeat", Version: ver(2, 1), Data: []byte(`{}`)}, transport.DefaultTypePrefix)
	if err != nil {
		t.Fatal(err)
	}
	if err := pub.PublishMessage(ctx, msg); err != nil {
		t.Fatal(err)
	}
	if err := pub.Flush(ctx); err != nil {
		t.Fatal(err)
	}
	pub.Close()

	// Write-side letters: headers and payload, not the event. The first
	// points at the message just produced (offset 0), the second at an
	// offset the partition does not hold.
	written := func(hub string, offset int64) deadletter.Letter {
		return deadletter.Bundles([]*bundle.Bundle{{Hub: hub, Type: "heartbeat", Version: ver(2, 1),
			Origin: bundle.Origin{Topic: "status", Partition: 0, Offset: offset}, Payload: map[string]any{}}}, deadletter.DataException, errors.New("boom"))[0]
	}
	store(t, pool, written("hub-k", 0), written("hub-gone", 5))

	cfg := DefaultConfig()
	cfg.Reader.Brokers = brk.Addr()
	cfg.FetchTimeout = 20 * time.Second
	res := run(t, pool, cfg)
	if len(res) != 2 {
		t.Fatalf("%d results, want 2", len(res))
	}
	for _, r := range res {
		switch r.Row.Hub {
		case "hub-k":
			if r.Outcome != deadletter.ReplayApplied || r.From != deadletter.ReplayFromKafka {
				t.Errorf("hub-k: %s from %q (%s: %v), want applied from kafka", r.Outcome, r.From, r.Reason, r.Err)
			}
		case "hub-gone":
			if r.Outcome != deadletter.ReplaySkipped || r.Err == nil {
				t.Errorf("hub-gone: %s (%v), want skipped with the reason", r.Outcome, r.Err)
			}
		}
	}
	if v, ok := held(t, pool, "hub-k", "heartbeat"); !ok || v != ver(2, 1) {
		t.Fatalf("hub-k heartbeat stored at %v (%v), want 2.1", v, ok)
	}
}

// TestReplayPages: a replay of more letters than one page goes through
// them all, a page at a time, loading each page only when it gets there
// (a letter stored during the run, after the first page, is replayed too:
// the run never held every letter at once); a limit caps the run and says
// how many are left, and a run after the last id goes on from there. The
// regression: Run loaded every letter selected with one unbounded List.
func TestReplayPages(t *testing.T) {
	pool, _ := dbtest.New(t)
	heartbeat := func(i int) deadletter.Letter {
		return letter(t, transport.Envelope{Hub: fmt.Sprintf("hub-%02d", i), Type: "heartbeat", Version: ver(1, 1), Data: []byte(`{}`)}, int64(i), deadletter.TooLarge)
	}
	for i := range 7 {
		store(t, pool, heartbeat(i))
	}
	ctx := context.Background()

	// Capped: a dry run (which marks nothing) of at most 5, in pages of 2,
	// then the rest after the last id it reached.
	cfg := DefaultConfig()
	cfg.DryRun, cfg.PageSize, cfg.Filter.Limit = true, 2, 5
	var seen []string
	prog, err := Run(ctx, pool, cfg, zap.NewNop(), func(r Result) { seen = append(seen, r.Row.Hub) })
	if err != nil {
		t.Fatal(err)
	}
	if want := []string{"hub-00", "hub-01", "hub-02", "hub-03", "hub-04"}; !slices.Equal(seen, want) {
		t.Fatalf("capped run replayed %v, want %v", seen, want)
	}
	if prog.Replayed != 5 || prog.Pages != 3 || prog.Remaining != 2 {
		t.Fatalf("capped run: %+v, want 5 replayed in 3 pages, 2 remaining", prog)
	}
	cfg.Filter.After, seen = prog.Last, nil
	if prog, err = Run(ctx, pool, cfg, zap.NewNop(), func(r Result) { seen = append(seen, r.Row.Hub) }); err != nil {
		t.Fatal(err)
	}
	if want := []string{"hub-05", "hub-06"}; !slices.Equal(seen, want) || prog.Remaining != 0 {
		t.Fatalf("run after %d replayed %v (%+v), want %v and none remaining", cfg.Filter.After, seen, prog, want)
	}

	// Uncapped, in pages of 3: every letter, and one stored while the
	// first page is replayed.
	cfg = DefaultConfig()
	cfg.PageSize = 3
	seen = nil
	prog, err = Run(ctx, pool, cfg, zap.NewNop(), func(r Result) {
		if r.Outcome != deadletter.ReplayApplied {
			t.Errorf("%s: %s (%v), want applied", r.Row.Hub, r.Outcome, r.Err)
		}
		if len(seen) == 0 {
			store(t, pool, heartbeat(7))
		}
		seen = append(seen, r.Row.Hub)
	})
	if err != nil {
		t.Fatal(err)
	}
	if len(seen) != 8 || seen[7] != "hub-07" {
		t.Fatalf("replayed %v, want the 7 letters and the one stored during the run", seen)
	}
	if prog.Pages != 3 || prog.Replayed != 8 || prog.Remaining != 0 {
		t.Fatalf("%+v, want 8 replayed in 3 pages of at most 3", prog)
	}
	for i := range 8 {
		if _, ok := held(t, pool, fmt.Sprintf("hub-%02d", i), "heartbeat"); !ok {
			t.Errorf("hub-%02d not written", i)
		}
	}
}
