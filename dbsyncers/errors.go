package dbsyncers

import (
	"errors"
	"fmt"

	"github.com/stbridge/stb/pkg/bundle"
)

// Reasons of the PermanentErrors this package returns. They end up in
// status.dead_letters.reason and in metric labels, so they are few and
// fixed.
const (
	// ReasonUnknownType: no syncer is registered for the bundle's type.
	ReasonUnknownType = "unknown_type"
	// ReasonBadPayload: the payload is not what the type's handler takes,
	// or says something the handler cannot write.
	ReasonBadPayload = "bad_payload"
	// ReasonBadGroup: Apply was handed no bundles, or bundles of more than
	// one hub or type, or deltas on more than one base.
	ReasonBadGroup = "bad_group"
	// ReasonStaleBase: deltas whose base is not the version of their base
	// type the database holds, so they cannot be applied on top of it.
	ReasonStaleBase = "stale_base"
)

// ErrUnknownType is wrapped by the error Apply returns for a bundle type
// the registry does not hold.
var ErrUnknownType = errors.New("unknown bundle type")

// PermanentError marks a failure that retrying cannot cure: the data can
// never be applied, so the dispatcher dead-letters the bundle instead of
// retrying it. Database errors are not wrapped in it; the dispatcher
// classifies those by SQLSTATE itself.
type PermanentError struct {
	// Reason is a short fixed label (one of the Reason constants).
	Reason string
	// Err says what exactly was wrong.
	Err error
}

func (e *PermanentError) Error() string {
	if e.Err == nil {
		return e.Reason
	}
	return e.Reason + ": " + e.Err.Error()
}

func (e *PermanentError) Unwrap() error { return e.Err }

// payloadOf returns b's payload as the *T its type's decoder produces.
// Anything else means the bundle was built wrongly and will stay wrong.
func payloadOf[T any](b *bundle.Bundle) (*T, error) {
	p, ok := b.Payload.(*T)
	if !ok || p == nil {
		return nil, &PermanentError{
			Reason: ReasonBadPayload,
			Err:    fmt.Errorf("%s bundle of hub %q has payload %T, want %T", b.Type, b.Hub, b.Payload, p),
		}
	}
	return p, nil
}
