package bridge

import (
	"context"
	"strings"
	"testing"
	"time"

	"go.uber.org/zap"

	"github.com/stbridge/stb/pkg/broker"
	"github.com/stbridge/stb/pkg/db/dbtest"
)

// TestNotReadyWhenEveryBrokerIsGone: once the only broker is gone for
// longer than the grace, readiness says so, instead of staying ready
// until the group's session times out (~75 s in an operator's trial).
func TestNotReadyWhenEveryBrokerIsGone(t *testing.T) {
	brk, err := broker.Start(broker.Config{Topics: []string{"status"}, Partitions: 1}, zap.NewNop())
	if err != nil {
		t.Fatal(err)
	}
	closed := false
	t.Cleanup(func() {
		if !closed {
			brk.Close()
		}
	})
	cfg := DefaultConfig()
	cfg.Reader.Brokers, cfg.DatabaseURL, cfg.HTTPAddr, cfg.AdminAddr = brk.Addr(), dbtest.URL(t), "", ""
	cfg.Reader.GroupID = "brokers-down-test"
	cfg.ShutdownTimeout = 2 * time.Second
	ctx := context.Background()
	b, err := New(ctx, cfg, Deps{Logger: zap.NewNop()})
	if err != nil {
		t.Fatal(err)
	}
	defer b.Close()
	b.readiness.brokersDown = time.Second
	runCtx, stop := context.WithCancel(ctx)
	defer stop()
	go func() { _ = b.Run(runCtx) }()

	waitFor(t, time.Minute, "ready", func() bool { return len(b.readiness.Problems(ctx)) == 0 })
	brk.Close()
	closed = true
	var problems []string
	waitFor(t, time.Minute, "not ready for the brokers", func() bool {
		problems = b.readiness.Problems(ctx)
		return strings.Contains(strings.Join(problems, "; "), "every Kafka broker unreachable for")
	})
	// Said by the brokers' state, before the group's session (45 s) times
	// out and takes the partition away.
	if strings.Contains(strings.Join(problems, "; "), "no Kafka partitions assigned") {
		t.Fatalf("problems %v: the partition was revoked first, so the brokers' state said nothing", problems)
	}
}
