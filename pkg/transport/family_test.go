package transport_test

import (
	"context"
	"strings"
	"testing"
	"time"

	"github.com/cloudevents/sdk-go/protocol/kafka_confluent/v2"
	"github.com/cloudevents/sdk-go/v2/binding"
	"github.com/cloudevents/sdk-go/v2/event"
	"github.com/confluentinc/confluent-kafka-go/v2/kafka"

	"github.com/stbridge/stb/pkg/bundle"
	"github.com/stbridge/stb/pkg/deadletter"
	"github.com/stbridge/stb/pkg/transport"
)

// toyFamily owns the types under "org.example.toy.": "….status" becomes a
// "heartbeat" bundle of the hub named by the "cluster" extension, "….ping"
// is skipped, "….broken" fails with the reason its "reason" extension
// names, and "….stray" makes a bundle of a type no syncer writes. A
// status with an "attrs" extension keeps it in the bundle's Attrs, which
// it counts as toyAttrsHeld bytes.
type toyFamily struct{ seen []*transport.Event }

// toyAttrsHeld is what toyFamily counts for the Attrs it keeps: more than
// the reader counts for any message of these tests.
const toyAttrsHeld = 1 << 20

const toyPrefix = "org.example.toy."

func (f *toyFamily) Name() string         { return "toy" }
func (f *toyFamily) Owns(typ string) bool { return strings.HasPrefix(typ, toyPrefix) }

func (f *toyFamily) Bundle(ev *transport.Event) (*bundle.Bundle, error) {
	f.seen = append(f.seen, ev)
	ext := ev.Extensions()
	switch strings.TrimPrefix(ev.Type(), toyPrefix) {
	case "ping":
		return nil, transport.ErrSkip
	case "broken":
		reason, _ := ext["reason"].(string)
		return nil, reasoned{deadletter.Reason(reason)}
	case "stray":
		return &bundle.Bundle{Hub: "h", Type: "toy.stray", Raw: ev.Data()}, nil
	}
	cluster, _ := ext["cluster"].(string)
	b := &bundle.Bundle{Hub: cluster, Type: "heartbeat", Raw: ev.Data()}
	if a, ok := ext["attrs"].(string); ok {
		b.Attrs, b.Held = a, toyAttrsHeld
	}
	return b, nil
}

type reasoned struct{ r deadletter.Reason }

func (e reasoned) Error() string                       { return "broken: " + string(e.r) }
func (e reasoned) DeadLetterReason() deadletter.Reason { return e.r }

// toyMessage encodes a CloudEvent of spec version spec as a consumed
// message, in binary mode or structured.
func toyMessage(t *testing.T, spec, typ string, structured bool, data string, ext map[string]string) *kafka.Message {
	t.Helper()
	ev := event.New(spec)
	ev.SetID("id-1")
	ev.SetSource("agent-a")
	ev.SetType(typ)
	ev.SetTime(time.Date(2026, 3, 4, 5, 6, 7, 8, time.UTC))
	for k, v := range ext {
		ev.SetExtension(k, v)
	}
	if err := ev.SetData(event.ApplicationJSON, []byte(data)); err != nil {
		t.Fatal(err)
	}
	ctx := context.Background()
	if structured {
		ctx = binding.WithForceStructured(ctx)
	}
	topic := "families"
	msg := &kafka.Message{TopicPartition: kafka.TopicPartition{Topic: &topic}}
	if err := kafka_confluent.WriteProducerMessage(ctx, binding.ToMessage(&ev), msg); err != nil {
		t.Fatal(err)
	}
	return consumed(msg, 2, 41)
}

func TestFamilyDecode(t *testing.T) {
	received := time.Date(2026, 3, 4, 5, 7, 0, 0, time.UTC)
	rules := transport.Rules{TypePrefix: transport.DefaultTypePrefix, MaxBundleBytes: 1 << 10, Decoder: testDecoders()}
	for _, spec := range []string{event.CloudEventsVersionV1, event.CloudEventsVersionV03} {
		for _, structured := range []bool{false, true} {
			name := spec + map[bool]string{false: "/binary", true: "/structured"}[structured]
			t.Run(name, func(t *testing.T) {
				f := &toyFamily{}
				fams := []transport.Family{f}
				decode := func(msg *kafka.Message) (*bundle.Bundle, *transport.Reject) {
					return transport.DecodeFamilies(msg, rules, fams, received)
				}

				b, rej := decode(toyMessage(t, spec, toyPrefix+"status", structured, `{"objects":[]}`, map[string]string{"cluster": "c1"}))
				if rej != nil {
					t.Fatalf("status: rejected: %v", rej)
				}
				want := bundle.Origin{Topic: "families", Partition: 2, Offset: 41}
				if b.Hub != "c1" || b.Type != "heartbeat" || string(b.Raw) != `{"objects":[]}` || b.Size != len(b.Raw) ||
					b.Origin != want || !b.ReceivedAt.Equal(received) || b.Message == nil {
					t.Errorf("status: bundle %+v, want hub c1, type heartbeat, the data, origin %v", b, want)
				}
				if !b.EventTime.Equal(time.Date(2026, 3, 4, 5, 6, 7, 8, time.UTC)) {
					t.Errorf("status: event time %v, want the event's time", b.EventTime)
				}
				if len(f.seen) != 1 || f.seen[0].Origin != want || f.seen[0].Timestamp != brokerTime {
					t.Errorf("the family saw %d events, the last %+v; want one from %v at the broker's time", len(f.seen), f.seen, want)
				}

				if b.Attrs != nil || b.Held <= b.Size || b.Held >= toyAttrsHeld {
					t.Errorf("status: attrs %v, held %d; want none, and the reader's count of the data and message", b.Attrs, b.Held)
				}
				// What the family keeps beside the data is the bundle's,
				// and counted: the reader adds its count to the family's.
				kept, rej := decode(toyMessage(t, spec, toyPrefix+"status", structured, `{"objects":[]}`, map[string]string{"cluster": "c1", "attrs": "kept"}))
				if rej != nil {
					t.Fatalf("status with attrs: rejected: %v", rej)
				}
				if kept.Attrs != "kept" || kept.Held <= toyAttrsHeld+kept.Size {
					t.Errorf("status with attrs: attrs %v, held %d; want the family's, held above its %d and the data's %d", kept.Attrs, kept.Held, toyAttrsHeld, kept.Size)
				}
				if _, rej := decode(toyMessage(t, spec, toyPrefix+"ping", structured, `{}`, nil)); rej == nil || !rej.Skipped || rej.Reason != "" {
					t.Errorf("ping: %+v, want skipped without a reason", rej)
				}
				if _, rej := decode(toyMessage(t, spec, toyPrefix+"broken", structured, `{}`, map[string]string{"reason": string(deadletter.MissingAttribute)})); rej == nil || rej.Skipped ||
					rej.Reason != deadletter.MissingAttribute || !strings.Contains(rej.Error(), "toy: broken") {
					t.Errorf("broken: %v, want a missing_attribute reject naming the family", rej)
				}
				if _, rej := decode(toyMessage(t, spec, toyPrefix+"stray", structured, `{}`, nil)); rej == nil || rej.Reason != deadletter.UnknownType {
					t.Errorf("stray: %v, want unknown_type (no syncer writes toy.stray)", rej)
				}
				if _, rej := decode(toyMessage(t, spec, toyPrefix+"status", structured, `{}`, map[string]string{"cluster": "bad\x01name"})); rej == nil || rej.Reason != deadletter.InvalidHub {
					t.Errorf("bad cluster name: %v, want invalid_hub", rej)
				}
				big := `{"pad":"` + strings.Repeat("x", 2<<10) + `"}`
				if _, rej := decode(toyMessage(t, spec, toyPrefix+"status", structured, big, map[string]string{"cluster": "c1"})); rej == nil || rej.Reason != deadletter.TooLarge {
					t.Errorf("large: %v, want too_large", rej)
				}
			})
		}
	}
}

// With a family, a message no family owns is decoded as before: STB's
// envelope, or not a CloudEvent at all.
func TestFamilyLeavesOthersAlone(t *testing.T) {
	rules := transport.Rules{TypePrefix: transport.DefaultTypePrefix, MaxBundleBytes: 1 << 20, Decoder: testDecoders()}
	f := &toyFamily{}
	fams := []transport.Family{f}
	msg := consumed(mustEncode(t, transport.Envelope{Topic: "status", Hub: "hub-1", Type: "heartbeat", Version: bundle.Version{Incarnation: 1, Generation: 2}, Data: []byte(`{"objects":[]}`)}), 0, 7)
	got, rej := transport.DecodeFamilies(msg, rules, fams, time.Now())
	plain, prej := transport.Decode(msg, rules, time.Now())
	if rej != nil || prej != nil || got.Hub != plain.Hub || got.Type != plain.Type || got.Version != plain.Version {
		t.Errorf("STB envelope with a family: %+v, %v; without: %+v, %v", got, rej, plain, prej)
	}
	topic := "families"
	junk := consumed(&kafka.Message{TopicPartition: kafka.TopicPartition{Topic: &topic}, Value: []byte("not an event")}, 0, 8)
	if _, rej := transport.DecodeFamilies(junk, rules, fams, time.Now()); rej == nil || rej.Reason != deadletter.NotCloudEvent {
		t.Errorf("junk: %v, want not_cloudevent", rej)
	}
	if len(f.seen) != 0 {
		t.Errorf("the family saw %d events it does not own", len(f.seen))
	}
}
