package dispatcher

import (
	"context"
	"errors"
	"fmt"
	"sync/atomic"
	"testing"

	"github.com/jackc/pgx/v5/pgxpool"
	"github.com/prometheus/client_golang/prometheus/testutil"

	"github.com/stbridge/stb/conflation"
	"github.com/stbridge/stb/dbsyncers"
	"github.com/stbridge/stb/pkg/bundle"
	"github.com/stbridge/stb/pkg/db/dbtest"
	"github.com/stbridge/stb/pkg/deadletter"
)

// writesRow is a bundle type whose write stores a heartbeat row of its hub.
func writesRow(name string) dbsyncers.Syncer {
	return dbsyncers.Syncer{
		TypeInfo: bundle.TypeInfo{Name: name, Kind: bundle.Complete},
		Decode:   func([]byte) (any, error) { return nil, nil },
		Plan: staged(func(ctx context.Context, db dbsyncers.DB, bs []*bundle.Bundle) error {
			_, err := db.Exec(ctx, `INSERT INTO stb.hub_heartbeats (hub, last_timestamp) VALUES ($1, now())
				ON CONFLICT (hub) DO UPDATE SET last_timestamp = now()`, bs[0].Hub)
			return err
		}),
	}
}

// failing is a bundle type whose write returns err the first failures
// times, then stores a row.
func failing(name string, failures int32, err error) (dbsyncers.Syncer, *atomic.Int32) {
	calls := &atomic.Int32{}
	s := writesRow(name)
	ok := s.Plan
	s.Plan = func(bs []*bundle.Bundle) (dbsyncers.Write, error) {
		w, _ := ok(bs)
		stage := w.Stage
		w.Stage = func(ctx context.Context, db dbsyncers.DB) error {
			if calls.Add(1) <= failures {
				return err
			}
			return stage(ctx, db)
		}
		return w, nil
	}
	return s, calls
}

// runUntilReleased inserts one bundle per hub of each (hub, type), all
// ready before one worker starts (so that the small ones share its first
// transaction), and runs the dispatcher until every bundle is released.
func runUntilReleased(t *testing.T, pool *pgxpool.Pool, cfg Config, bundles map[string]string, syncers ...dbsyncers.Syncer) *Dispatcher {
	t.Helper()
	reg, err := dbsyncers.NewRegistry(syncers...)
	if err != nil {
		t.Fatal(err)
	}
	var released doneCount
	var bs []*bundle.Bundle
	for hub, typ := range bundles {
		b := &bundle.Bundle{Hub: hub, Type: typ, Version: bundle.Version{Incarnation: 1, Generation: 1}, Size: 10,
			Origin: bundle.Origin{Topic: "status", Offset: int64(len(bs))}}
		b.Track(&released)
		bs = append(bs, b)
	}
	return dispatchWith(t, pool, reg, conflation.Config{}, cfg, &released, bs)
}

// TestBatchFailures: a batch that fails transiently (a serialization
// failure here; a timeout against a hung database the same) goes back to
// its units' backoff whole, each job having failed once, where it used to
// be split and each job written again alone with a fresh --job-timeout
// (up to ~33 × 60 s per worker against a database that does not answer);
// a batch that fails in a way that may be one job's fault is split, so
// that only that job is dead-lettered.
func TestBatchFailures(t *testing.T) {
	const others = 10
	bundles := func(special string) map[string]string {
		m := map[string]string{"hub-special": special}
		for i := range others {
			m[fmt.Sprintf("hub-%02d", i)] = "plain"
		}
		return m
	}
	cfg := DefaultConfig(1)
	cfg.BatchWait = 0

	t.Run("transient: not split", func(t *testing.T) {
		pool, _ := dbtest.New(t)
		flaky, calls := failing("flaky", 1, fmt.Errorf("stage: %w", context.DeadlineExceeded))
		d := runUntilReleased(t, pool, cfg, bundles("flaky"), flaky, writesRow("plain"))
		if n := testutil.ToFloat64(d.metrics.batchSplits); n != 0 {
			t.Errorf("%v batch splits after a transient failure, want 0", n)
		}
		if n := testutil.ToFloat64(d.metrics.jobs.WithLabelValues("plain", "transient")); n != others {
			t.Errorf("%v of the batch's other bundles failed transiently, want all %d: the batch goes back whole", n, others)
		}
		if n := calls.Load(); n != 2 {
			t.Errorf("the flaky write ran %d times, want 2 (the batch, then the retry)", n)
		}
		var rows int
		if err := pool.QueryRow(context.Background(), `SELECT count(*) FROM stb.hub_heartbeats`).Scan(&rows); err != nil || rows != others+1 {
			t.Errorf("%d rows (%v), want %d", rows, err, others+1)
		}
	})
	t.Run("permanent: split", func(t *testing.T) {
		pool, _ := dbtest.New(t)
		d := runUntilReleased(t, pool, cfg, bundles("poison"), poison(), writesRow("plain"))
		if n := testutil.ToFloat64(d.metrics.batchSplits); n < 1 {
			t.Errorf("%v batch splits after a data exception, want at least 1", n)
		}
		if n := testutil.ToFloat64(d.metrics.jobs.WithLabelValues("plain", "applied")); n != others {
			t.Errorf("%v plain bundles applied, want %d", n, others)
		}
		var reason, hub string
		if err := pool.QueryRow(context.Background(), `SELECT reason, hub FROM stb.dead_letters`).Scan(&reason, &hub); err != nil || hub != "hub-special" || reason != "data_exception" {
			t.Errorf("dead letter %q of %q (%v), want data_exception of hub-special alone", reason, hub, err)
		}
	})
}

// TestUnclassifiedErrorIsDeadLetteredAfterItsAttempts: an error the
// dispatcher cannot classify (pgx's encode errors are plain errors) was
// retried for ever, pinning its partition's committed offset; it is tried
// MaxUnclassifiedAttempts times, then dead-lettered permanent_error.
func TestUnclassifiedErrorIsDeadLetteredAfterItsAttempts(t *testing.T) {
	pool, _ := dbtest.New(t)
	buggy, calls := failing("buggy", 1000, errors.New("failed to encode args[1]: unable to encode 1.5 into binary format for int8"))
	cfg := DefaultConfig(1)
	cfg.MaxUnclassifiedAttempts = 3
	d := runUntilReleased(t, pool, cfg, map[string]string{"hub-1": "buggy"}, buggy)
	if n := calls.Load(); n != 3 {
		t.Errorf("the write ran %d times, want 3", n)
	}
	if n := testutil.ToFloat64(d.metrics.unclassified); n != 3 {
		t.Errorf("stb_dispatcher_unclassified_errors_total = %v, want 3", n)
	}
	var reason, msg string
	if err := pool.QueryRow(context.Background(), `SELECT reason, error FROM stb.dead_letters WHERE hub = 'hub-1'`).Scan(&reason, &msg); err != nil || reason != string(deadletter.PermanentError) {
		t.Fatalf("dead letter %q (%v), want permanent_error", reason, err)
	}
	t.Logf("dead letter: %s", msg)
}
