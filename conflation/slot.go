package conflation

import (
	"time"

	"github.com/stbridge/stb/pkg/bundle"
)

// slot is a unit's state for one bundle type. It is only touched under the
// unit's mutex.
//
// Every hub has a slot of every type of the profiles read, sent or not, so
// an idle slot holds only its type and its versions, 56 bytes: what it
// does while it holds, writes or retries bundles is in an activity of its
// own, allocated when it starts and dropped when it is over (issue 22:
// memory per hub).
type slot struct {
	// slotType is what every unit's slot of this type shares (the
	// Manager's): a pointer, so that a unit holds 8 bytes of it per type
	// instead of 64.
	*slotType
	// activity is &idle while the slot has nothing to do or remember: its
	// fields read as zero and are never written through it. own gives the
	// slot one of its own before anything is written; settle drops it.
	*activity

	// processed is the version last written (or restored from the
	// database); seen is the newest version accepted at all. A bundle not
	// newer than seen is stale.
	processed, seen       bundle.Version
	hasProcessed, hasSeen bool
}

// activity is what a slot does and remembers beyond its versions.
type activity struct {
	// pending holds what is waiting to be written: at most one bundle for a
	// complete type; for deltas and streams an ordered list (deltas all on
	// one base).
	pending []*bundle.Bundle
	// inflight is what a worker has now; nil when none.
	inflight []*bundle.Bundle

	attempts int
	retryAt  time.Time
	// lastErr is why the type's last failed write failed, and lastErrAt
	// when: what an operator asks first about a hub that is retrying.
	lastErr      string
	lastErrAt    time.Time
	waitingSince time.Time // when the oldest pending bundle arrived
	// resyncAt is when a resync of this type was last asked for, resyncs
	// how many were (see Unit.resyncsLocked).
	resyncAt time.Time
	resyncs  int
	// skipped counts how often the slot was ready but a higher-priority
	// one was served instead; see Unit.pickLocked.
	skipped int
	// mergeOff is set once a merge of this slot panicked: its deltas are
	// written as they are from then on.
	mergeOff bool
}

// idle is the activity of every slot that has none. It is shared by all
// of them and only ever read.
var idle activity

// own gives the slot an activity of its own, if it has none, before
// anything of it is written.
func (s *slot) own() {
	if s.activity == &idle {
		s.activity = new(activity)
	}
}

// settle drops the slot's activity once there is nothing in it worth
// keeping: nothing pending or in flight, no retry, no error or resync to
// report. The pending list's array goes with it.
func (s *slot) settle() {
	a := s.activity
	if a == &idle || len(a.pending) > 0 || a.inflight != nil || a.attempts > 0 || a.lastErr != "" || a.resyncs > 0 || a.mergeOff {
		return
	}
	s.activity = &idle
}

// slotType is a bundle type as the units' slots of it see it.
type slotType struct {
	info  bundle.TypeInfo
	dep   int // index of the slot this one depends on, -1 for none
	merge MergeFunc
}

// base returns the dependency version of the pending group (deltas).
func (s *slot) base() (bundle.Version, bool) {
	if len(s.pending) == 0 {
		return bundle.Version{}, false
	}
	return s.pending[0].Dependency, true
}

func (s *slot) pendingBytes() int {
	n := 0
	for _, b := range s.pending {
		n += b.HeldBytes()
	}
	return n
}
