package bridge

import (
	"context"
	"errors"
	"fmt"
	"sync/atomic"
	"testing"
	"testing/synctest"
	"time"

	"github.com/confluentinc/confluent-kafka-go/v2/kafka"
	"github.com/prometheus/client_golang/prometheus"
	"github.com/prometheus/client_golang/prometheus/testutil"
	"go.uber.org/zap"

	"github.com/stbridge/stb/conflation"
)

// TestResyncCountersRegistrationErrorReturned: a registry that has the
// resync counters already makes a second registration an error for New to
// return. Issue 21: it called MustRegister, and a bridge built on a shared
// registry panicked.
func TestResyncCountersRegistrationErrorReturned(t *testing.T) {
	reg := prometheus.NewRegistry()
	if _, err := newResyncCounters(reg); err != nil {
		t.Fatal(err)
	}
	c, err := newResyncCounters(reg)
	var are prometheus.AlreadyRegisteredError
	if c != nil || !errors.As(err, &are) {
		t.Fatalf("second registration: %v, %v; want an AlreadyRegisteredError", c, err)
	}
}

// hangingPublisher takes no message until its context ends, as a Kafka
// whose queue is full; it counts what it was given.
type hangingPublisher struct{ calls atomic.Int32 }

func (p *hangingPublisher) PublishMessage(ctx context.Context, _ *kafka.Message) error {
	p.calls.Add(1)
	<-ctx.Done()
	return ctx.Err()
}
func (p *hangingPublisher) Flush(context.Context) error { return nil }
func (p *hangingPublisher) Close()                      {}

// TestResyncSendNeverBlocks: OnResync runs on the dispatcher's wake loop
// and must not block. Issue 21: it published each request and waited up to
// resyncSendTimeout for it, so a Kafka that took nothing held WakeAll a
// second per request. Now send queues (dropping and counting what does not
// fit) and run publishes. The clock is synctest's: time passing inside
// send would be send blocking.
func TestResyncSendNeverBlocks(t *testing.T) {
	synctest.Test(t, func(t *testing.T) {
		reg := prometheus.NewRegistry()
		counters, err := newResyncCounters(reg)
		if err != nil {
			t.Fatal(err)
		}
		pub := &hangingPublisher{}
		r := newResyncSender(pub, "resync", "io.stb.status.v1.", zap.NewNop(), counters, 2)
		rs := make([]conflation.Resync, 5)
		for i := range rs {
			rs[i] = conflation.Resync{Hub: fmt.Sprintf("hub-%d", i), Type: "clusterspolicies"}
		}
		start := time.Now()
		r.send(rs)
		if d := time.Since(start); d != 0 {
			t.Fatalf("send blocked for %v", d)
		}
		if n := testutil.ToFloat64(counters.dropped); n != 3 {
			t.Errorf("%v requests dropped, want 3 of 5 with a queue of 2", n)
		}

		ctx, cancel := context.WithCancel(context.Background())
		done := make(chan error, 1)
		go func() { done <- r.run(ctx) }()
		time.Sleep(resyncSendTimeout + resyncSendTimeout/2)
		synctest.Wait()
		if n := testutil.ToFloat64(counters.failed); n != 1 || pub.calls.Load() != 2 {
			t.Errorf("after one send timeout: %v failed, %d published; want the first failed and the second publishing", n, pub.calls.Load())
		}
		cancel() // ends the publish in progress and run
		if err := <-done; err != nil {
			t.Fatal(err)
		}
	})
}
