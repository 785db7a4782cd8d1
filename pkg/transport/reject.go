package transport

import (
	"unsafe"

	"github.com/confluentinc/confluent-kafka-go/v2/kafka"

	"github.com/stbridge/stb/pkg/bundle"
	"github.com/stbridge/stb/pkg/deadletter"
)

// Reject is a message that could not become a bundle: the dead letter
// that explains it, from the reader to the dead-letter store, and the
// message's place in its partition. It is also an error.
type Reject struct {
	// Letter is what is stored. Its Key, Headers and Data are the raw
	// message (Data is not copied); Hub, Type and Version are filled as
	// far as they were read: Type is the full CloudEvents type, Version
	// the raw extversion text.
	deadletter.Letter
	// Skipped marks a valid message of a type the bridge knows but does
	// not store (Reason is empty): it is counted and done, never a dead
	// letter.
	Skipped bool

	tracker bundle.Tracker
}

// Rejects receives rejected messages' letters; *deadletter.Queue
// implements it. Add is called from the reader's decoding goroutine and
// must not block or do I/O: the message's offset stays outstanding until
// the receiver calls release, once the dead letter is stored, so the
// committed position never passes a letter that could still be lost.
type Rejects interface {
	Add(l deadletter.Letter, release func())
}

// Track makes r report its message done to t when Release is called.
func (r *Reject) Track(t bundle.Tracker) { r.tracker = t }

// Release tells the tracker, if any, that r's message is no longer needed:
// its dead letter is stored.
func (r *Reject) Release() {
	if r.tracker != nil {
		r.tracker.Done(r.Origin)
	}
}

// Error describes the reject.
func (r *Reject) Error() string {
	if r.Err == nil {
		return "message rejected: " + string(r.Reason)
	}
	return "message rejected: " + string(r.Reason) + ": " + r.Err.Error()
}

// Unwrap returns the underlying error.
func (r *Reject) Unwrap() error { return r.Err }

// keptMessage is what a bundle keeps of the message it was read from
// (bundle.Bundle.Message), for a dead letter of its data written by a
// worker: its key and headers as the client gave them, not the
// *kafka.Message, which would keep its value too where the bundle's data
// is another buffer (joined chunks) and the message struct itself. Packing
// them into one buffer instead kept less on the global-hub backlog but
// allocated at read for every message, which raised the heap's peak where
// few large bundles are held (TestBackpressureBacklog: 28.7 → 32.7 MiB).
type keptMessage struct {
	key     []byte
	headers []kafka.Header
}

// keepMessage keeps msg's key and headers.
func keepMessage(msg *kafka.Message) *keptMessage {
	return &keptMessage{key: msg.Key, headers: msg.Headers}
}

// A bundle read from Kafka keeps beside its data the bundle itself, its
// keptMessage and, per header, the kafka.Header and the client's two
// allocations of its key and value (heldBytes). On a 1 KiB message with
// STB's seven headers that is about as much again as the data, which
// --max-buffered-bytes counted alone before (issue 22: a 10,000-hub
// catch-up held 261 MiB of data and 330 MiB beside it).
var (
	heldPerBundle = int(unsafe.Sizeof(bundle.Bundle{}) + unsafe.Sizeof(keptMessage{}))
	heldPerHeader = int(unsafe.Sizeof(kafka.Header{})) + 2*minAllocation
)

// minAllocation is the smallest size class of Go's allocator that holds
// a string or slice's bytes (below it tiny allocations share blocks).
const minAllocation = 16

// heldBytes is bundle.Bundle.Held for a bundle of data bytes kept with
// msg's key and headers.
func heldBytes(msg *kafka.Message, data int) int {
	n := data + len(msg.Key) + heldPerBundle
	for _, h := range msg.Headers {
		n += heldPerHeader + len(h.Key) + len(h.Value)
	}
	return n
}

// Letter returns the message's key and a copy of its headers.
func (m *keptMessage) Letter() (key []byte, headers map[string]string) {
	return m.key, headerMap(m.headers)
}

func headerMap(hs []kafka.Header) map[string]string {
	if len(hs) == 0 {
		return nil
	}
	out := make(map[string]string, len(hs))
	for _, h := range hs {
		out[h.Key] = string(h.Value)
	}
	return out
}

// newReject captures the raw message. The headers are copied into a map
// here, on the reject path only, so accepted messages never pay for it.
func newReject(msg *kafka.Message, origin bundle.Origin, reason deadletter.Reason, err error) *Reject {
	r := &Reject{Letter: deadletter.Letter{Reason: reason, Err: err, Origin: origin}}
	if msg == nil {
		return r
	}
	r.Key, r.Data, r.Headers = msg.Key, msg.Value, headerMap(msg.Headers)
	return r
}
