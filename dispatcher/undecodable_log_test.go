package dispatcher

import (
	"context"
	"fmt"
	"testing"
	"time"

	"go.uber.org/zap"
	"go.uber.org/zap/zapcore"
	"go.uber.org/zap/zaptest/observer"

	"github.com/stbridge/stb/conflation"
	"github.com/stbridge/stb/dbsyncers"
	"github.com/stbridge/stb/pkg/backoff"
	"github.com/stbridge/stb/pkg/bundle"
	"github.com/stbridge/stb/pkg/db/dbtest"
	"github.com/stbridge/stb/pkg/deadletter"
)

// TestUndecodableFloodLogBounded: a flood of bundles whose data does not
// decode is dead-lettered bundle by bundle and logged in a bounded number
// of warnings with the count, without a stack: it was one error line with
// a stack per bundle (issue 34, item 11: 3,586 lines in a flood).
func TestUndecodableFloodLogBounded(t *testing.T) {
	pool, _ := dbtest.New(t)
	reg := dbsyncers.Default()
	const n = 300
	mgr, err := conflation.NewManager(conflation.Config{Types: reg.Types(),
		Backoff: backoff.Exponential{Min: 5 * time.Millisecond, Max: 20 * time.Millisecond}})
	if err != nil {
		t.Fatal(err)
	}
	var released doneCount
	for i := range n {
		b := &bundle.Bundle{Hub: fmt.Sprintf("hub-%03d", i), Type: "managedclusters", Version: bundle.Version{Incarnation: 1, Generation: 1},
			Raw: []byte(`{"objects":[{"metadata":`), Size: 24, Origin: bundle.Origin{Topic: "status", Offset: int64(i)}}
		b.Track(&released)
		mgr.Insert(b)
	}
	core, logs := observer.New(zapcore.DebugLevel)
	cfg := DefaultConfig(2)
	cfg.WakeInterval = 10 * time.Millisecond
	d, err := New(cfg, Deps{Pool: pool, Manager: mgr, Applier: reg, DeadLetters: deadletter.NewWriter(pool), Logger: zap.New(core, zap.AddStacktrace(zapcore.ErrorLevel))})
	if err != nil {
		t.Fatal(err)
	}
	ctx, cancel := context.WithCancel(context.Background())
	done := make(chan error, 1)
	go func() { done <- d.Run(ctx) }()
	deadline := time.Now().Add(30 * time.Second)
	for int(released.n.Load()) < n && time.Now().Before(deadline) {
		time.Sleep(5 * time.Millisecond)
	}
	cancel()
	if err := <-done; err != nil {
		t.Fatal(err)
	}
	var letters int
	if err := pool.QueryRow(context.Background(), `SELECT count(*) FROM stb.dead_letters`).Scan(&letters); err != nil || letters != n {
		t.Fatalf("%d dead letters (%v), want %d", letters, err, n)
	}
	lines, stacks, counted := 0, 0, 0
	for _, e := range logs.All() {
		if e.Message == "bundle data does not decode, dead-lettering it" || e.Message == "bundle data does not decode, dead-lettering it (summed up)" {
			lines++
			if e.Stack != "" {
				stacks++
			}
			if c, ok := e.ContextMap()["count"]; ok {
				counted += int(c.(int64))
			} else {
				counted++
			}
		}
	}
	if lines > 3 || stacks > 0 || counted != n {
		t.Errorf("%d lines (%d with a stack) counting %d undecodable bundles of %d; want at most 3, none with a stack, counting all", lines, stacks, counted, n)
	}
}
