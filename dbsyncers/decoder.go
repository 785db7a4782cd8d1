package dbsyncers

import "github.com/stbridge/stb/pkg/bundle"

// The Registry is the transport reader's Decoder (and its TypeChecker and
// DependencyChecker): the reader decodes with the same syncers that write,
// whether in the bridge, a replay of dead letters or the bench's read
// ceiling. dbsyncers does not import the transport: the reader declares
// the interfaces it needs, and these methods satisfy them.

// Decode decodes the data of a bundle of type typ with its syncer's
// decoder; bundle.ErrUnknownType for a type the registry does not hold.
func (r *Registry) Decode(typ string, data []byte) (any, error) {
	s, ok := r.Lookup(typ)
	if !ok {
		return nil, bundle.ErrUnknownType
	}
	return s.Decode(data)
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
