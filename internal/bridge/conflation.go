package bridge

import (
	"time"

	"github.com/stbridge/stb/conflation"
	"github.com/stbridge/stb/pkg/backoff"
)

// ConflationOptions are the conflation manager's options: conflation.Config
// without what the bridge wires in New (the registry's Types, Merge and
// Decode, OnResync, OnEvict, the Registerer, the clock), so that
// Config holds options only and nothing in it is overwritten. Each field
// is conflation.Config's of the same name, with its meaning.
type ConflationOptions struct {
	// MaxDeltaBytes: a hub's waiting deltas above this size are merged
	// into one; 0 never merges.
	MaxDeltaBytes int
	// DependencyTimeout: a bundle waiting longer for its dependency is
	// handed out as expired (dead-lettered); 0 waits forever.
	DependencyTimeout time.Duration
	// NoConflation writes every bundle on its own in arrival order: the
	// per-record baseline of the benchmarks.
	NoConflation bool
	// Backoff between retries of a transiently failing type; zero is
	// conflation.DefaultBackoff.
	Backoff backoff.Exponential
	// IdleTimeout: a unit holding nothing idle this long leaves memory
	// (its versions stay); 0 keeps units.
	IdleTimeout time.Duration
	// ResyncAfter: how long a bundle waits for a dependency version never
	// read before a resync is asked (with Config.ResyncTopic); 0 never.
	ResyncAfter time.Duration
	// ResyncInterval is the least time between two requests for one hub
	// and type.
	ResyncInterval time.Duration
	// Linger: while the reader is far behind a partition's end, a hub's
	// unit holds what it takes this long before writing it, so that newer
	// bundles still unread replace it; 0 writes at once. New bounds it to
	// half of the reader's MaxBufferedBytes and wires the reader's Behind.
	Linger time.Duration
}

// config returns the conflation.Config of the options, without the
// wiring New adds.
func (o ConflationOptions) config() conflation.Config {
	return conflation.Config{MaxDeltaBytes: o.MaxDeltaBytes, DependencyTimeout: o.DependencyTimeout, NoConflation: o.NoConflation,
		Backoff: o.Backoff, IdleTimeout: o.IdleTimeout, ResyncAfter: o.ResyncAfter, ResyncInterval: o.ResyncInterval,
		Linger: o.Linger}
}
