package dbsyncers

import (
	"errors"
	"fmt"

	"github.com/stbridge/stb/pkg/bundle"
	"github.com/stbridge/stb/pkg/deadletter"
)

// The Registry decodes payloads for the workers, which decode a bundle
// just before they write it (DecodeBundle, and Apply and Write for a
// bundle not decoded yet), and for the conflation units, which decode the
// deltas they merge; it is also the transport reader's Decoder (and its
// DependencyChecker), which decodes only what its profile
// must look into when read. dbsyncers does not import the transport or
// conflation: they declare the interfaces and functions they need, and
// these methods satisfy them.

// Decode decodes b, a bundle of any registered type, with its syncer's
// decoder (Syncer.Decode with b's Raw, or Syncer.DecodeBundle with b)
// and returns the payload, leaving b as it is: bundle.DecodeFunc. Its
// errors carry their dead-letter reason (a *PermanentError, or the
// decoder's own deadletter.Reasoned error): bad_payload, or unknown_type,
// wrapping bundle.ErrUnknownType, for a type the registry does not hold.
// A bundle that does not decode never will.
func (r *Registry) Decode(b *bundle.Bundle) (any, error) {
	s, ok := r.Lookup(b.Type)
	if !ok {
		return nil, &PermanentError{Reason: deadletter.UnknownType, Err: fmt.Errorf("%w: %q", bundle.ErrUnknownType, b.Type)}
	}
	p, err := s.decode(b)
	if err != nil {
		var reasoned deadletter.Reasoned
		if !errors.As(err, &reasoned) {
			err = badPayload(err)
		}
		return nil, err
	}
	return p, nil
}

// DecodeBundle decodes b into its payload, unless that was done
// before (bundle.Bundle.Decode): what a worker does when it takes a job,
// so that a bundle whose data does not decode is dead-lettered on its own,
// and a retried job does not decode again. Its error is Decode's.
func (r *Registry) DecodeBundle(b *bundle.Bundle) error {
	return b.Decode(r.Decode)
}

// Known reports whether typ is registered, so that the reader tells an
// unknown type before anything else.
func (r *Registry) Known(typ string) bool {
	_, ok := r.Lookup(typ)
	return ok
}

// NeedsDependency reports whether a bundle of typ applies only on exactly
// the version of its dependency that it names (a delta), so that the
// reader rejects one that names none instead of letting it wait for a
// base that cannot come.
func (r *Registry) NeedsDependency(typ string) bool {
	s, ok := r.Lookup(typ)
	return ok && s.DependsOn != "" && s.Rule == bundle.Exactly
}
