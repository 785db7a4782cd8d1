package transport_test

import (
	"context"
	"fmt"
	"testing"

	"github.com/stbridge/stb/pkg/bundle"
)

// TestReaderHandsOnInBatches: the poll loop hands a backlog to the decoding
// goroutine in batches, one channel send and wake-up for many messages
// (issue 22, item 2), keeps each partition's order, and hands on a message
// that arrives alone at once, not when a batch fills.
func TestReaderHandsOnInBatches(t *testing.T) {
	b := startBroker(t, 1)
	pub := newPublisher(t, b.Addr())
	ctx := context.Background()
	const backlog = 2000
	publish := func(i int) {
		t.Helper()
		env := validEnvelope("status", fmt.Sprintf("hub-%d", i%16))
		env.ID = fmt.Sprintf("e-%d", i)
		env.Version = bundle.Version{Incarnation: 1, Generation: uint64(i + 1)}
		if err := pub.Publish(ctx, env); err != nil {
			t.Fatal(err)
		}
	}
	for i := range backlog {
		publish(i)
	}
	if err := pub.Flush(ctx); err != nil {
		t.Fatal(err)
	}
	sink := &testSink{}
	h := startReader(t, b, "batches", &memOffsets{}, sink)
	waitFor(t, waitTimeout, "the backlog to be handed on", func() bool { return len(sink.snapshot()) == backlog })
	handoffs := counterValue(t, h.registry, "stb_transport_handoffs_total", nil)
	if handoffs < 1 || handoffs > backlog/8 {
		t.Errorf("%v hand-offs for a backlog of %d messages, want between 1 and %d (8 or more messages each)",
			handoffs, backlog, backlog/8)
	}
	for i, bd := range sink.snapshot() {
		if bd.Origin.Offset != int64(i) {
			t.Fatalf("bundle %d has offset %d: the partition's order was not kept", i, bd.Origin.Offset)
		}
	}

	// One message alone: handed on when Poll finds nothing more.
	publish(backlog)
	if err := pub.Flush(ctx); err != nil {
		t.Fatal(err)
	}
	waitFor(t, waitTimeout, "a lone message to be handed on", func() bool { return len(sink.snapshot()) == backlog+1 })
	t.Logf("%d messages in %v hand-offs", backlog+1, counterValue(t, h.registry, "stb_transport_handoffs_total", nil))
}
