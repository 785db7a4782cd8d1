package transport

import (
	"context"
	"errors"
	"fmt"
	"slices"
	"strings"
	"time"

	"github.com/cloudevents/sdk-go/protocol/kafka_confluent/v2"
	"github.com/cloudevents/sdk-go/v2/binding"
	"github.com/cloudevents/sdk-go/v2/event"
	"github.com/confluentinc/confluent-kafka-go/v2/kafka"

	"github.com/stbridge/stb/pkg/bundle"
	"github.com/stbridge/stb/pkg/deadletter"
)

// A Family reads the events of one wire profile beside STB's own format:
// OCM's work agents, Cloud Native Events publishers, the multicluster
// global-hub agent. A family is told apart by the event type alone, and
// reads its events in one of two ways, each an interface of its own:
//
//   - a Mapper maps each event, read whole by the CloudEvents binding
//     (binary or structured mode, any spec version the library reads),
//     onto a bundle (work, cne);
//   - a MessageDecoder decodes the Kafka message itself, with its own
//     checks and without the binding's allocations on its hot path (the
//     global-hub agent's events, globalhub.go).
//
// A family may also assemble events its senders cut into chunks before
// they are decoded (Assembler), and keep state of its own per hub that a
// bridge restores from the database, evicts with the hub's unit and
// forgets when the hub is deleted or reset (Stateful). Adding a family
// adds it to Deps.Families and its syncers to the registry: the reader,
// the conflation units and the writers are not changed for it. NewReader
// refuses a family that is neither a Mapper nor a MessageDecoder.
//
// A family's methods must be pure but for what the family itself keeps,
// safe to call from the reader's decoding goroutine (one at a time per
// reader) and, for Stateful, from the bridge's at the same time, and must
// not panic on bad input (a panic is caught and dead-lettered as
// decode_panic, but it is a bug).
type Family interface {
	// Name is the family's profile name, used in errors and logs.
	Name() string
	// Owns reports whether an event of CloudEvents type typ is the
	// family's. Types of two families must not overlap.
	Owns(typ string) bool
}

// A Mapper is a Family that maps events, as the CloudEvents binding reads
// them, onto bundles; the reader hands it each event it owns.
type Mapper interface {
	Family
	// Bundle makes a bundle of ev: Hub, Type, Version (and Dependency if
	// the type has one) and Raw, the data the type's decoder will read;
	// for a family whose decoder needs more of the event than its data,
	// Attrs, what it keeps of the rest, and Held, what Attrs keep in
	// memory beyond the bundle's own structure. The reader fills in
	// Size, Origin, Message, ReceivedAt, and EventTime when the family
	// leaves it zero, and adds to Held what it counts of every bundle
	// (Raw, the message's key and headers, the bundle's structures:
	// heldBytes). An error is a reject: ErrSkip (or
	// one wrapping it) for an event the family knows but does not store,
	// counted and skipped; otherwise a dead letter with the reason the
	// error carries (deadletter.Reasoned, such as dbsyncers.PermanentError),
	// bad_payload if it carries none.
	Bundle(ev *Event) (*bundle.Bundle, error)
}

// A MessageDecoder is a Family that decodes the Kafka messages of its
// events itself. The reader asks it after every Mapper: a message a
// Mapper owns is never a MessageDecoder's.
type MessageDecoder interface {
	Family
	// Claims reports, from msg's headers alone and without allocating,
	// whether msg may be the family's: its binary-mode type is, or it has
	// none (structured mode, which only parsing tells).
	Claims(msg *kafka.Message) bool
	// DecodeMessage decodes a message Claims took, as Decode does: a
	// bundle or a reject, exactly one, never a panic. A message that
	// turns out not to be the family's (a structured-mode event of
	// another type) it leaves to Decode, STB's format.
	DecodeMessage(msg *kafka.Message, rules Rules, receivedAt time.Time) (*bundle.Bundle, *Reject)
}

// An Assembler is a Family whose senders cut the data of a large event
// into chunks, each sent as the event with the chunk as its data and the
// extensions ExtChunkSize (the whole data's length) and ExtChunkOffset
// (where the chunk ends in it), one sender's chunks in order on one
// partition (the global-hub agent's producer: globalhub_chunks.go). The
// reader holds the chunks before decoding, counted in
// --max-buffered-bytes and given up after --chunk-timeout, and hands the
// family the whole event as one message at its first chunk's offset.
type Assembler interface {
	Family
	// MayChunk reports, without allocating, whether msg needs assembling:
	// it is the family's and carries a chunk extension, or it is the
	// family's and open says some event is being assembled (it may end
	// its sender's event, which is then given up).
	MayChunk(msg *kafka.Message, open bool) bool
	// MaxEventBytes is the largest whole event the family assembles for
	// the configured --max-bundle-bytes; an event larger than that has
	// each of its chunks decoded alone (and rejected).
	MaxEventBytes(configured int) int
	// ChunkLetter is the hub and bundle type the dead letter of an event
	// given up on names, from its first chunk's source and event type.
	ChunkLetter(source, typ string) (hub, bundleType string)
}

// A Stateful family keeps state of its own per hub beside the versions
// (the global-hub agent's runs): it learns it from the events it decodes,
// has it written with each bundle (bundle.Bundle.FamilyState) and gets it
// back from the database when a bridge starts or is assigned a hub's
// partitions (Restore). The bridge evicts it with the hub's conflation
// unit (Evict) and drops it when the hub is deleted or reset (Forget),
// before restoring what the database still holds of the hub. Its methods
// are called from the bridge's goroutines while the reader decodes.
type Stateful interface {
	Family
	// Restore records what stb.bundle_versions holds of a hub's bundle
	// type: its version, where the bundle was read, and the family's
	// state as its bundles carried it (nil when none was stored). A type
	// that is not the family's is ignored, and so is a state older than
	// what the family knows.
	Restore(hub, bundleType string, v bundle.Version, at bundle.Origin, state []byte)
	// Forget drops everything the family keeps of hub.
	Forget(hub string)
	// Evict shrinks what the family keeps of each hub evicted reports
	// true for (its unit was evicted as idle) to what the database holds
	// of it, as a restarted bridge would know it, and returns how many
	// hubs it evicted.
	Evict(evicted func(hub string) bool) int
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

// familyOf returns the Mapper that owns msg's binary-mode type, or, for a
// message without a ce_type header (structured mode, which only parsing
// tells), the family that owns the type of the parsed event, with that
// event. It returns nil when no family owns the message.
func familyOf(families []Mapper, msg *kafka.Message) (Mapper, *event.Event) {
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
func decodeFamily(f Mapper, msg *kafka.Message, ev *event.Event, rules Rules, receivedAt time.Time) (*bundle.Bundle, *Reject) {
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
	// Held so far is the family's count of its Attrs (Mapper.Bundle).
	b.Size, b.Held = len(b.Raw), b.Held+heldBytes(msg, len(b.Raw))
	b.Origin, b.ReceivedAt, b.Message = origin, receivedAt, keepMessage(msg)
	if b.EventTime.IsZero() {
		b.EventTime = ev.Time()
	}
	if b.EventTime.IsZero() {
		b.EventTime = msg.Timestamp
	}
	return b, nil
}

// decodeMessage decodes one message with the families the reader has.
func (r *Reader) decodeMessage(msg *kafka.Message) (*bundle.Bundle, *Reject) {
	return r.families.decode(msg, r.rules, time.Now())
}

// DecodeFamilies is Decode for a reader with families beside STB's own
// format: an event a Mapper owns is the Mapper's, one a MessageDecoder
// claims is the MessageDecoder's (in the order of families), and anything
// else is Decode's.
func DecodeFamilies(msg *kafka.Message, rules Rules, families []Family, receivedAt time.Time) (*bundle.Bundle, *Reject) {
	return splitFamilies(families).decode(msg, rules, receivedAt)
}

// DecodeProfiles is DecodeFamilies with gh, when not nil, among the
// families, after them: the form callers had before the global-hub
// profile was a Family. New code calls DecodeFamilies.
func DecodeProfiles(msg *kafka.Message, rules Rules, gh *GlobalHub, families []Family, receivedAt time.Time) (*bundle.Bundle, *Reject) {
	if gh != nil {
		families = append(slices.Clip(families), gh)
	}
	return DecodeFamilies(msg, rules, families, receivedAt)
}

// familySet is the families of one reader by what they offer.
type familySet struct {
	mappers    []Mapper
	decoders   []MessageDecoder
	assemblers []Assembler
}

// splitFamilies sorts families by the interfaces they implement; one that
// is neither a Mapper nor a MessageDecoder is in neither (NewReader
// refuses it: checkFamilies).
func splitFamilies(families []Family) familySet {
	var s familySet
	for _, f := range families {
		switch f := f.(type) {
		case Mapper:
			s.mappers = append(s.mappers, f)
		case MessageDecoder:
			s.decoders = append(s.decoders, f)
		}
		if a, ok := f.(Assembler); ok {
			s.assemblers = append(s.assemblers, a)
		}
	}
	return s
}

// checkFamilies says what is wrong with a reader's families, if anything.
func checkFamilies(families []Family) error {
	names := map[string]bool{}
	for i, f := range families {
		if f == nil {
			return fmt.Errorf("transport reader: family %d is nil", i)
		}
		_, mapper := f.(Mapper)
		_, decoder := f.(MessageDecoder)
		if !mapper && !decoder {
			return fmt.Errorf("transport reader: family %q is neither a Mapper nor a MessageDecoder, so it cannot read its events", f.Name())
		}
		if names[f.Name()] {
			return fmt.Errorf("transport reader: family %q is given twice", f.Name())
		}
		names[f.Name()] = true
	}
	return nil
}

func (s familySet) decode(msg *kafka.Message, rules Rules, receivedAt time.Time) (*bundle.Bundle, *Reject) {
	if f, ev := familyOf(s.mappers, msg); f != nil {
		return decodeFamily(f, msg, ev, rules, receivedAt)
	}
	for _, d := range s.decoders {
		if d.Claims(msg) {
			return d.DecodeMessage(msg, rules, receivedAt)
		}
	}
	return Decode(msg, rules, receivedAt)
}
