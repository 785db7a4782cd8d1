package transport_test

import (
	"context"
	"slices"
	"sync/atomic"
	"testing"

	"github.com/cloudevents/sdk-go/v2/event"
	"github.com/confluentinc/confluent-kafka-go/v2/kafka"
	"github.com/prometheus/client_golang/prometheus"

	"github.com/stbridge/stb/pkg/bundle"
	"github.com/stbridge/stb/pkg/deadletter"
	"github.com/stbridge/stb/pkg/transport"
)

// The reader survives whatever the per-message path does: a reason it
// has no counter for, a panic while dead-lettering or handing a bundle on
// (issue 34, item 1).

// publishAll publishes msgs to the "status" topic, letting the broker
// pick the partition, and waits until they are delivered.
func publishAll(t *testing.T, pub *transport.Publisher, msgs ...*kafka.Message) {
	t.Helper()
	ctx := context.Background()
	topic := "status"
	for _, m := range msgs {
		m.TopicPartition = kafka.TopicPartition{Topic: &topic, Partition: kafka.PartitionAny}
		if err := pub.PublishMessage(ctx, m); err != nil {
			t.Fatal(err)
		}
	}
	if err := pub.Flush(ctx); err != nil {
		t.Fatal(err)
	}
}

// rejectedLabels returns the reason labels of stb_transport_rejected_total.
func rejectedLabels(t *testing.T, reg *prometheus.Registry) []string {
	t.Helper()
	mfs, err := reg.Gather()
	if err != nil {
		t.Fatal(err)
	}
	var out []string
	for _, mf := range mfs {
		if mf.GetName() != "stb_transport_rejected_total" {
			continue
		}
		for _, m := range mf.GetMetric() {
			for _, lp := range m.GetLabel() {
				if lp.GetName() == "reason" {
					out = append(out, lp.GetValue())
				}
			}
		}
	}
	return out
}

// TestReaderFamilyReason: a family that rejects an event with a reason of
// its own (README "Adding a family": a deadletter.Reasoned error) gets
// its dead letter with that reason, counted under the bounded label
// "other"; the reader goes on. It looked the reason up among the read
// reasons' counters and called Inc on nil, outside the decoder's recover,
// on the decoding goroutine: the process died at that offset on every
// start.
func TestReaderFamilyReason(t *testing.T) {
	b := startBroker(t, 1)
	pub := newPublisher(t, b.Addr())
	publishAll(t, pub,
		toyMessage(t, event.CloudEventsVersionV1, toyPrefix+"broken", false, `{}`, map[string]string{"reason": "toy_reason"}),
		toyMessage(t, event.CloudEventsVersionV1, toyPrefix+"status", false, `{"objects":[]}`, map[string]string{"cluster": "c1"}),
	)
	sink := &testSink{release: true}
	h := startReaderDeps(t, b, "family-reason", &memOffsets{}, sink, &memStore{}, nil, func(d *transport.Deps) {
		d.Families = []transport.Family{&toyFamily{}}
	})
	waitFor(t, waitTimeout, "both messages to be read", func() bool {
		return len(sink.snapshot())+len(h.rejects.snapshot()) == 2
	})
	rejects := h.rejects.snapshot()
	if len(rejects) != 1 || rejects[0].Reason != "toy_reason" || rejects[0].Origin.Offset != 0 {
		t.Fatalf("dead letters %+v, want the event at offset 0 with the family's reason toy_reason", rejects)
	}
	if got := originsOf(sink.snapshot()); len(got) != 1 || got[0].Offset != 1 {
		t.Errorf("bundles from %v, want offset 1", got)
	}
	if n := counterValue(t, h.registry, "stb_transport_rejected_total", map[string]string{"reason": "other"}); n != 1 {
		t.Errorf(`stb_transport_rejected_total{reason="other"} = %v, want 1`, n)
	}
	for _, l := range rejectedLabels(t, h.registry) {
		if l != "other" && !slices.Contains(deadletter.ReadReasons, deadletter.Reason(l)) {
			t.Errorf("stb_transport_rejected_total has the label reason=%q, not one of the read reasons or other", l)
		}
	}
}

// panickyRejects is testRejects whose first panics calls to Add panic
// before taking the letter, as a dead-letter queue with a bug would.
type panickyRejects struct {
	testRejects
	panics atomic.Int32
}

func (r *panickyRejects) Add(l deadletter.Letter, release func()) {
	if r.panics.Add(-1) >= 0 {
		panic("the dead-letter queue's bug")
	}
	r.testRejects.Add(l, release)
}

// panickySink is testSink that panics, before taking it, on the bundle of
// the message at offset at.
type panickySink struct {
	*testSink
	at int64
}

func (s panickySink) Insert(b *bundle.Bundle) {
	if b.Origin.Offset == s.at {
		panic("the sink's bug")
	}
	s.testSink.Insert(b)
}

// TestReaderSurvivesPanics: a panic anywhere in the per-message path, not
// only in the decoder (TestReaderDecoderPanic), is recovered: the message
// is dead-lettered as decode_panic, once, the reader reads on, and the
// partition's position moves past it. Here the dead-letter queue panics
// on the first letter (a message that is no CloudEvent) and the sink on
// the bundle of offset 1; offset 2 is taken as usual.
func TestReaderSurvivesPanics(t *testing.T) {
	b := startBroker(t, 1)
	pub := newPublisher(t, b.Addr())
	heartbeat := func(gen uint64) *kafka.Message {
		env := validEnvelope("status", "hub-a")
		env.Version = bundle.Version{Incarnation: 1, Generation: gen}
		return mustEncode(t, env)
	}
	publishAll(t, pub, &kafka.Message{Value: []byte("not an event")}, heartbeat(1), heartbeat(2))

	sink := &testSink{release: true}
	rejects := &panickyRejects{}
	rejects.panics.Store(1)
	h := startReaderDeps(t, b, "panics-everywhere", &memOffsets{}, sink, &memStore{}, nil, func(d *transport.Deps) {
		d.Rejects = rejects
		d.Sink = panickySink{testSink: sink, at: 1}
	})
	waitFor(t, waitTimeout, "the three messages to be handled", func() bool {
		return len(sink.snapshot())+len(rejects.snapshot()) == 3
	})
	letters := rejects.snapshot()
	if len(letters) != 2 || letters[0].Origin.Offset != 0 || letters[1].Origin.Offset != 1 {
		t.Fatalf("dead letters %+v, want offsets 0 and 1", letters)
	}
	for _, l := range letters {
		if l.Reason != deadletter.DecodePanic {
			t.Errorf("offset %d dead-lettered %s (%v), want %s", l.Origin.Offset, l.Reason, l.Err, deadletter.DecodePanic)
		}
	}
	if got := originsOf(sink.snapshot()); len(got) != 1 || got[0].Offset != 2 {
		t.Errorf("bundles from %v, want offset 2", got)
	}
	if err := h.committer.Commit(context.Background()); err != nil {
		t.Fatal(err)
	}
	if p, ok := h.store.get("status", 0); !ok || p.Offset != 3 {
		t.Errorf("stored position %+v (stored %v), want 3: past both dead letters", p, ok)
	}
	if n := len(h.logs.FilterMessageSnippet("panicked").All()); n < 2 {
		t.Errorf("%d log lines about a panic, want one per panic", n)
	}
}
