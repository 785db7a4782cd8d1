package bridge

import (
	"context"
	"errors"
	"net/http"
	"testing"
	"time"

	"go.uber.org/zap"
	"go.uber.org/zap/zapcore"
	"go.uber.org/zap/zaptest/observer"

	"github.com/stbridge/stb/pkg/db/dbtest"
)

// TestCloseBoundedWithAReplayConnectionHeld: a console replay holds the
// replay pool's one connection for up to its action timeout (two
// minutes), and pgxpool's Close waits for every connection to come back.
// Close closed that pool inline, before waiting on the other clients
// within closeGrace, so a replay in flight kept the process from exiting
// past Kubernetes' grace period (SIGKILL). The pool is closed like every
// other client, in a step of its own that is abandoned with a log line
// when it does not end in time; Run's shutdown, which closes the clients
// the same way, is bounded alike.
func TestCloseBoundedWithAReplayConnectionHeld(t *testing.T) {
	brk := startBroker(t, 1, "status")
	_, url := dbtest.New(t)
	ctx := context.Background()

	for _, viaRun := range []bool{false, true} {
		name := map[bool]string{false: "Close", true: "Run"}[viaRun]
		t.Run(name, func(t *testing.T) {
			cfg := DefaultConfig()
			cfg.Reader.Brokers, cfg.DatabaseURL, cfg.HTTPAddr, cfg.AdminAddr = brk.Addr(), url, "", "127.0.0.1:0"
			cfg.Reader.GroupID = "close-test-" + name
			cfg.Dispatcher.Workers = 2
			cfg.ShutdownTimeout = time.Second
			core, logs := observer.New(zapcore.InfoLevel)
			b, err := New(ctx, cfg, Deps{Logger: zap.New(core)})
			if err != nil {
				t.Fatal(err)
			}
			if b.replayPool == nil {
				t.Fatal("no replay pool with the admin listener on")
			}
			// What a console replay does while it waits for the
			// database: it holds the pool's connection.
			held, err := b.replayPool.Acquire(ctx)
			if err != nil {
				t.Fatal(err)
			}
			// Given back at the end, so that the abandoned Close returns.
			t.Cleanup(held.Release)

			bound := closeGrace
			done := make(chan error, 1)
			start := time.Now()
			if viaRun {
				runCtx, stop := context.WithCancel(ctx)
				go func() { done <- b.Run(runCtx) }()
				waitFor(t, 30*time.Second, "the reader to join its group", func() bool { return len(b.Stats().Partitions) > 0 })
				bound += cfg.ShutdownTimeout
				start = time.Now()
				stop()
			} else {
				go func() { b.Close(); done <- nil }()
			}
			select {
			case err := <-done:
				if err != nil {
					t.Fatalf("Run returned %v", err)
				}
			case <-time.After(bound + 3*time.Second):
				t.Fatalf("%s did not return within %v (+3 s) with a connection of the replay pool held", name, bound)
			}
			took := time.Since(start)
			t.Logf("%s returned after %v with a replay connection held (bound %v)", name, took.Round(time.Millisecond), bound)
			if n := logs.FilterMessage("closing timed out; exiting without").FilterField(zap.String("client", "console replay pool")).Len(); n != 1 {
				t.Errorf("%d log lines say the replay pool was left behind, want 1; logs: %v", n, logs.All())
			}
			// Each client has its own bound: the others, which close at
			// once, are not left behind with the pool that cannot.
			if left := logs.FilterMessage("closing timed out; exiting without"); left.Len() != 1 {
				t.Errorf("%d clients left behind, want the replay pool alone: %v", left.Len(), left.All())
			}
		})
	}
}

// TestShutdownEndsAConsoleRequestInFlight: a console action in flight (a
// replay waiting for the database while it holds the replay pool's
// connection) has its request's context cancelled at the shutdown, so it
// gives the connection back and the pool closes at once, well within the
// bound, instead of the shutdown leaving it behind.
func TestShutdownEndsAConsoleRequestInFlight(t *testing.T) {
	brk := startBroker(t, 1, "status")
	_, url := dbtest.New(t)
	ctx := context.Background()

	cfg := DefaultConfig()
	cfg.Reader.Brokers, cfg.DatabaseURL, cfg.HTTPAddr, cfg.AdminAddr = brk.Addr(), url, "", "127.0.0.1:0"
	cfg.Reader.GroupID = "in-flight-test"
	cfg.Dispatcher.Workers = 2
	cfg.ShutdownTimeout = 5 * time.Second
	core, logs := observer.New(zapcore.InfoLevel)
	b, err := New(ctx, cfg, Deps{Logger: zap.New(core)})
	if err != nil {
		t.Fatal(err)
	}
	defer b.Close()
	// A console action as a replay runs one: on the replay pool, with the
	// request's context, waiting on the database (pg_sleep) for longer
	// than the whole shutdown may take.
	inFlight, ended := make(chan struct{}), make(chan error, 1)
	for _, s := range b.servers {
		if s.name == "admin" {
			s.srv.Handler = http.HandlerFunc(func(w http.ResponseWriter, r *http.Request) {
				close(inFlight)
				_, err := b.replayPool.Exec(r.Context(), `SELECT pg_sleep(120)`)
				ended <- err
			})
		}
	}
	runCtx, stop := context.WithCancel(ctx)
	done := make(chan error, 1)
	go func() { done <- b.Run(runCtx) }()
	go func() {
		resp, err := http.Post("http://"+b.AdminAddr()+"/actions/replay", "text/plain", nil)
		if err == nil {
			resp.Body.Close()
		}
	}()
	select {
	case <-inFlight:
	case <-time.After(30 * time.Second):
		t.Fatal("the request never reached the handler")
	}
	start := time.Now()
	stop()
	select {
	case err := <-done:
		if err != nil {
			t.Fatalf("Run returned %v", err)
		}
	case <-time.After(cfg.ShutdownTimeout + closeGrace + 3*time.Second):
		t.Fatal("Run did not return within its bound with a console request in flight")
	}
	took := time.Since(start)
	t.Logf("Run returned %v after the stop with a console request in flight", took.Round(time.Millisecond))
	select {
	case err := <-ended:
		if !errors.Is(err, context.Canceled) {
			t.Errorf("the request's database call ended with %v, want context.Canceled", err)
		}
	default:
		t.Error("the request was still running when Run returned")
	}
	if n := logs.FilterMessage("closing timed out; exiting without").Len(); n != 0 {
		t.Errorf("%d clients left behind, want none: %v", n, logs.FilterMessage("closing timed out; exiting without").All())
	}
	if took > cfg.ShutdownTimeout {
		t.Errorf("Run took %v, more than the shutdown timeout %v: the request was waited for", took, cfg.ShutdownTimeout)
	}
}
