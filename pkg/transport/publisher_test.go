package transport_test

import (
	"context"
	"errors"
	"testing"
	"time"

	"go.uber.org/zap"

	"github.com/stbridge/stb/pkg/transport"
)

// TestPublisherFlushReportsDeliveryFailure publishes to a broker that has
// gone away: Flush must return once the delivery reports are in, with the
// failure.
func TestPublisherFlushReportsDeliveryFailure(t *testing.T) {
	b := startBroker(t, 1)
	addr := b.Addr()
	b.Close()

	pub, err := transport.NewPublisher(transport.PublisherConfig{
		Brokers:    addr,
		Properties: map[string]string{"message.timeout.ms": "300"},
	}, zap.NewNop())
	if err != nil {
		t.Fatal(err)
	}
	defer pub.Close()
	ctx, cancel := context.WithTimeout(context.Background(), waitTimeout)
	defer cancel()
	for range 3 {
		if err := pub.Publish(ctx, validEnvelope("status", "hub-1")); err != nil {
			t.Fatal(err)
		}
	}
	if err := pub.Flush(ctx); err == nil {
		t.Fatal("Flush reported no delivery error")
	}
	if s := pub.Stats(); s.Published != 3 || s.Failed != 3 || s.Delivered != 0 {
		t.Errorf("stats %+v, want 3 published and failed", s)
	}
	// The error is reported once.
	if err := pub.Flush(ctx); err != nil {
		t.Errorf("second Flush = %v, want nil", err)
	}
	pub.Close()
	pub.Close() // idempotent
	if err := pub.Publish(ctx, validEnvelope("status", "hub-1")); !errors.Is(err, transport.ErrPublisherClosed) {
		t.Errorf("Publish after Close = %v, want ErrPublisherClosed", err)
	}
	if err := pub.Flush(ctx); !errors.Is(err, transport.ErrPublisherClosed) {
		t.Errorf("Flush after Close = %v, want ErrPublisherClosed", err)
	}
}

func TestPublisherConfigValidate(t *testing.T) {
	for name, c := range map[string]transport.PublisherConfig{
		"no brokers":       {},
		"negative linger":  {Brokers: "b:1", Linger: -time.Millisecond},
		"reserved go prop": {Brokers: "b:1", Properties: map[string]string{"go.delivery.reports": "false"}},
	} {
		if err := c.Validate(); err == nil {
			t.Errorf("%s: Validate accepted it", name)
		}
		if _, err := transport.NewPublisher(c, nil); err == nil {
			t.Errorf("%s: NewPublisher accepted it", name)
		}
	}
}
