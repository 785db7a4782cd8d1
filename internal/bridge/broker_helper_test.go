package bridge

import (
	"testing"

	"go.uber.org/zap"

	"github.com/stbridge/stb/pkg/broker"
)

// startBroker starts an embedded broker holding topics, each of
// partitions partitions, and closes it when t ends (Close may be called
// before: it is idempotent).
func startBroker(t *testing.T, partitions int32, topics ...string) *broker.Broker {
	t.Helper()
	brk, err := broker.Start(broker.Config{Topics: topics, Partitions: partitions}, zap.NewNop())
	if err != nil {
		t.Fatal(err)
	}
	t.Cleanup(brk.Close)
	return brk
}
