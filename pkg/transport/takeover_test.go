package transport_test

import (
	"context"
	"strings"
	"testing"

	"github.com/stbridge/stb/pkg/bundle"
	"github.com/stbridge/stb/pkg/committer"
	"github.com/stbridge/stb/pkg/transport"
)

// TestReaderTrustsUpstreamOwnerIdentity: a position stored by upstream's
// manager carries its Kafka owner identity, which with a Kafka the user
// brings is the transport secret's bootstrap_server, not the cluster id
// (operator/pkg/controllers/transporter/protocol/byo_transporter.go
// GetConnCredential; pkg/transport/consumer/generic_consumer.go
// getInitOffset trusts only rows of that identity). The reader resumes at
// such a position when the identity names the bootstrap servers it was
// configured with (the same addresses, in any order, spaces aside), and
// ignores it, starting at auto.offset.reset, when it names other
// addresses or nothing. Positions of the same cluster id are
// TestReaderStartPosition's. Either way it commits with the cluster id.
func TestReaderTrustsUpstreamOwnerIdentity(t *testing.T) {
	b := startBroker(t, 1)
	pub := newPublisher(t, b.Addr())
	ctx := context.Background()
	const total = 10
	for g := range uint64(total) {
		env := validEnvelope("status", "hub-t")
		env.Version = bundle.Version{Incarnation: 1, Generation: g}
		if err := pub.Publish(ctx, env); err != nil {
			t.Fatal(err)
		}
	}
	if err := pub.Flush(ctx); err != nil {
		t.Fatal(err)
	}
	// A second bootstrap address that refuses connections: the reader
	// is configured with two, as an operator listing several brokers is.
	const otherBroker = "127.0.0.1:9"
	brokers := b.Addr() + "," + otherBroker

	for _, tc := range []struct {
		name      string
		owner     string
		wantFirst int64
		wantStart string
	}{
		{"the configured bootstrap servers", brokers, 6, "stored"},
		{"the same servers in another order with spaces", " " + otherBroker + " , " + b.Addr() + " ", 6, "stored"},
		{"one of the configured servers only", b.Addr(), 0, "reset"},
		{"other bootstrap servers", "kafka.example.com:9092", 0, "reset"},
		{"no identity", "", 0, "reset"},
	} {
		t.Run(tc.name, func(t *testing.T) {
			offsets := &memOffsets{positions: map[string]committer.Position{
				committer.RowName("status", 0): {Topic: "status", Partition: 0, Offset: 6, ClusterID: tc.owner},
			}}
			sink := &testSink{release: true}
			group := "takeover-" + strings.Join(strings.Fields(tc.name), "-")
			h := startReaderConfig(t, b, group, offsets, sink, &memStore{}, func(c *transport.Config) { c.Brokers = brokers })
			waitFor(t, waitTimeout, "the last message", func() bool { return handedOn(sink, 0, total-1) })
			got := sink.snapshot()
			if want := total - int(tc.wantFirst); len(got) != want || got[0].Origin.Offset != tc.wantFirst {
				t.Fatalf("read %d bundles starting at offset %d, want %d from %d", len(got), got[0].Origin.Offset, want, tc.wantFirst)
			}
			if v := counterValue(t, h.registry, "stb_transport_assignments_total", map[string]string{"start": tc.wantStart}); v != 1 {
				t.Errorf("stb_transport_assignments_total{start=%q} = %v, want 1", tc.wantStart, v)
			}
			if err := h.committer.Commit(ctx); err != nil {
				t.Fatal(err)
			}
			if p, ok := h.store.get("status", 0); !ok || p.Offset != total || p.ClusterID != b.ClusterID() {
				t.Errorf("committed %+v, want offset %d of cluster %s", p, total, b.ClusterID())
			}
		})
	}
}
