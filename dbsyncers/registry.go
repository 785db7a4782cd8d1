package dbsyncers

import (
	"context"
	"errors"
	"fmt"

	"github.com/jackc/pgx/v5"
	"github.com/jackc/pgx/v5/pgconn"

	"github.com/stbridge/stb/pkg/bundle"
)

// DB is what handlers need from a connection: both pgx.Tx and
// *pgxpool.Pool have these methods.
type DB interface {
	Exec(ctx context.Context, sql string, args ...any) (pgconn.CommandTag, error)
	Query(ctx context.Context, sql string, args ...any) (pgx.Rows, error)
	QueryRow(ctx context.Context, sql string, args ...any) pgx.Row
	SendBatch(ctx context.Context, b *pgx.Batch) pgx.BatchResults
	CopyFrom(ctx context.Context, table pgx.Identifier, columns []string, src pgx.CopyFromSource) (int64, error)
}

// Syncer is everything the bridge knows about one bundle type.
type Syncer struct {
	bundle.TypeInfo
	// Decode turns the event data into the payload handed to Plan and
	// Merge. It runs when a worker takes the bundle or a conflation unit
	// merges it, not when it is read: most bundles are replaced unread.
	// An error means the bundle can never be applied (a dead letter,
	// bad_payload unless the error carries another reason).
	//
	// A type has Decode or DecodeBundle, exactly one. Decode is for the
	// types whose data is all they carry (STB's own format, the
	// global-hub agent's): it is handed bundle.Bundle.Raw, and stays a
	// function of bytes that fuzz tests, benchmarks and the simulator
	// call as such.
	Decode func(data []byte) (any, error)
	// DecodeBundle is Decode for the types of a family that keeps what
	// its event says besides the data in bundle.Bundle.Attrs (work,
	// cne): it is handed the whole bundle, to read Raw and Attrs, and
	// must not modify it. A bundle without the attributes it needs is a
	// bad_payload.
	DecodeBundle func(b *bundle.Bundle) (any, error)
	// Plan says how to write the bundles of one hub, without writing:
	// complete and stream bundles come one at a time, deltas as one
	// ordered group. Registry.Apply runs the plan; Registry.Write sends
	// the statements of a plan without a stage with the version fence in
	// one round trip.
	Plan func(bundles []*bundle.Bundle) (Write, error)
	// Merge, optional and only for delta types, folds a newer delta payload
	// into an older one, later winning, so that a conflation unit can hold
	// a hub's many waiting deltas as one (conflation.MergeFunc). It must
	// not modify newer, and the result must be a payload Plan takes.
	Merge func(older, newer any) any
}

// decode decodes b with the syncer's decoder, whichever it has.
func (s *Syncer) decode(b *bundle.Bundle) (any, error) {
	if s.DecodeBundle != nil {
		return s.DecodeBundle(b)
	}
	return s.Decode(b.Raw)
}

// write writes bundles with the syncer's plan.
func (s *Syncer) write(ctx context.Context, db DB, bundles []*bundle.Bundle) error {
	w, err := s.Plan(bundles)
	if err != nil {
		return err
	}
	return w.Exec(ctx, db)
}

// ErrDuplicateType is returned by Register for a type registered twice.
var ErrDuplicateType = errors.New("bundle type registered twice")

// Registry lists the syncers in priority order. It is filled once at start
// and read-only afterwards.
type Registry struct {
	order  []*Syncer
	byType map[string]*Syncer
}

// NewRegistry returns a registry holding the given syncers, in that order
// (which is also the order units serve them in).
func NewRegistry(syncers ...Syncer) (*Registry, error) {
	r := &Registry{byType: make(map[string]*Syncer, len(syncers))}
	for i := range syncers {
		if err := r.Register(syncers[i]); err != nil {
			return nil, err
		}
	}
	return r, nil
}

// Default returns the registry of every bundle type the bridge ships with.
func Default() *Registry {
	r, err := NewRegistry(
		Heartbeat(),
		ManagedClusters(),
		ClustersPolicies(),
		Compliance(),
		ComplianceDelta(),
		PolicyEvents(),
	)
	if err != nil {
		panic(err) // the built-in list is fixed; a duplicate is a programming error
	}
	return r
}

// Register adds s after the syncers already registered.
func (r *Registry) Register(s Syncer) error {
	if s.Name == "" || s.Decode == nil && s.DecodeBundle == nil || s.Plan == nil {
		return fmt.Errorf("syncer %q: name, decoder and plan are required", s.Name)
	}
	if s.Decode != nil && s.DecodeBundle != nil {
		return fmt.Errorf("syncer %q: Decode and DecodeBundle are both set; a type has one decoder", s.Name)
	}
	if s.Merge != nil && s.Kind != bundle.Delta {
		return fmt.Errorf("syncer %q: only delta types merge, this one is %v", s.Name, s.Kind)
	}
	if _, ok := r.byType[s.Name]; ok {
		return fmt.Errorf("%w: %q", ErrDuplicateType, s.Name)
	}
	if s.Rule != bundle.NoDependency {
		if _, ok := r.byType[s.DependsOn]; !ok {
			return fmt.Errorf("syncer %q depends on %q, which must be registered first", s.Name, s.DependsOn)
		}
	}
	p := &s
	r.order = append(r.order, p)
	r.byType[s.Name] = p
	return nil
}

// Lookup returns the syncer of a bundle type.
func (r *Registry) Lookup(typ string) (*Syncer, bool) {
	s, ok := r.byType[typ]
	return s, ok
}

// Types returns the type descriptions in priority order.
func (r *Registry) Types() []bundle.TypeInfo {
	out := make([]bundle.TypeInfo, len(r.order))
	for i, s := range r.order {
		out[i] = s.TypeInfo
	}
	return out
}

// Mergers returns the merge functions of the types that have one, by type
// name: what conflation.Config.Merge takes.
func (r *Registry) Mergers() map[string]func(older, newer any) any {
	out := make(map[string]func(older, newer any) any)
	for _, s := range r.order {
		if s.Merge != nil {
			out[s.Name] = s.Merge
		}
	}
	return out
}
