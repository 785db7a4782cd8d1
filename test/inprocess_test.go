package test

import (
	"context"
	"testing"
	"time"

	"go.uber.org/zap"

	stbbridge "github.com/stbridge/stb/internal/bridge"
)

// startInProcess runs a bridge in this process on the env's broker and
// database, built as `stb run` builds it (internal/bridge), for tests that
// look at what a child process cannot show: its Stats. change, when not
// nil, adjusts the configuration. The bridge is stopped, and Run's error
// checked, when the test ends.
func (e *env) startInProcess(change func(*stbbridge.Config)) *stbbridge.Bridge {
	e.t.Helper()
	cfg := stbbridge.DefaultConfig()
	cfg.Reader.Brokers, cfg.DatabaseURL = e.brokers, e.dbURL
	cfg.HTTPAddr, cfg.AdminAddr = "", ""
	cfg.Committer.Interval = 200 * time.Millisecond
	cfg.Dispatcher.Workers = 4
	if change != nil {
		change(&cfg)
	}
	b, err := stbbridge.New(context.Background(), cfg, stbbridge.Deps{Logger: zap.NewNop()})
	if err != nil {
		e.t.Fatal(err)
	}
	ctx, stop := context.WithCancel(context.Background())
	done := make(chan error, 1)
	go func() { done <- b.Run(ctx) }()
	e.t.Cleanup(func() {
		stop()
		if err := <-done; err != nil {
			e.t.Errorf("in-process bridge: Run returned %v", err)
		}
		b.Close()
	})
	return b
}

// TestInProcessBridgeAccountsForEveryMessage: a bridge built in-process
// reaches the simulation's expected state, and its Stats then account for
// every message published: all read, none outstanding, every partition's
// position at its end and, once the committer has run, stored there.
func TestInProcessBridgeAccountsForEveryMessage(t *testing.T) {
	e := newEnv(t, 4)
	exp := e.simulate("inprocess", "--hubs", "20", "--clusters", "3", "--generations", "3")
	want := int64(e.messages(exp))
	b := e.startInProcess(nil)
	e.waitVerified(exp, 2*time.Minute)
	deadline := time.Now().Add(30 * time.Second)
	for {
		st := b.Stats()
		if int64(st.Read) == want && st.Outstanding() == 0 && st.Done() == want && st.Committed() == want {
			t.Logf("%d messages read, done and committed over %d partitions", want, len(st.Partitions))
			return
		}
		if time.Now().After(deadline) {
			t.Fatalf("after verification: read %d, outstanding %d, done %d, committed %d; want %d read, done and committed",
				st.Read, st.Outstanding(), st.Done(), st.Committed(), want)
		}
		time.Sleep(100 * time.Millisecond)
	}
}
