package dispatcher

import (
	"context"
	"fmt"
	"strings"
	"sync/atomic"
	"testing"
	"time"

	"github.com/jackc/pgx/v5/pgconn"
	"github.com/prometheus/client_golang/prometheus"
	"github.com/prometheus/client_golang/prometheus/testutil"
	dto "github.com/prometheus/client_model/go"
	"go.uber.org/zap"

	"github.com/stbridge/stb/conflation"
	"github.com/stbridge/stb/dbsyncers"
	"github.com/stbridge/stb/pkg/backoff"
	"github.com/stbridge/stb/pkg/bundle"
	"github.com/stbridge/stb/pkg/db/dbtest"
	"github.com/stbridge/stb/pkg/deadletter"
)

// staged returns a plan whose stage is write, run when the bundles are
// written (after their fence), as a large bundle's stage is.
func staged(write func(ctx context.Context, db dbsyncers.DB, bs []*bundle.Bundle) error) func([]*bundle.Bundle) (dbsyncers.Write, error) {
	return func(bs []*bundle.Bundle) (dbsyncers.Write, error) {
		return dbsyncers.Write{Stage: func(ctx context.Context, db dbsyncers.DB) error { return write(ctx, db, bs) }}, nil
	}
}

// flaky is a bundle type whose write stores a row, failing with a
// serialization error the first `failures` times.
func flaky(failures int32) (dbsyncers.Syncer, *atomic.Int32) {
	calls := &atomic.Int32{}
	return dbsyncers.Syncer{
		TypeInfo: bundle.TypeInfo{Name: "flaky", Kind: bundle.Complete},
		Decode:   func([]byte) (any, error) { return nil, nil },
		Plan: staged(func(ctx context.Context, db dbsyncers.DB, bs []*bundle.Bundle) error {
			if calls.Add(1) <= failures {
				return &pgconn.PgError{Code: "40001", Message: "could not serialize access"}
			}
			_, err := db.Exec(ctx, `INSERT INTO stb.hub_heartbeats (hub, last_timestamp) VALUES ($1, now())
				ON CONFLICT (hub) DO UPDATE SET last_timestamp = now()`, bs[0].Hub)
			return err
		}),
	}, calls
}

func poison() dbsyncers.Syncer {
	return dbsyncers.Syncer{
		TypeInfo: bundle.TypeInfo{Name: "poison", Kind: bundle.Complete},
		Decode:   func([]byte) (any, error) { return nil, nil },
		Plan: staged(func(ctx context.Context, db dbsyncers.DB, bs []*bundle.Bundle) error {
			_, err := db.Exec(ctx, `SELECT 1/0`)
			return err
		}),
	}
}

type doneCount struct{ n atomic.Int32 }

func (d *doneCount) Done(bundle.Origin) { d.n.Add(1) }

func TestDispatcherRetriesTransientAndDeadLettersPermanent(t *testing.T) {
	pool, _ := dbtest.New(t)
	fl, calls := flaky(2)
	reg, err := dbsyncers.NewRegistry(fl, poison())
	if err != nil {
		t.Fatal(err)
	}
	mgr, err := conflation.NewManager(conflation.Config{Types: reg.Types(), Backoff: backoff.Exponential{Min: 10 * time.Millisecond, Max: 40 * time.Millisecond}})
	if err != nil {
		t.Fatal(err)
	}
	prom := prometheus.NewRegistry()
	cfg := DefaultConfig(2)
	cfg.WakeInterval = 20 * time.Millisecond
	cfg.BatchJobs = 1 // each job alone: how batches fail is TestBatchFailures'
	d, err := New(cfg, Deps{Pool: pool, Manager: mgr, Applier: reg, DeadLetters: deadletter.NewWriter(pool), Logger: zap.NewNop(), Registerer: prom})
	if err != nil {
		t.Fatal(err)
	}
	ctx, cancel := context.WithCancel(context.Background())
	done := make(chan error, 1)
	go func() { done <- d.Run(ctx) }()

	var released doneCount
	for i, typ := range []string{"flaky", "poison"} {
		b := &bundle.Bundle{Hub: "hub-" + typ, Type: typ, Version: bundle.Version{Incarnation: 1, Generation: 1},
			Origin: bundle.Origin{Topic: "status", Offset: int64(i)}}
		b.Track(&released)
		mgr.Insert(b)
	}
	deadline := time.Now().Add(10 * time.Second)
	for released.n.Load() < 2 {
		if time.Now().After(deadline) {
			t.Fatalf("only %d of 2 bundles finished", released.n.Load())
		}
		time.Sleep(10 * time.Millisecond)
	}
	cancel()
	if err := <-done; err != nil {
		t.Fatal(err)
	}

	if got := calls.Load(); got != 3 {
		t.Errorf("flaky handler ran %d times, want 3 (two serialization failures, then success)", got)
	}
	var n int
	if err := pool.QueryRow(context.Background(), `SELECT count(*) FROM stb.hub_heartbeats WHERE hub = 'hub-flaky'`).Scan(&n); err != nil || n != 1 {
		t.Errorf("flaky bundle rows = %d (%v), want 1", n, err)
	}
	var reason, hub string
	if err := pool.QueryRow(context.Background(), `SELECT reason, hub FROM stb.dead_letters`).Scan(&reason, &hub); err != nil {
		t.Fatalf("no dead letter: %v", err)
	}
	if reason != "data_exception" || hub != "hub-poison" {
		t.Errorf("dead letter %s for %s, want data_exception for hub-poison", reason, hub)
	}
	// Each failed attempt shows as a transient result.
	if transient := testutil.ToFloat64(d.metrics.jobs.WithLabelValues("flaky", "transient")); transient != 2 {
		t.Errorf("transient results %v, want 2 failed attempts", transient)
	}
	if d.Err() != nil {
		t.Errorf("Err after recovery = %v, want nil", d.Err())
	}
	// Each unit keeps why its type's last write failed, for the console.
	for hub, want := range map[string]string{"hub-flaky": "40001", "hub-poison": "data_exception"} {
		u, ok := mgr.Lookup(hub)
		if !ok {
			t.Fatalf("no unit of %s", hub)
		}
		if st := u.Snapshot(); len(st.Types) != 1 || !strings.Contains(st.Types[0].LastError, want) {
			t.Errorf("%s: last error %+v, want one mentioning %s", hub, st.Types, want)
		}
	}
	problems, err := testutil.GatherAndLint(prom)
	if err != nil || len(problems) > 0 {
		t.Fatalf("lint: %v %v", err, problems)
	}
}

func TestNewRejectsMoreWorkersThanConnections(t *testing.T) {
	pool, _ := dbtest.New(t)
	mgr, _ := conflation.NewManager(conflation.Config{Types: dbsyncers.Default().Types()})
	_, err := New(DefaultConfig(int(pool.Config().MaxConns)+1), Deps{Pool: pool, Manager: mgr, Applier: dbsyncers.Default()})
	if err == nil {
		t.Fatal("more workers than connections accepted")
	}
}

// With more ready units than workers, small jobs of different hubs share a
// transaction; every one is still written and reported.
func TestDispatcherBatchesSmallJobs(t *testing.T) {
	pool, _ := dbtest.New(t)
	reg := dbsyncers.Default()
	mgr, err := conflation.NewManager(conflation.Config{Types: reg.Types()})
	if err != nil {
		t.Fatal(err)
	}
	var released doneCount
	const hubs = 100
	for i := 0; i < hubs; i++ {
		b := &bundle.Bundle{Hub: fmt.Sprintf("hub-%03d", i), Type: "heartbeat", Version: bundle.Version{Incarnation: 1, Generation: 1},
			Payload: &dbsyncers.HeartbeatPayload{}, Size: 2, EventTime: time.Now(), Origin: bundle.Origin{Offset: int64(i)}}
		b.Track(&released)
		mgr.Insert(b)
	}
	d, err := New(DefaultConfig(1), Deps{Pool: pool, Manager: mgr, Applier: reg, Logger: zap.NewNop()})
	if err != nil {
		t.Fatal(err)
	}
	ctx, cancel := context.WithCancel(context.Background())
	done := make(chan error, 1)
	go func() { done <- d.Run(ctx) }()
	deadline := time.Now().Add(10 * time.Second)
	for released.n.Load() < hubs && time.Now().Before(deadline) {
		time.Sleep(10 * time.Millisecond)
	}
	cancel()
	<-done
	if n := released.n.Load(); n != hubs {
		t.Fatalf("%d of %d bundles finished", n, hubs)
	}
	var rows int
	if err := pool.QueryRow(context.Background(), `SELECT count(*) FROM stb.hub_heartbeats`).Scan(&rows); err != nil || rows != hubs {
		t.Fatalf("%d heartbeat rows (%v), want %d", rows, err, hubs)
	}
	if n := testutil.CollectAndCount(d.metrics.batches); n != 1 {
		t.Fatalf("batch histogram has %d series", n)
	}
	if got := histogramCount(t, d.metrics.batches); got < 3 {
		t.Fatalf("%d batched transactions for %d ready hubs and one worker, want at least 3", got, hubs)
	}
}

func histogramCount(t *testing.T, h prometheus.Histogram) uint64 {
	t.Helper()
	var m dto.Metric
	if err := h.Write(&m); err != nil {
		t.Fatal(err)
	}
	return m.GetHistogram().GetSampleCount()
}

// TestBatchWaitGathersATrickle: small bundles that become ready one by
// one, a few milliseconds apart, share one transaction when a worker waits
// for them, and the other worker does not take them from under it.
func TestBatchWaitGathersATrickle(t *testing.T) {
	pool, _ := dbtest.New(t)
	reg := dbsyncers.Default()
	mgr, err := conflation.NewManager(conflation.Config{Types: reg.Types()})
	if err != nil {
		t.Fatal(err)
	}
	cfg := DefaultConfig(2)
	cfg.BatchWait = time.Second // far longer than the trickle, so that a busy machine does not cut it
	d, err := New(cfg, Deps{Pool: pool, Manager: mgr, Applier: reg, Logger: zap.NewNop()})
	if err != nil {
		t.Fatal(err)
	}
	ctx, cancel := context.WithCancel(context.Background())
	done := make(chan error, 1)
	go func() { done <- d.Run(ctx) }()

	const n = 20
	var released doneCount
	for i := range n {
		b := &bundle.Bundle{Hub: fmt.Sprintf("hub-%02d", i), Type: "heartbeat", Version: bundle.Version{Incarnation: 1, Generation: 1},
			Payload: &dbsyncers.HeartbeatPayload{}, Origin: bundle.Origin{Topic: "status", Offset: int64(i)}, EventTime: time.Now()}
		b.Track(&released)
		mgr.Insert(b)
		time.Sleep(2 * time.Millisecond)
	}
	deadline := time.Now().Add(10 * time.Second)
	for released.n.Load() < n {
		if time.Now().After(deadline) {
			t.Fatalf("only %d of %d bundles finished", released.n.Load(), n)
		}
		time.Sleep(10 * time.Millisecond)
	}
	cancel()
	if err := <-done; err != nil {
		t.Fatal(err)
	}
	var m dto.Metric
	if err := d.metrics.batches.Write(&m); err != nil {
		t.Fatal(err)
	}
	if got, jobs := m.GetHistogram().GetSampleCount(), m.GetHistogram().GetSampleSum(); got != 1 || jobs != n {
		t.Fatalf("%d bundles a few ms apart were written in %d batches of %v jobs in all, want one batch of %d", n, got, jobs, n)
	}
	var written int
	if err := pool.QueryRow(context.Background(), `SELECT count(*) FROM stb.hub_heartbeats`).Scan(&written); err != nil || written != n {
		t.Fatalf("%d heartbeats written (%v), want %d", written, err, n)
	}
}
