package dispatcher

import (
	"context"
	"testing"
	"time"

	"github.com/prometheus/client_golang/prometheus"
	"github.com/prometheus/client_golang/prometheus/testutil"
	"go.uber.org/zap"

	"github.com/stbridge/stb/conflation"
	"github.com/stbridge/stb/dbsyncers"
	"github.com/stbridge/stb/pkg/bundle"
	"github.com/stbridge/stb/pkg/db/dbtest"
	"github.com/stbridge/stb/pkg/deadletter"
)

// TestDeadLettersCountedPerBundle: a job of several bundles (a hub's
// waiting deltas, written as one ordered group) that can never be written
// is as many dead letters as bundles, and stb_dispatcher_dead_letters_total
// counts the letters stored, not the job.
func TestDeadLettersCountedPerBundle(t *testing.T) {
	pool, _ := dbtest.New(t)
	refused := dbsyncers.Syncer{
		TypeInfo: bundle.TypeInfo{Name: "refuseddelta", Kind: bundle.Delta},
		Decode:   func([]byte) (any, error) { return nil, nil },
		Plan: staged(func(ctx context.Context, db dbsyncers.DB, bs []*bundle.Bundle) error {
			_, err := db.Exec(ctx, `SELECT 1/0`) // 22012: data_exception, permanent
			return err
		}),
	}
	reg, err := dbsyncers.NewRegistry(refused)
	if err != nil {
		t.Fatal(err)
	}
	mgr, err := conflation.NewManager(conflation.Config{Types: reg.Types()})
	if err != nil {
		t.Fatal(err)
	}
	var released doneCount
	const deltas = 4
	for i := range deltas { // held before any worker runs: one job
		b := &bundle.Bundle{Hub: "hub1", Type: "refuseddelta", Version: bundle.Version{Incarnation: 1, Generation: uint64(i + 1)},
			Origin: bundle.Origin{Topic: "status", Offset: int64(i)}}
		b.Track(&released)
		mgr.Insert(b)
	}
	cfg := DefaultConfig(1)
	cfg.WakeInterval = 20 * time.Millisecond
	d, err := New(cfg, Deps{Pool: pool, Manager: mgr, Applier: reg, DeadLetters: deadletter.NewWriter(pool),
		Logger: zap.NewNop(), Registerer: prometheus.NewRegistry()})
	if err != nil {
		t.Fatal(err)
	}
	ctx, cancel := context.WithCancel(context.Background())
	done := make(chan error, 1)
	go func() { done <- d.Run(ctx) }()
	deadline := time.Now().Add(10 * time.Second)
	for released.n.Load() < deltas {
		if time.Now().After(deadline) {
			t.Fatalf("only %d of %d bundles finished", released.n.Load(), deltas)
		}
		time.Sleep(10 * time.Millisecond)
	}
	cancel()
	if err := <-done; err != nil {
		t.Fatal(err)
	}
	var stored int
	if err := pool.QueryRow(context.Background(), `SELECT count(*) FROM stb.dead_letters WHERE hub = 'hub1'`).Scan(&stored); err != nil {
		t.Fatal(err)
	}
	if stored != deltas {
		t.Fatalf("%d dead letters stored, want one per delta (%d)", stored, deltas)
	}
	if n := testutil.ToFloat64(d.metrics.dead.WithLabelValues("refuseddelta", string(deadletter.DataException))); n != float64(stored) {
		t.Fatalf("stb_dispatcher_dead_letters_total = %v, want %d: one per letter stored", n, stored)
	}
}
