package transport

import (
	"context"
	"errors"
	"fmt"
	"strings"
	"time"

	"github.com/cloudevents/sdk-go/protocol/kafka_confluent/v2"
	"github.com/cloudevents/sdk-go/v2/binding"
	"github.com/cloudevents/sdk-go/v2/event"
	"github.com/confluentinc/confluent-kafka-go/v2/kafka"

	"github.com/stbridge/stb/pkg/bundle"
	"github.com/stbridge/stb/pkg/deadletter"
)

// A Family maps the CloudEvents of one status family onto bundles: the
// events of senders that are neither STB's envelope (Decode) nor the
// global-hub agent (GlobalHub), such as OCM's work agents or Cloud Native
// Events publishers. A family is told apart by the event type alone; the
// reader hands it each event it owns, read whole by the CloudEvents
// binding (binary or structured mode, any spec version the library
// reads), and stores or rejects what it returns. Adding a family adds a
// Family to Deps.Families and its syncers to the registry: the reader,
// the conflation units and the writers are not changed for it.
//
// Bundle must be pure but for what the family itself keeps, safe to call
// from the reader's decoding goroutine (one at a time per reader), and must
// not panic on bad input (a panic is caught and dead-lettered as
// decode_panic, but it is a bug).
type Family interface {
	// Name is the family's profile name, used in errors and logs.
	Name() string
	// Owns reports whether an event of CloudEvents type typ is the
	// family's. Types of two families must not overlap.
	Owns(typ string) bool
	// Bundle makes a bundle of ev: Hub, Type, Version (and Dependency if
	// the type has one) and Raw, the data the type's decoder will read.
	// The reader fills in Size, Origin, Message, ReceivedAt, and EventTime
	// when the family leaves it zero. An error is a reject: ErrSkip (or
	// one wrapping it) for an event the family knows but does not store,
	// counted and skipped; otherwise a dead letter with the reason the
	// error carries (deadletter.Reasoned, such as dbsyncers.PermanentError),
	// bad_payload if it carries none.
	Bundle(ev *Event) (*bundle.Bundle, error)
}

// ErrSkip is returned by Family.Bundle for an event of the family that is
// valid but not a status to store (a spec event, a resync request, a
// heartbeat): the reader counts it in stb_transport_skipped_total, under
// the family's name, and marks it done, never a dead letter.
var ErrSkip = errors.New("not stored")

// Event is one CloudEvent as a Family sees it: the event as the binding
// reads it, and where it came from.
type Event struct {
	event.Event
	// Key is the Kafka message key (nil when it has none).
	Key []byte
	// Origin is the message's topic, partition and offset.
	Origin bundle.Origin
	// Timestamp is the broker's timestamp of the message.
	Timestamp time.Time
}

// familyOf returns the family that owns msg's binary-mode type, or, for a
// message without a ce_type header (structured mode, which only parsing
// tells), the family that owns the type of the parsed event, with that
// event. It returns nil when no family owns the message.
func familyOf(families []Family, msg *kafka.Message) (Family, *event.Event) {
	if len(families) == 0 {
		return nil, nil
	}
	if typ, ok := header(msg, headerType); ok {
		for _, f := range families {
			if f.Owns(strings.TrimSpace(typ)) {
				return f, nil
			}
		}
		return nil, nil
	}
	if msg.TopicPartition.Topic == nil || msg.TopicPartition.Partition < 0 || msg.TopicPartition.Offset < 0 {
		return nil, nil // Decode's rejects for these
	}
	ev, err := binding.ToEvent(context.Background(), kafka_confluent.NewMessage(msg))
	if err != nil {
		return nil, nil // not a CloudEvent: Decode says so
	}
	for _, f := range families {
		if f.Owns(ev.Type()) {
			return f, ev
		}
	}
	return nil, nil
}

// decodeFamily turns msg, an event family f owns, into a bundle or a
// reject. ev is the event when familyOf already read it.
func decodeFamily(f Family, msg *kafka.Message, ev *event.Event, rules Rules, receivedAt time.Time) (*bundle.Bundle, *Reject) {
	tp := msg.TopicPartition
	origin := bundle.Origin{Topic: *tp.Topic, Partition: tp.Partition, Offset: int64(tp.Offset)}
	if ev == nil {
		var err error
		if ev, err = binding.ToEvent(context.Background(), kafka_confluent.NewMessage(msg)); err != nil {
			return nil, newReject(msg, origin, deadletter.NotCloudEvent, err)
		}
	}
	if err := ev.Validate(); err != nil {
		r := newReject(msg, origin, deadletter.MissingAttribute, err)
		r.Hub, r.Type = ev.Source(), ev.Type()
		return nil, r
	}
	if len(ev.Data()) > rules.MaxBundleBytes {
		r := newReject(msg, origin, deadletter.TooLarge, fmt.Errorf("data is %d bytes, limit %d", len(ev.Data()), rules.MaxBundleBytes))
		r.Hub, r.Type = ev.Source(), ev.Type()
		return nil, r
	}
	b, err := f.Bundle(&Event{Event: *ev, Key: msg.Key, Origin: origin, Timestamp: msg.Timestamp})
	if err != nil {
		if errors.Is(err, ErrSkip) {
			// Its Type is the family's name, what it is counted under
			// (stb_transport_skipped_total): the event's type is the
			// sender's to choose, and a label must not be.
			r := newReject(msg, origin, "", err)
			r.Hub, r.Type, r.Skipped = ev.Source(), f.Name(), true
			return nil, r
		}
		r := newReject(msg, origin, payloadReason(err), fmt.Errorf("%s: %w", f.Name(), err))
		r.Hub, r.Type = ev.Source(), ev.Type()
		if b != nil {
			r.Hub = b.Hub
		}
		return nil, r
	}
	if err := checkHubName(b.Hub); err != nil {
		r := newReject(msg, origin, deadletter.InvalidHub, err)
		r.Hub, r.Type = b.Hub, ev.Type()
		return nil, r
	}
	if !rules.Decoder.Known(b.Type) {
		// The family and the registry disagree: a bug, but one message's.
		r := newReject(msg, origin, deadletter.UnknownType, fmt.Errorf("%w: family %s made a %q bundle, which no syncer writes", bundle.ErrUnknownType, f.Name(), b.Type))
		r.Hub, r.Type = b.Hub, ev.Type()
		return nil, r
	}
	b.Size, b.Held = len(b.Raw), heldBytes(msg, len(b.Raw))
	b.Origin, b.ReceivedAt, b.Message = origin, receivedAt, keepMessage(msg)
	if b.EventTime.IsZero() {
		b.EventTime = ev.Time()
	}
	if b.EventTime.IsZero() {
		b.EventTime = msg.Timestamp
	}
	return b, nil
}
