package transport

import (
	"context"

	"github.com/confluentinc/confluent-kafka-go/v2/kafka"

	"github.com/stbridge/stb/pkg/bundle"
)

// Reasons a message is rejected on read. They label
// stb_transport_rejected_total and are stored with the dead letter.
const (
	// ReasonNotCloudEvent: no CloudEvents 1.0 event could be read from the
	// message (no ce_specversion header, an unparsable attribute, …).
	ReasonNotCloudEvent = "not_cloudevent"
	// ReasonMissingAttribute: id, source, type or extversion is missing.
	ReasonMissingAttribute = "missing_attribute"
	// ReasonUnknownType: the type lacks the prefix or names no bundle type
	// the bridge knows.
	ReasonUnknownType = "unknown_type"
	// ReasonMalformedVersion: extversion or extdependencyversion is not
	// "<incarnation>.<generation>" of unsigned 64-bit decimals.
	ReasonMalformedVersion = "malformed_version"
	// ReasonTooLarge: the data exceeds MaxBundleBytes.
	ReasonTooLarge = "too_large"
	// ReasonSourceMismatch: the source is not the message key.
	ReasonSourceMismatch = "source_mismatch"
	// ReasonBadPayload: the data does not decode into the type's payload.
	ReasonBadPayload = "bad_payload"
)

// Reasons lists every reject reason, for metrics and tests.
var Reasons = []string{
	ReasonNotCloudEvent, ReasonMissingAttribute, ReasonUnknownType,
	ReasonMalformedVersion, ReasonTooLarge, ReasonSourceMismatch, ReasonBadPayload,
}

// Reject is a message that could not become a bundle, with what a dead
// letter needs to explain it. It is also an error.
type Reject struct {
	Reason string
	Err    error
	Origin bundle.Origin
	// Key, Headers and Data are the raw message; Data is not copied.
	Key     []byte
	Headers map[string]string
	Data    []byte
	// Hub, Type and Version are filled as far as they were read: Type is
	// the full CloudEvents type, Version the raw extversion text.
	Hub, Type, Version string
}

// Rejects receives rejected messages; the dead-letter writer implements it.
// Reject is called from the reader's poll loop. Only when it returns nil
// is the message marked done: an error (the dead letter could not be
// stored, even after retrying) leaves the offset outstanding, so the
// committed position stays before it and a restart rejects it again
// rather than losing it.
type Rejects interface {
	Reject(ctx context.Context, r Reject) error
}

// Error describes the reject.
func (r *Reject) Error() string {
	if r.Err == nil {
		return "message rejected: " + r.Reason
	}
	return "message rejected: " + r.Reason + ": " + r.Err.Error()
}

// Unwrap returns the underlying error.
func (r *Reject) Unwrap() error { return r.Err }

// newReject captures the raw message. The headers are copied into a map
// here, on the reject path only, so accepted messages never pay for it.
func newReject(msg *kafka.Message, origin bundle.Origin, reason string, err error) *Reject {
	r := &Reject{Reason: reason, Err: err, Origin: origin}
	if msg == nil {
		return r
	}
	r.Key, r.Data = msg.Key, msg.Value
	if len(msg.Headers) > 0 {
		r.Headers = make(map[string]string, len(msg.Headers))
		for _, h := range msg.Headers {
			r.Headers[h.Key] = string(h.Value)
		}
	}
	return r
}
