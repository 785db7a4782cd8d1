package bench

import (
	"context"
	"crypto/rand"
	"encoding/hex"
	"errors"
	"io"
	"strings"
	"testing"
	"time"

	"go.uber.org/zap"

	"github.com/stbridge/stb/dbsyncers"
	"github.com/stbridge/stb/pkg/db/dbtest"
	"github.com/stbridge/stb/pkg/sim"
	"github.com/stbridge/stb/pkg/verify"
)

// TestCatchUpEstimate: a variant that finished took its time; one stopped
// early would have taken its first write plus the backlog at the rate it
// processed after it.
func TestCatchUpEstimate(t *testing.T) {
	for name, tc := range map[string]struct {
		r        catchUpResult
		total    int64
		wantTime time.Duration
		wantRate float64
	}{
		"complete": {catchUpResult{Elapsed: 12 * time.Second, FirstWrite: 2 * time.Second, Complete: true}, 1000,
			12 * time.Second, 100},
		"stopped": {catchUpResult{Elapsed: 12 * time.Second, FirstWrite: 2 * time.Second, Counters: counters{processed: 500}}, 1000,
			22 * time.Second, 50},
		"stopped before processing": {catchUpResult{Elapsed: 12 * time.Second, FirstWrite: 2 * time.Second}, 1000,
			12 * time.Second, 0},
	} {
		t.Run(name, func(t *testing.T) {
			d, rate := tc.r.estimate(tc.total)
			if d != tc.wantTime || rate != tc.wantRate {
				t.Errorf("%v at %v/s, want %v at %v/s", d, rate, tc.wantTime, tc.wantRate)
			}
		})
	}
}

// TestLiveRunFigures: the rate a live producer kept leaves its start-up
// out, and the RSS window is counted from its own start.
func TestLiveRunFigures(t *testing.T) {
	l := &liveRun{rate: 1000, samples: []liveSample{
		{At: 1 * time.Second, Sent: 100, RSS: 10},
		{At: 2 * time.Second, Sent: 1100, RSS: 20},
		{At: 3 * time.Second, Sent: 2100, RSS: 30},
		{At: 4 * time.Second, Sent: 2600, RSS: 40},
	}}
	for name, tc := range map[string]struct {
		at       time.Duration
		rate     float64
		describe string
	}{
		"kept up":           {3 * time.Second, 1000, ""},
		"fell behind":       {4 * time.Second, 2500.0 / 3, "the producer reached only 833 of 1000 messages/s"},
		"one sample":        {1 * time.Second, 0, "the producer reached only 0 of 1000 messages/s"},
		"before any sample": {0, 0, "the producer reached only 0 of 1000 messages/s"},
	} {
		t.Run(name, func(t *testing.T) {
			if got := l.sentRate(tc.at); got != tc.rate {
				t.Errorf("sent rate %v, want %v", got, tc.rate)
			}
			if got := l.describe(tc.at); got != tc.describe {
				t.Errorf("describe %q, want %q", got, tc.describe)
			}
		})
	}
	got := l.rssBetween(2*time.Second, 4*time.Second)
	if len(got) != 2 || got[0] != (rssSample{At: 0, RSS: 20}) || got[1] != (rssSample{At: time.Second, RSS: 30}) {
		t.Errorf("rss between 2s and 4s: %+v", got)
	}
}

// testEnv is a bench environment on an embedded broker and the test
// PostgreSQL server: its variants' databases are dropped at the end.
func testEnv(t *testing.T, brokers string) *benchEnv {
	t.Helper()
	var id [4]byte
	_, _ = rand.Read(id[:])
	c := DefaultConfig()
	c.DatabaseURL, c.PoolSize, c.Partitions, c.Timeout = dbtest.BaseURL(), 2, 2, time.Minute
	e := &benchEnv{cfg: c, brokers: brokers, logger: zap.NewNop(), reg: dbsyncers.Default(),
		out: newOutputTo(io.Discard, false), runID: hex.EncodeToString(id[:]), rep: 1, produceCmd: testProduceCmd(t)}
	t.Cleanup(func() { e.dropDatabases(context.Background()) })
	return e
}

// TestCatchUpOnKafkaAndPostgres: the pieces of the catch-up scenario on a
// real broker and database: a backlog from a producer process, the raw and
// decoding read ceilings over it, the final state the decoding one keeps
// written by the pgx ceiling (once: a second time every bundle is fenced),
// and a bridge variant waited for until its database holds the expected
// state; a variant stopped at its limit, and one whose check never passes,
// which fails at the timeout saying so.
func TestCatchUpOnKafkaAndPostgres(t *testing.T) {
	const topic = "backlog"
	e := testEnv(t, testBroker(t, 2, topic))
	ctx := t.Context()
	exp, _, err := e.produce(ctx, "backlog", sim.Config{Hubs: 4, Clusters: 3, Generations: 5, Topic: topic, Seed: 11})
	if err != nil {
		t.Fatal(err)
	}
	total := int64(exp.Messages)

	raw, err := readRaw(ctx, e.brokers, []string{topic}, e.group("raw"), total, nil)
	if err != nil || raw.Messages != total || raw.Bytes == 0 {
		t.Fatalf("raw read: %+v, %v; want %d messages", raw, err, total)
	}
	st := newFinalState(e.reg)
	rd, err := readAndDecode(ctx, e.brokers, []string{topic}, e.group("read"), total, e.decoder(0), st, nil)
	if err != nil || rd.Messages != total || rd.Rejected != 0 {
		t.Fatalf("read+decode: %+v, %v; want %d messages, none rejected", rd, err, total)
	}
	if len(st.order) != 4 || st.bundles() == 0 || st.bundles() >= int(total) {
		t.Fatalf("final state of %d hubs, %d bundles from %d messages", len(st.order), st.bundles(), total)
	}

	pool, _ := dbtest.New(t)
	w := &pgxWriter{pool: pool, reg: e.reg, workers: 2}
	pr, err := w.writeState(ctx, st)
	if err != nil || pr.Bundles != int64(st.bundles()) || pr.Transactions != 4 {
		t.Fatalf("pgx ceiling: %+v, %v; want %d bundles in 4 transactions", pr, err, st.bundles())
	}
	if rep, err := verify.Verify(ctx, pool, exp); err != nil || !rep.OK() {
		t.Fatalf("the pgx ceiling's database: %v, %v", err, rep.Summary())
	}
	if rows, err := countRows(ctx, pool); err != nil || rows == 0 {
		t.Errorf("rows %d, %v", rows, err)
	}
	// Small bundles go as one pipelined batch, which a refused fence
	// aborts (ErrStale); others are written one by one and reported
	// fenced.
	if _, err := w.writeState(ctx, st); err == nil || !errors.Is(err, dbsyncers.ErrStale) && !strings.Contains(err.Error(), "fenced") {
		t.Errorf("the state written again: %v, want it refused by the version fence", err)
	}

	// A bridge variant, waited for until it holds the expected state.
	bb, err := e.startBridge(ctx, variantOpts{label: "test/stb", conflation: true, topics: []string{topic}, db: "stb_test_bench_" + e.runID + "_stb"})
	if err != nil {
		t.Fatal(err)
	}
	if err := bb.waitAssigned(ctx, 2); err != nil {
		t.Fatal(err)
	}
	r, err := e.waitCaughtUp(ctx, bb, total, 0, verifyCheck(exp))
	if err != nil || !r.Complete || r.Finished < total || r.FirstWrite <= 0 || r.Elapsed < r.FirstWrite || r.ReadAll <= 0 {
		t.Fatalf("caught up: %+v, %v", r, err)
	}
	if r.Counters.written == 0 || r.Counters.processed < float64(total) {
		t.Errorf("counters %+v, want every message processed", r.Counters)
	}
	if err := bb.stop(); err != nil {
		t.Fatal(err)
	}
	if peak := bb.peak(); peak.RSS < 1<<20 || peak.Heap <= 0 {
		t.Errorf("peak %+v", peak)
	}
	if err := bb.failed(); err != nil {
		t.Errorf("a stopped bridge failed: %v", err)
	}

	never := func(context.Context, *benchBridge) (bool, string, error) { return false, "never", nil }
	bb, err = e.startBridge(ctx, variantOpts{label: "test/limit", topics: []string{topic}, db: "stb_test_bench_" + e.runID + "_limit"})
	if err != nil {
		t.Fatal(err)
	}
	r, err = e.waitCaughtUp(ctx, bb, total, time.Millisecond, never)
	_ = bb.stop()
	if err != nil || r.Complete || r.Elapsed <= 0 {
		t.Errorf("at the limit: %+v, %v; want stopped, not complete", r, err)
	}

	e.cfg.Timeout = 3 * time.Second
	bb, err = e.startBridge(ctx, variantOpts{label: "test/timeout", conflation: true, topics: []string{topic}, db: "stb_test_bench_" + e.runID + "_timeout"})
	if err != nil {
		t.Fatal(err)
	}
	_, err = e.waitCaughtUp(ctx, bb, total, 0, never)
	_ = bb.stop()
	// Every message done in 3s, the check never passing: "does not hold
	// the final state after 3s: never"; on a slow machine "n of m
	// messages done after 3s".
	if err == nil || !strings.Contains(err.Error(), "after 3s") {
		t.Errorf("a check that never passes: %v, want a timeout", err)
	}
	if dbs := len(e.dbs); dbs != 3 {
		t.Errorf("%d databases to drop, want the 3 variants'", dbs)
	}
}
