package conflation

import (
	"time"

	"github.com/stbridge/stb/pkg/bundle"
)

// TypeState is what a unit holds for one bundle type, for /debug/units.
type TypeState struct {
	Type      string `json:"type"`
	Held      string `json:"held,omitempty"`      // version of the newest unwritten bundle
	HeldCount int    `json:"heldCount,omitempty"` // deltas or events waiting
	InFlight  string `json:"inFlight,omitempty"`
	Processed string `json:"processed,omitempty"`
	Waiting   string `json:"waiting,omitempty"` // why held work is not ready
	// DependsOn is, when held work waits for its dependency, the type it
	// waits for; Needs the version of it needed ("≥ 1.4", "= 1.4", or
	// "any" when a first write of it will do) and Has the version of it
	// written ("" when none was).
	DependsOn string  `json:"dependsOn,omitempty"`
	Needs     string  `json:"needs,omitempty"`
	Has       string  `json:"has,omitempty"`
	Retries   int     `json:"retries,omitempty"`
	AgeSec    float64 `json:"ageSeconds,omitempty"` // how long the oldest held bundle waits
	// LastError is why the type's last failed write failed, LastErrorAgeSec
	// how long ago.
	LastError       string  `json:"lastError,omitempty"`
	LastErrorAgeSec float64 `json:"lastErrorAgeSeconds,omitempty"`
	// Resyncs counts the resyncs of this type asked of the hub,
	// LastResyncAgeSec how long ago the last one was.
	Resyncs          int     `json:"resyncs,omitempty"`
	LastResyncAgeSec float64 `json:"lastResyncAgeSeconds,omitempty"`
}

// UnitState is a unit's state, for /debug/units.
type UnitState struct {
	Hub    string      `json:"hub"`
	Queued bool        `json:"queued"`
	Busy   bool        `json:"busy"`
	Types  []TypeState `json:"types"`
}

// Snapshot returns the unit's state; types with nothing known are left out.
func (u *Unit) Snapshot() UnitState {
	u.mu.Lock()
	defer u.mu.Unlock()
	now := u.m.cfg.Now()
	st := UnitState{Hub: u.Hub, Queued: u.queued, Busy: u.busy}
	for i := range u.slots {
		s := &u.slots[i]
		if len(s.pending) == 0 && s.inflight == nil && !s.hasProcessed && s.lastErr == "" && s.resyncs == 0 {
			continue
		}
		ts := TypeState{Type: s.info.Name, Retries: s.attempts}
		if n := len(s.pending); n > 0 {
			ts.Held = s.pending[n-1].Version.String()
			ts.HeldCount = n
			ts.AgeSec = now.Sub(s.waitingSince).Seconds()
			ts.Waiting = u.waitingLocked(i, now)
			if s.inflight == nil && !u.depSatisfiedLocked(i) {
				ts.DependsOn, ts.Needs, ts.Has = u.dependencyLocked(i)
			}
		}
		if n := len(s.inflight); n > 0 {
			ts.InFlight = s.inflight[n-1].Version.String()
		}
		if s.hasProcessed {
			ts.Processed = s.processed.String()
		}
		if s.lastErr != "" {
			ts.LastError, ts.LastErrorAgeSec = s.lastErr, now.Sub(s.lastErrAt).Seconds()
		}
		if s.resyncs > 0 {
			ts.Resyncs, ts.LastResyncAgeSec = s.resyncs, now.Sub(s.resyncAt).Seconds()
		}
		st.Types = append(st.Types, ts)
	}
	return st
}

// waitingLocked says why slot i's held work is not being written.
func (u *Unit) waitingLocked(i int, now time.Time) string {
	s := &u.slots[i]
	switch {
	case s.inflight != nil:
		return "in flight"
	case now.Before(s.retryAt):
		return "retry backoff"
	case !u.depSatisfiedLocked(i):
		return "dependency " + s.info.DependsOn
	case u.busy:
		return "unit busy"
	}
	return "ready"
}

// dependencyLocked says what slot i's oldest held bundle needs of the
// type it depends on, and what of it was written.
func (u *Unit) dependencyLocked(i int) (dependsOn, needs, has string) {
	s := &u.slots[i]
	d := &u.slots[s.dep]
	switch s.info.Rule {
	case bundle.AtLeast:
		needs = "≥ " + s.pending[0].Dependency.String()
	case bundle.Exactly:
		needs = "= " + s.pending[0].Dependency.String()
	default:
		needs = "any"
	}
	if d.hasProcessed {
		has = d.processed.String()
	}
	return s.info.DependsOn, needs, has
}

// UnitBrief is what the console counts of a unit: cheaper than a
// Snapshot (no strings), for a pass over every unit.
type UnitBrief struct {
	// Held is the number of types with unwritten bundles; InFlight the
	// number being written.
	Held, InFlight int
	// Retries is the most failed attempts of any type.
	Retries int
	// WaitingDependency says a type's held work waits for its dependency.
	WaitingDependency bool
	// Oldest is how long the oldest held bundle has waited.
	Oldest time.Duration
}

// Brief returns the unit's brief.
func (u *Unit) Brief() UnitBrief {
	u.mu.Lock()
	defer u.mu.Unlock()
	var b UnitBrief
	now := u.m.cfg.Now()
	for i := range u.slots {
		s := &u.slots[i]
		if s.inflight != nil {
			b.InFlight++
		}
		b.Retries = max(b.Retries, s.attempts)
		if len(s.pending) == 0 {
			continue
		}
		b.Held++
		b.Oldest = max(b.Oldest, now.Sub(s.waitingSince))
		if s.inflight == nil && !u.depSatisfiedLocked(i) {
			b.WaitingDependency = true
		}
	}
	return b
}
