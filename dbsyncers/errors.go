package dbsyncers

import (
	"fmt"

	"github.com/stbridge/stb/pkg/bundle"
	"github.com/stbridge/stb/pkg/deadletter"
)

// PermanentError marks a failure that retrying cannot cure: the data can
// never be applied, so the dispatcher dead-letters the bundle instead of
// retrying it. Database errors are not wrapped in it; the dispatcher
// classifies those by SQLSTATE itself.
type PermanentError struct {
	// Reason is the dead-letter reason (bad_payload, stale_base, …).
	Reason deadletter.Reason
	// Err says what exactly was wrong.
	Err error
}

func (e *PermanentError) Error() string {
	if e.Err == nil {
		return string(e.Reason)
	}
	return string(e.Reason) + ": " + e.Err.Error()
}

// DeadLetterReason makes the error a deadletter.Reasoned: the dispatcher
// recognises a permanent failure by it.
func (e *PermanentError) DeadLetterReason() deadletter.Reason { return e.Reason }

func (e *PermanentError) Unwrap() error { return e.Err }

// badPayload marks a decoder's error: the data is not what the type takes,
// so the message is dead-lettered as bad_payload.
func badPayload(err error) error {
	return &PermanentError{Reason: deadletter.BadPayload, Err: err}
}

// payloadOf returns b's payload as the *T its type's decoder produces.
// Anything else means the bundle was built wrongly and will stay wrong.
func payloadOf[T any](b *bundle.Bundle) (*T, error) {
	p, ok := b.Payload.(*T)
	if !ok || p == nil {
		return nil, &PermanentError{
			Reason: deadletter.BadPayload,
			Err:    fmt.Errorf("%s bundle of hub %q has payload %T, want %T", b.Type, b.Hub, b.Payload, p),
		}
	}
	return p, nil
}
