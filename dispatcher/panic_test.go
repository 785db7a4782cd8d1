package dispatcher

import (
	"context"
	"testing"
	"time"

	"go.uber.org/zap"

	"github.com/stbridge/stb/conflation"
	"github.com/stbridge/stb/dbsyncers"
	"github.com/stbridge/stb/pkg/bundle"
	"github.com/stbridge/stb/pkg/db/dbtest"
	"github.com/stbridge/stb/pkg/deadletter"
)

// TestDispatcherPanicIsDeadLettered: a plan that panics on one hub's
// bundle (a bug of the bridge's) dead-letters that bundle with
// write_panic and lets the worker go on: the other hubs' bundles, in the
// same batch or after it, are written (issue 21: with no recover the
// process died, and every restart met the same bundle again).
func TestDispatcherPanicIsDeadLettered(t *testing.T) {
	pool, _ := dbtest.New(t)
	reg, err := dbsyncers.NewRegistry(dbsyncers.Syncer{
		TypeInfo: bundle.TypeInfo{Name: "buggy", Kind: bundle.Complete},
		Decode:   func([]byte) (any, error) { return nil, nil },
		Plan: func(bs []*bundle.Bundle) (dbsyncers.Write, error) {
			if bs[0].Hub == "hub-bug" {
				panic("a plan's bug")
			}
			return dbsyncers.Write{Statements: []dbsyncers.Statement{{What: "heartbeat",
				SQL:  `INSERT INTO stb.hub_heartbeats (hub, last_timestamp) VALUES ($1, now()) ON CONFLICT (hub) DO NOTHING`,
				Args: []any{bs[0].Hub}}}}, nil
		},
	})
	if err != nil {
		t.Fatal(err)
	}
	mgr, err := conflation.NewManager(conflation.Config{Types: reg.Types()})
	if err != nil {
		t.Fatal(err)
	}
	d, err := New(DefaultConfig(1), Deps{Pool: pool, Manager: mgr, Applier: reg, DeadLetters: deadletter.NewWriter(pool), Logger: zap.NewNop()})
	if err != nil {
		t.Fatal(err)
	}
	var released doneCount
	hubs := []string{"hub-a", "hub-bug", "hub-b", "hub-c"}
	for i, hub := range hubs {
		b := &bundle.Bundle{Hub: hub, Type: "buggy", Version: bundle.Version{Incarnation: 1, Generation: 1},
			Origin: bundle.Origin{Topic: "status", Offset: int64(i)}}
		b.Track(&released)
		mgr.Insert(b)
	}
	ctx, cancel := context.WithCancel(context.Background())
	done := make(chan error, 1)
	go func() { done <- d.Run(ctx) }()
	deadline := time.Now().Add(10 * time.Second)
	for released.n.Load() < int32(len(hubs)) {
		if time.Now().After(deadline) {
			t.Fatalf("only %d of %d bundles finished", released.n.Load(), len(hubs))
		}
		time.Sleep(10 * time.Millisecond)
	}
	cancel()
	if err := <-done; err != nil {
		t.Fatal(err)
	}
	var n int
	if err := pool.QueryRow(context.Background(), `SELECT count(*) FROM stb.hub_heartbeats WHERE hub IN ('hub-a', 'hub-b', 'hub-c')`).Scan(&n); err != nil || n != 3 {
		t.Errorf("rows of the other hubs = %d (%v), want 3", n, err)
	}
	var reason, hub string
	if err := pool.QueryRow(context.Background(), `SELECT reason, hub FROM stb.dead_letters`).Scan(&reason, &hub); err != nil {
		t.Fatalf("no dead letter: %v", err)
	}
	if reason != string(deadletter.WritePanic) || hub != "hub-bug" {
		t.Errorf("dead letter %s for %s, want %s for hub-bug", reason, hub, deadletter.WritePanic)
	}
}
