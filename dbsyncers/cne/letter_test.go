package cne_test

import (
	"testing"

	"github.com/cloudevents/sdk-go/v2/event"
	"github.com/confluentinc/confluent-kafka-go/v2/kafka"

	"github.com/stbridge/stb/dbsyncers"
	"github.com/stbridge/stb/dbsyncers/cne"
	"github.com/stbridge/stb/pkg/bundle"
	"github.com/stbridge/stb/pkg/transport"
)

// TestEventOfRebuildsTheEvent: a worker's dead letter of a cne.event
// bundle kept the bundle's Raw (then a line of the event's attributes,
// then the data) as the event's data; Family.Bundle sniffed its data for
// that line to be replayable, which worked in binary mode only (a
// structured event's stored headers hold no attributes). The event
// rebuilt from the bundle (EventOf: its Attrs as binary-mode headers, its
// Raw as the data) reads back, through the reader's path, into the same
// bundle. Raw is now the event's data itself, nothing else.
func TestEventOfRebuildsTheEvent(t *testing.T) {
	reg, err := dbsyncers.NewRegistry(cne.Syncers()...)
	if err != nil {
		t.Fatal(err)
	}
	rules := transport.Rules{TypePrefix: transport.DefaultTypePrefix, MaxBundleBytes: 1 << 20, Decoder: reg}
	read := func(headers map[string]string, data []byte) (*bundle.Bundle, *transport.Reject) {
		topic := "cne"
		msg := &kafka.Message{TopicPartition: kafka.TopicPartition{Topic: &topic, Partition: 2, Offset: 9}, Key: []byte("n1"), Value: data}
		for k, v := range headers {
			msg.Headers = append(msg.Headers, kafka.Header{Key: k, Value: []byte(v)})
		}
		return transport.DecodeFamilies(msg, rules, []transport.Family{cne.NewFamily()}, t0)
	}
	for _, spec := range []string{event.CloudEventsVersionV03, event.CloudEventsVersionV1} {
		first, err := cne.Family{}.Bundle(ev(t, spec, cne.PtpStateChange, t0, 2, 9, ptpState("n1", "LOCKED", 7)))
		if err != nil {
			t.Fatal(err)
		}
		headers, data, ok := cne.Family{}.EventOf(first)
		if !ok {
			t.Fatal("EventOf: not the family's")
		}
		again, rej := read(headers, data)
		if rej != nil {
			t.Fatalf("%s: the rebuilt event is rejected: %v (headers %v)", spec, rej, headers)
		}
		if string(again.Raw) != string(first.Raw) || again.Hub != "n1" {
			t.Fatalf("%s: rebuilt: hub %q raw %q, want %q", spec, again.Hub, again.Raw, first.Raw)
		}
		if p := decoded(t, again); len(p.Values) != 2 || p.Values[0].Text != "7" || p.Values[1].Text != "LOCKED" {
			t.Fatalf("%s: rebuilt values %+v", spec, p.Values)
		}
		if string(data) != string(first.Raw) || string(first.Raw) != string(ptpState("n1", "LOCKED", 7)) {
			t.Errorf("%s: EventOf's data %q, the bundle's Raw %q: want the event's data", spec, data, first.Raw)
		}
		a, f := again.Attrs.(*cne.Context), first.Attrs.(*cne.Context)
		if a.Type != f.Type || a.ID != f.ID || a.Source != f.Source || !a.Time.Equal(f.Time) || a.Origin != f.Origin {
			t.Errorf("%s: rebuilt attributes %+v, want %+v", spec, a, f)
		}
	}
	if _, _, ok := (cne.Family{}).EventOf(&bundle.Bundle{Type: "heartbeat", Raw: []byte("{}")}); ok {
		t.Error("EventOf took another type's bundle")
	}
	if _, _, ok := (cne.Family{}).EventOf(&bundle.Bundle{Type: cne.BundleType, Raw: ptpState("n1", "LOCKED", 7)}); ok {
		t.Error("EventOf took a bundle without the event's attributes")
	}
}
