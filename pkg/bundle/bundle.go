package bundle

import (
	"errors"
	"time"
)

// Kind says how the bridge treats a bundle type.
type Kind uint8

const (
	// Complete bundles carry a hub's whole state of one kind; only the
	// latest one not yet written matters, so older ones are conflated away.
	Complete Kind = iota + 1
	// Delta bundles carry changes on top of one complete base bundle; they
	// are kept in order and written as one group.
	Delta
	// Stream bundles carry events; every one is written, none conflated.
	Stream
)

func (k Kind) String() string {
	switch k {
	case Complete:
		return "complete"
	case Delta:
		return "delta"
	case Stream:
		return "stream"
	}
	return "unknown"
}

// Origin is where a bundle was read from. The committer uses it to decide
// how far each partition may be committed.
type Origin struct {
	Topic     string
	Partition int32
	Offset    int64
}

// Tracker is told when the bridge no longer needs a bundle's message: it was
// written, found stale, conflated away or dead-lettered. Implementations
// must be safe for concurrent use and must not block.
type Tracker interface {
	Done(o Origin)
}

// Bundle is one status report of one hub: read and checked as far as the
// version fence and the conflation need (hub, type, versions, size), with
// its data kept raw until it is about to be written (Decode). Once
// inserted into a conflation unit it is not modified but by Supersede and
// Decode, by whoever holds it: the unit, under its lock, while it is
// pending and no worker has it; the worker that took it in a job. The unit
// hands the same pointer to a worker while it keeps accepting newer
// bundles.
type Bundle struct {
	Hub  string
	Type string
	// Version orders bundles of one hub and type.
	Version Version
	// Dependency is the version of the base bundle this one builds on
	// (extdependencyversion); HasDependency says whether one was sent.
	Dependency    Version
	HasDependency bool

	// Raw is the event data as read (for the global-hub profile, its
	// chunks joined), which Decode
	// turns into Payload and a dead letter keeps. Most bundles are
	// replaced by a newer one of their hub and type before they are
	// written, so the bridge decodes a payload only when it is about to
	// write it (or to merge it with other deltas), never when it reads it.
	Raw []byte
	// Attrs is what the bundle's family kept of its event besides the
	// data (its attributes and extensions, checked), for the type's
	// decoder, which is handed the bundle, and for the family's dead
	// letters, which rebuild the event from Attrs and Raw. It is the
	// family's own, of a type only the family knows; nil for bundles
	// whose data is all they carry (STB's own format, the global-hub
	// agent's). Like Raw, it is not modified once the bundle is built,
	// and a bundle built from others (merged deltas) has none.
	Attrs any
	// Payload is the decoded data, of the type the bundle type's decoder
	// returns: nil until Decode, or set by whoever built the bundle (a
	// merge of deltas, a test), which then counts as decoded. Size is the
	// length of the raw data, decoded or not.
	Payload any
	Size    int
	// Held is what the bundle keeps in memory while it is buffered, the
	// figure --max-buffered-bytes counts (HeldBytes): its raw data and,
	// for a bundle read from Kafka, the message's key and headers (as
	// the client made them), the bundle's own structures, which on
	// small messages weigh more than the data, and what its family keeps
	// in Attrs (the family counts that, the reader the rest:
	// transport.Mapper). 0 counts Size alone.
	Held int

	// RunID is the CloudEvents id of the event that started the sender's
	// run this bundle belongs to, for senders whose versions start again
	// when they restart (the global-hub agent); empty otherwise. It is
	// recorded with the version, so that a late copy of that event is
	// known for one after a restart of the bridge.
	RunID string
	// FamilyState, set by a family that keeps state of its own per hub
	// and type (transport.Stateful: the global-hub agent's runs), is that
	// state as of this bundle, which the version fence stores with the
	// bundle's version (stb.bundle_versions.family_state) for the family
	// to restore; nil keeps what is stored. RunID and StartFrame are
	// what it records of this bundle.
	FamilyState State
	// StartFrame is, for an event read at its run's first version other
	// than the run's first event (a frame of the resync the sender sends
	// when it starts), a hash of its CloudEvents id; 0 otherwise. Recorded
	// with the version, so that a late copy of it read after a restart of
	// the bridge is known for a copy, not a new run.
	StartFrame int64

	Origin Origin
	// Message is the message the bundle was read from, for a dead letter
	// that keeps it to be replayed (its data is Raw); nil for a bundle
	// built otherwise. Holding it keeps the message's headers, which the
	// reader's client allocated anyway, while the bundle is held.
	Message    Message
	EventTime  time.Time // when the hub produced it (CloudEvents time)
	ReceivedAt time.Time // when the bridge read it

	// decoded says Decode ran to its end; decodeErr is what it returned.
	decoded   bool
	decodeErr error

	tracker Tracker
	// carried is the message of an older bundle b replaced before either
	// was written, held until b is released (Supersede).
	carried        Origin
	carriedTracker Tracker
}

// Message is the message a bundle was read from, as a dead letter keeps
// it: the key and the headers (the reader's CloudEvents attributes), copied
// only when a letter is written.
type Message interface {
	Letter() (key []byte, headers map[string]string)
}

// DecodeFunc decodes a bundle into the payload of its type: from its Raw
// and, for a family's bundle, its Attrs. It is handed the bundle itself,
// not its bytes alone, so that what an event says besides its data
// travels beside Raw, not inside it. It must not modify the bundle (Decode
// sets the payload). dbsyncers.Registry.Decode is the bridge's.
type DecodeFunc = func(b *Bundle) (any, error)

// Decode decodes b into Payload with decode, the first time it is
// called, and returns decode's error; later calls return that error again
// without decoding, so that a job retried after a failed write, or deltas
// merged and then written, decode their data once. A bundle whose Payload
// is already set counts as decoded. Call it only while holding b (see
// Bundle).
func (b *Bundle) Decode(decode DecodeFunc) error {
	if b.decoded || b.Payload != nil {
		return b.decodeErr
	}
	b.Payload, b.decodeErr = decode(b)
	if b.decodeErr != nil {
		b.Payload = nil
	}
	b.decoded = true
	return b.decodeErr
}

// Decoded reports whether b's payload was decoded (successfully or not)
// or set by whoever built b.
func (b *Bundle) Decoded() bool { return b.decoded || b.Payload != nil }

// Track makes b report its message done to t when Release is called.
func (b *Bundle) Track(t Tracker) { b.tracker = t }

// Release tells the tracker, if any, that b's message is no longer needed,
// and the message b carries for a bundle it replaced (Supersede). Call it
// exactly once per tracked bundle.
func (b *Bundle) Release() {
	if b.tracker != nil {
		b.tracker.Done(b.Origin)
	}
	if b.carriedTracker != nil {
		b.carriedTracker.Done(b.carried)
		b.carriedTracker = nil
	}
}

// Supersede makes b, which replaces old before either was written, hold
// the oldest message old holds until b is released: old's own, or the one
// old carries for a bundle it replaced in turn. old's other message is
// released with old as usual. See TypeInfo.HoldsReplaced.
func (b *Bundle) Supersede(old *Bundle) {
	if b.carriedTracker != nil {
		return // already holds an older one
	}
	if old.carriedTracker != nil {
		b.carried, b.carriedTracker = old.carried, old.carriedTracker
		old.carriedTracker = nil
		return
	}
	if old.tracker != nil {
		b.carried, b.carriedTracker = old.Origin, old.tracker
		old.tracker = nil
	}
}

// ErrUnknownType is wrapped by errors about a bundle type that no syncer
// is registered for: the transport's decoder and the registry's Apply
// return it.
var ErrUnknownType = errors.New("unknown bundle type")

// HeldBytes is what the bundle holds in memory while buffered: Held, or
// Size when Held is not set.
func (b *Bundle) HeldBytes() int {
	if b.Held > 0 {
		return b.Held
	}
	return b.Size
}

// State is a family's own state of a hub and type as of one bundle
// (Bundle.FamilyState), opaque to everyone but the family: encoded only
// when the bundle is written, so a bundle replaced before that costs no
// encoding.
type State interface {
	// EncodeState returns the state as the family stores it: a JSON
	// value (a jsonb column), nil for none.
	EncodeState() []byte
}
