package transport_test

import (
	"context"
	"fmt"
	"slices"
	"testing"
	"time"

	"github.com/cloudevents/sdk-go/protocol/kafka_confluent/v2"
	"github.com/cloudevents/sdk-go/v2/binding"
	"github.com/cloudevents/sdk-go/v2/event"
	"github.com/confluentinc/confluent-kafka-go/v2/kafka"
	"github.com/prometheus/client_golang/prometheus"
	"github.com/prometheus/client_golang/prometheus/testutil"
	"go.uber.org/zap"

	"github.com/stbridge/stb/dbsyncers/work"
	"github.com/stbridge/stb/pkg/committer"
	"github.com/stbridge/stb/pkg/transport"
)

// TestSkippedSeriesBounded: no label of stb_transport_skipped_total comes
// from the wire. It was labelled with the event's type, and the work
// family skips every …manifestbundles.spec.* type, so any sender on the
// topic could make a series per type it made up, in every replica (issue
// 34, item 3). A reader with the work family and the global-hub profile
// reads 200 spec events of 200 types, sdk-go heartbeats, global-hub event
// types the bridge does not store and global-hub types nobody knows: the
// skipped ones are counted under the family's name and the global-hub
// profile's fixed types, the unknown ones are dead letters (counted by
// reason).
func TestSkippedSeriesBounded(t *testing.T) {
	const specTypes = 200
	b := startBroker(t, 1)
	pub := newPublisher(t, b.Addr())
	ctx := context.Background()
	publish := func(ev event.Event) {
		t.Helper()
		topic := "status"
		msg := &kafka.Message{TopicPartition: kafka.TopicPartition{Topic: &topic, Partition: kafka.PartitionAny}}
		if err := kafka_confluent.WriteProducerMessage(ctx, binding.ToMessage(&ev), msg); err != nil {
			t.Fatal(err)
		}
		if err := pub.PublishMessage(ctx, msg); err != nil {
			t.Fatal(err)
		}
	}
	workEvent := func(i int, typ string) event.Event {
		ev := event.New()
		ev.SetID(fmt.Sprintf("id-%d", i))
		ev.SetSource("maestro")
		ev.SetType(typ)
		ev.SetExtension(work.ExtClusterName, "c1")
		if err := ev.SetData(event.ApplicationJSON, map[string]any{}); err != nil {
			t.Fatal(err)
		}
		return ev
	}
	sent := 0
	for i := range specTypes {
		publish(workEvent(i, fmt.Sprintf("%sspec.made_up_%03d", work.TypePrefix, i)))
		sent++
	}
	for i := range 3 {
		publish(workEvent(specTypes+i, work.HeartbeatType))
		sent++
	}
	for i, short := range []string{"event.clustergroupupgrade", "event.clustergroupupgrade", "no.such.type.1", "no.such.type.2"} {
		m := ghEncode(t, transport.GlobalHubEvent{Topic: "status", Hub: fmt.Sprintf("hub-%d", i), Type: short, Version: "1.1", Data: []byte(`[]`)})
		m.TopicPartition.Partition = kafka.PartitionAny
		if err := pub.PublishMessage(ctx, m); err != nil {
			t.Fatal(err)
		}
		sent++
	}
	if err := pub.Flush(ctx); err != nil {
		t.Fatal(err)
	}

	registry := prometheus.NewRegistry()
	store := &memStore{}
	c, err := committer.New(committer.Config{Interval: time.Hour}, committer.Deps{Store: store, Logger: zap.NewNop()})
	if err != nil {
		t.Fatal(err)
	}
	cfg := transport.DefaultConfig()
	cfg.Brokers, cfg.GroupID, cfg.Topics = b.Addr(), "skipped-labels", []string{"status"}
	rejects := &testRejects{}
	r, err := transport.NewReader(cfg, transport.Deps{
		Decoder: testDecoders(), Sink: &testSink{release: true}, Positions: positions{c}, Offsets: store,
		Rejects: rejects, Logger: zap.NewNop(), Registerer: registry,
		Families: []transport.Family{transport.NewGlobalHub(), work.NewFamily()},
	})
	if err != nil {
		t.Fatal(err)
	}
	runCtx, cancel := context.WithCancel(ctx)
	done := make(chan error, 1)
	go func() { done <- r.Run(runCtx) }()
	t.Cleanup(func() {
		cancel()
		if err := <-done; err != nil {
			t.Errorf("Run: %v", err)
		}
		if err := r.Close(); err != nil {
			t.Errorf("close: %v", err)
		}
	})
	waitFor(t, waitTimeout, "every message read", func() bool { return r.Stats().Read == uint64(sent) })
	waitFor(t, waitTimeout, "every message decoded", func() bool {
		return skippedSum(t, registry)+len(rejects.snapshot()) == sent
	})

	got := skippedSeries(t, registry)
	// "other" is exported at 0 from the start (newSkippedCounters).
	want := []string{"globalhub.event.clustergroupupgrade=2", "other=0", work.Name + "=203"}
	if !slices.Equal(got, want) {
		n := testutil.CollectAndCount(registry, "stb_transport_skipped_total")
		t.Errorf("%d series of stb_transport_skipped_total for %d made-up types (%d skipped messages): %q …, want %q",
			n, specTypes, skippedSum(t, registry), got[:min(3, len(got))], want)
	}
	if n := len(rejects.snapshot()); n != 2 {
		t.Errorf("%d dead letters, want 2 (the unknown global-hub types)", n)
	}
}

// skippedSeries returns stb_transport_skipped_total's series as
// "type=count", sorted.
func skippedSeries(t *testing.T, reg *prometheus.Registry) []string {
	t.Helper()
	mfs, err := reg.Gather()
	if err != nil {
		t.Fatal(err)
	}
	var out []string
	for _, mf := range mfs {
		if mf.GetName() != "stb_transport_skipped_total" {
			continue
		}
		for _, m := range mf.GetMetric() {
			for _, lp := range m.GetLabel() {
				out = append(out, fmt.Sprintf("%s=%d", lp.GetValue(), int(m.GetCounter().GetValue())))
			}
		}
	}
	slices.Sort(out)
	return out
}

// skippedSum is the total of stb_transport_skipped_total.
func skippedSum(t *testing.T, reg *prometheus.Registry) int {
	t.Helper()
	mfs, err := reg.Gather()
	if err != nil {
		t.Fatal(err)
	}
	n := 0
	for _, mf := range mfs {
		if mf.GetName() == "stb_transport_skipped_total" {
			for _, m := range mf.GetMetric() {
				n += int(m.GetCounter().GetValue())
			}
		}
	}
	return n
}
