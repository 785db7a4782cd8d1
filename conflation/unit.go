package conflation

import (
	"errors"
	"sync"
	"time"

	"github.com/stbridge/stb/pkg/bundle"
	"github.com/stbridge/stb/pkg/redact"
)

// ErrNoReadyBundle is returned by Next when nothing in the unit may be
// written now (everything waits for a dependency or a retry, or a newer
// bundle made what was ready stale after the unit was queued).
var ErrNoReadyBundle = errors.New("conflation: no ready bundle")

// Outcome is what became of a job.
type Outcome uint8

const (
	// Applied: the job was written, or the database already held a version
	// at least as new (the fence wrote nothing). Either way it is done.
	Applied Outcome = iota + 1
	// Transient: the write failed for a reason that is not the bundle's
	// fault; it stays in the unit and is retried after a backoff.
	Transient
	// Permanent: the bundle can never be written; the worker dead-lettered
	// it and the unit forgets it.
	Permanent
)

// Job is the work a unit hands to a worker: one complete bundle, or a
// group of deltas or stream events of one type, in version order.
type Job struct {
	Unit    *Unit
	Type    string
	Kind    bundle.Kind
	Bundles []*bundle.Bundle
	// Attempt counts earlier transient failures of this type's writes.
	Attempt int
	// Expired means the bundles waited for their dependency longer than
	// the dependency timeout: the worker dead-letters them instead of
	// writing them, so they cannot pin the committed offset forever.
	Expired bool
	// Err, set by the worker before Report, is why a write failed
	// (Transient or Permanent); the unit keeps it as the type's last error.
	Err  error
	slot int
}

// Last returns the newest bundle of the job, whose version the job writes.
func (j *Job) Last() *bundle.Bundle { return j.Bundles[len(j.Bundles)-1] }

// Unit holds the unwritten bundles of one hub.
//
// Invariants, under mu: queued means the unit is on the ready queue (at most
// once); busy means a worker holds a Job from it; never both. Unit.mu is
// a leaf lock: no other lock is taken under it but the metrics' own. What
// it frees is released to the committer's trackers, and the unit pushed on
// the ready queue, only after it is unlocked (the releaser).
type Unit struct {
	Hub string

	m      *Manager
	mu     sync.Mutex
	slots  []slot
	queued bool
	busy   bool
	// lastActive is when a bundle was last inserted or a job reported.
	lastActive time.Time
	// lingerUntil, when set, is when the unit's linger ends: until then
	// only its streams are ready (Config.Linger, linger.go).
	lingerUntil time.Time
	// lingerEnd is the offset of its partition that the reader must read
	// up to for the linger to end early: the partition's end when the
	// newest lingering bundle was read.
	lingerEnd int64
	// retired is set once the unit leaves the manager's index: evicted
	// (its versions live on as the hub's dormant ones) or forgotten (the
	// hub was deleted or reset). A retired unit takes nothing more; who
	// finds it retired looks the hub up again.
	retired retirement
}

type retirement uint8

const (
	live retirement = iota
	evicted
	forgotten
)

// Insert adds b, replacing an older unwritten bundle of its type. It
// returns whether the unit became ready; the caller must then push it on
// the ready queue (Manager.Insert does). A retired unit takes nothing and
// returns retired == true: the caller looks the hub's unit up again.
func (u *Unit) Insert(b *bundle.Bundle) (ready, retired bool) {
	ready, retired, _ = u.insert(b, false, 0)
	return ready, retired
}

// insert is Insert; with linger, a unit that does not linger yet starts
// to, until Config.Linger from now or until the reader reads its
// partition up to end, and a lingering one waits for end if that is
// later (waits: the caller records it in the linger set); without, a
// lingering unit stops: its partition caught up, or lingering is off for
// want of memory.
func (u *Unit) insert(b *bundle.Bundle, linger bool, end int64) (ready, retired, waits bool) {
	var rel releaser
	u.mu.Lock()
	if u.retired != live {
		u.mu.Unlock()
		return false, true, false
	}
	switch {
	case !linger:
		u.lingerUntil, u.lingerEnd = time.Time{}, 0
	case u.lingerUntil.IsZero():
		u.lingerUntil, u.lingerEnd = u.m.cfg.Now().Add(u.m.cfg.Linger), end
		waits = true
	case end > u.lingerEnd:
		u.lingerEnd = end
		waits = true
	}
	ready = u.insertLocked(b, &rel)
	u.mu.Unlock()
	rel.run(u.m)
	return ready, false, waits
}

func (u *Unit) insertLocked(b *bundle.Bundle, rel *releaser) bool {
	// Count every inserted bundle as held; whatever releases it, now or
	// later, subtracts it again.
	u.m.held.Add(int64(b.HeldBytes()))
	i, ok := u.m.index[b.Type]
	if !ok {
		rel.add(b, u.m.metrics.unknown)
		return false
	}
	s := &u.slots[i]
	tm := u.m.metrics.types[i]
	now := u.m.cfg.Now()
	u.lastActive = now
	if s.hasSeen && s.info.Stale(b.Version, s.seen) {
		rel.add(b, tm.stale)
		return false
	}
	if s.info.Rule == bundle.Exactly && s.info.Kind != bundle.Stream {
		if d := &u.slots[s.dep]; d.hasSeen && b.Dependency.Compare(d.seen) < 0 {
			// Its base was already replaced by a newer one, read first
			// (another partition): it can never apply, as a pending one
			// would be pruned when the base moved on. So with conflation
			// off too.
			rel.add(b, tm.stale)
			return false
		}
	}
	kind := s.info.Kind
	if u.m.cfg.NoConflation && kind == bundle.Complete {
		kind = bundle.Stream // every bundle queued and written, in order
	}
	s.own()
	switch kind {
	case bundle.Complete:
		for _, old := range s.pending {
			if s.info.HoldsReplaced {
				b.Supersede(old)
			}
			rel.add(old, tm.conflated)
		}
		s.pending = append(s.pending[:0], b)
		s.waitingSince = now
	case bundle.Delta:
		if base, ok := s.base(); ok && base != b.Dependency {
			if b.Dependency.Compare(base) < 0 {
				rel.add(b, tm.stale)
				return false
			}
			// A newer base exists: the waiting group can never apply.
			for _, old := range s.pending {
				rel.add(old, tm.stale)
			}
			s.pending = s.pending[:0]
		}
		if len(s.pending) == 0 {
			s.waitingSince = now
		}
		s.pending = append(s.pending, b)
		if s.merge != nil && !s.mergeOff && !u.m.cfg.NoConflation && u.m.cfg.MaxDeltaBytes > 0 && s.pendingBytes() > u.m.cfg.MaxDeltaBytes {
			u.mergeLocked(s, rel, tm)
		}
	case bundle.Stream:
		if len(s.pending) == 0 {
			s.waitingSince = now
		}
		s.pending = append(s.pending, b)
	}
	s.seen, s.hasSeen = b.Version, true
	tm.inserted.Inc()
	// A newer base makes the deltas waiting on older ones stale.
	u.pruneDependentsLocked(i, rel)
	return u.becomeReadyLocked()
}

// pruneDependentsLocked drops delta groups whose base is older than the
// newest version seen or processed of the slot they depend on.
func (u *Unit) pruneDependentsLocked(dep int, rel *releaser) {
	d := &u.slots[dep]
	for i := range u.slots {
		s := &u.slots[i]
		if s.dep != dep || s.info.Rule != bundle.Exactly || len(s.pending) == 0 {
			continue
		}
		if !d.hasSeen {
			continue
		}
		// Only those on an older base: with conflation off, complete
		// bundles queue as a stream, and one read before its base (on a
		// shared topic) may already name the base that just came.
		kept := s.pending[:0]
		for _, b := range s.pending {
			if b.Dependency.Compare(d.seen) < 0 {
				rel.add(b, u.m.metrics.types[i].stale)
			} else {
				kept = append(kept, b)
			}
		}
		clear(s.pending[len(kept):])
		s.pending = kept
		s.settle()
	}
}

// readyLocked reports whether slot i may be written now.
func (u *Unit) readyLocked(i int, now time.Time) bool {
	s := &u.slots[i]
	if len(s.pending) == 0 || s.inflight != nil || now.Before(s.retryAt) {
		return false
	}
	if s.info.Kind != bundle.Stream && now.Before(u.lingerUntil) {
		// Lingering holds what a newer bundle may replace or a merge
		// fold; a stream's bundles are each written anyway, so holding
		// them would only fill the buffer (linger.go).
		return false
	}
	return u.depSatisfiedLocked(i)
}

func (u *Unit) depSatisfiedLocked(i int) bool {
	s := &u.slots[i]
	if s.info.Rule == bundle.NoDependency {
		return true
	}
	d := &u.slots[s.dep]
	return CheckDependency(s.info.Rule, d.processed, d.hasProcessed, s.pending[0].Dependency) == DependencyMet
}

// expiredLocked reports whether slot i's pending work has waited for its
// dependency longer than the dependency timeout.
func (u *Unit) expiredLocked(i int, now time.Time) bool {
	s := &u.slots[i]
	timeout := u.m.cfg.DependencyTimeout
	if timeout <= 0 || len(s.pending) == 0 || s.inflight != nil || s.info.Rule == bundle.NoDependency {
		return false
	}
	return now.Sub(s.waitingSince) >= timeout && !u.depSatisfiedLocked(i)
}

// becomeReadyLocked marks the unit queued if it is idle and has something
// ready (or expired); the caller pushes it when this returns true.
func (u *Unit) becomeReadyLocked() bool {
	if u.queued || u.busy {
		return false
	}
	now := u.m.cfg.Now()
	if !u.lingerUntil.IsZero() && !now.Before(u.lingerUntil) {
		u.lingerUntil, u.lingerEnd = time.Time{}, 0
	}
	for i := range u.slots {
		if u.readyLocked(i, now) || u.expiredLocked(i, now) {
			u.queued = true
			return true
		}
	}
	return false
}

// pickLocked chooses the slot to serve: the first ready (or expired) one
// in priority order, unless a ready slot has been passed over maxSkips
// times, which then goes first. Strict priority alone starves the last
// types of a hub that keeps sending heartbeats and snapshots: their
// bundles would pin the committed offset and grow without bound. It
// returns -1 when nothing may be served.
func (u *Unit) pickLocked(now time.Time) (int, bool) {
	maxSkips := len(u.slots)
	chosen, expired, starved := -1, false, -1
	for i := range u.slots {
		ready := u.readyLocked(i, now)
		exp := !ready && u.expiredLocked(i, now)
		if !ready && !exp {
			continue
		}
		if chosen < 0 {
			chosen, expired = i, exp
		}
		if starved < 0 && u.slots[i].skipped >= maxSkips {
			starved = i
		}
	}
	if starved >= 0 && starved != chosen {
		chosen, expired = starved, !u.readyLocked(starved, now)
	}
	if chosen < 0 {
		return -1, false
	}
	for i := range u.slots {
		if i == chosen {
			u.slots[i].skipped = 0
		} else if u.readyLocked(i, now) || u.expiredLocked(i, now) {
			u.slots[i].skipped++
		}
	}
	return chosen, expired
}

// Next takes the highest-priority ready work out of the unit (see
// pickLocked for how starvation is avoided). The unit must
// have been popped from the ready queue; it stays busy until Report.
func (u *Unit) Next() (*Job, error) {
	u.mu.Lock()
	defer u.mu.Unlock()
	if u.busy {
		// A worker has a job from this unit; a second one would break
		// the hub's write order.
		return nil, ErrNoReadyBundle
	}
	u.queued = false
	now := u.m.cfg.Now()
	i, expired := u.pickLocked(now)
	if i >= 0 {
		s := &u.slots[i]
		job := &Job{Unit: u, Type: s.info.Name, Kind: s.info.Kind, Attempt: s.attempts, Expired: expired, slot: i}
		if u.m.cfg.NoConflation {
			// One bundle per job, in arrival order, as a per-record sink.
			job.Bundles = append(job.Bundles, s.pending[0])
			n := copy(s.pending, s.pending[1:])
			s.pending[n] = nil
			s.pending = s.pending[:n]
		} else {
			job.Bundles = append(job.Bundles, s.pending...)
			clear(s.pending)
			s.pending = s.pending[:0]
		}
		s.inflight = job.Bundles
		u.busy = true
		return job, nil
	}
	return nil, ErrNoReadyBundle
}

// Report records the outcome of a job taken with Next. It returns whether
// the unit is ready again (push it) and, if not, after how long a retry
// becomes due (0 when none is waiting); the caller arranges Manager.Wake
// then.
func (u *Unit) Report(job *Job, out Outcome) (ready bool, retryIn time.Duration) {
	var rel releaser
	u.mu.Lock()
	ready, retryIn = u.reportLocked(job, out, &rel)
	u.mu.Unlock()
	rel.run(u.m)
	return ready, retryIn
}

func (u *Unit) reportLocked(job *Job, out Outcome, rel *releaser) (bool, time.Duration) {
	s := &u.slots[job.slot]
	tm := u.m.metrics.types[job.slot]
	s.inflight = nil
	u.busy = false
	now := u.m.cfg.Now()
	u.lastActive = now
	if u.retired == forgotten {
		// The hub was deleted or reset while this was written: nothing
		// of it is kept, not even what a failed write would retry.
		for _, b := range job.Bundles {
			rel.add(b, nil)
		}
		s.settle()
		return false, 0
	}
	if out != Applied && job.Err != nil {
		s.lastErr, s.lastErrAt = redact.Cap(job.Err.Error(), maxErrorText), now
	}
	switch out {
	case Applied:
		v := job.Last().Version
		if !s.hasProcessed || v.Newer(s.processed) {
			s.processed, s.hasProcessed = v, true
		}
		s.attempts, s.retryAt = 0, time.Time{}
		for _, b := range job.Bundles {
			rel.add(b, nil)
		}
		u.pruneDependentsLocked(job.slot, rel)
	case Transient:
		s.attempts++
		s.retryAt = now.Add(u.m.cfg.Backoff.Delay(s.attempts))
		tm.retries.Inc()
		u.requeueLocked(s, job, rel, tm)
	case Permanent:
		s.attempts, s.retryAt = 0, time.Time{}
		for _, b := range job.Bundles {
			rel.add(b, nil)
		}
	}
	s.settle()
	if u.becomeReadyLocked() {
		return true, 0
	}
	return false, u.nextRetryLocked(now)
}

// requeueLocked puts a failed job's bundles back in front of anything that
// arrived meanwhile, unless what arrived replaces them.
func (u *Unit) requeueLocked(s *slot, job *Job, rel *releaser, tm *typeMetrics) {
	kind := s.info.Kind
	if u.m.cfg.NoConflation && kind == bundle.Complete {
		kind = bundle.Stream
	}
	switch kind {
	case bundle.Complete:
		if len(s.pending) > 0 {
			for _, b := range job.Bundles {
				rel.add(b, tm.conflated)
			}
			return
		}
		s.pending = append(s.pending, job.Bundles...)
	case bundle.Delta:
		if base, ok := s.base(); ok && base != job.Bundles[0].Dependency {
			for _, b := range job.Bundles {
				rel.add(b, tm.stale)
			}
			return
		}
		s.pending = append(append([]*bundle.Bundle(nil), job.Bundles...), s.pending...)
		u.pruneDependentsLocked(s.dep, rel)
	case bundle.Stream:
		s.pending = append(append([]*bundle.Bundle(nil), job.Bundles...), s.pending...)
	}
}

// nextRetryLocked returns how long until the earliest retry of a slot that
// waits only for its backoff.
func (u *Unit) nextRetryLocked(now time.Time) time.Duration {
	var min time.Duration
	for i := range u.slots {
		s := &u.slots[i]
		if len(s.pending) == 0 || s.inflight != nil || !now.Before(s.retryAt) || !u.depSatisfiedLocked(i) {
			continue
		}
		if d := s.retryAt.Sub(now); min == 0 || d < min {
			min = d
		}
	}
	return min
}

// wake marks the unit queued if it became ready by the passing of time.
func (u *Unit) wake() bool {
	u.mu.Lock()
	defer u.mu.Unlock()
	return u.becomeReadyLocked()
}

// tick marks the unit queued if it became ready by the passing of time
// or, when idle > 0 and the unit holds nothing, is not queued, has nothing
// in flight and has been idle that long, retires it as evicted; the caller
// then buries it.
//
// It also returns the resyncs the unit needs (Config.ResyncAfter).
func (u *Unit) tick(now time.Time, idle time.Duration) (ready, retire bool, resyncs []Resync) {
	u.mu.Lock()
	defer u.mu.Unlock()
	if u.retired != live {
		return false, false, nil
	}
	resyncs = u.resyncsLocked(now)
	if u.becomeReadyLocked() {
		return true, false, resyncs
	}
	if idle <= 0 || u.queued || u.busy || now.Sub(u.lastActive) < idle {
		return false, false, resyncs
	}
	for i := range u.slots {
		if len(u.slots[i].pending) > 0 || u.slots[i].inflight != nil {
			return false, false, resyncs
		}
	}
	u.retired = evicted
	return false, true, resyncs
}

// Resync asks a hub for a complete bundle of Type again: a bundle of
// WaitingType waits for Dependency (a version of Type) that the unit never
// read.
type Resync struct {
	Hub, Type, WaitingType string
	Waiting                bundle.Version
	// Dependency is the version needed; HasDependency is false for a rule
	// that names none (any processed version will do).
	Dependency    bundle.Version
	HasDependency bool
	// Processed is the newest version of Type written, if any.
	Processed    bundle.Version
	HasProcessed bool
}

// resyncsLocked returns a Resync for each slot whose oldest held bundle
// has waited ResyncAfter for a dependency version the unit never read,
// at most one per hub and type each ResyncInterval. A dependency read and
// not yet written needs none: it is on its way.
//
// Without an OnResync nothing can be sent, so nothing is asked or counted:
// the bundle waits for its dependency as any other (the console's
// "waiting" column says so).
func (u *Unit) resyncsLocked(now time.Time) []Resync {
	after := u.m.cfg.ResyncAfter
	if after <= 0 || u.m.cfg.OnResync == nil {
		return nil
	}
	var out []Resync
	for i := range u.slots {
		s := &u.slots[i]
		if len(s.pending) == 0 || s.inflight != nil || s.info.Rule == bundle.NoDependency ||
			now.Sub(s.waitingSince) < after || u.depSatisfiedLocked(i) {
			continue
		}
		d := &u.slots[s.dep]
		first := s.pending[0]
		if s.info.Rule == bundle.AfterProcessed {
			if d.hasSeen {
				continue
			}
		} else if d.hasSeen && d.seen.Compare(first.Dependency) >= 0 {
			continue
		}
		if !d.resyncAt.IsZero() && now.Sub(d.resyncAt) < u.m.cfg.ResyncInterval {
			continue
		}
		d.own()
		d.resyncAt = now
		d.resyncs++
		out = append(out, Resync{
			Hub: u.Hub, Type: d.info.Name, WaitingType: s.info.Name, Waiting: first.Version,
			Dependency: first.Dependency, HasDependency: s.info.Rule != bundle.AfterProcessed,
			Processed: d.processed, HasProcessed: d.hasProcessed,
		})
	}
	return out
}

// remainsAfterRetire returns the versions a retired unit leaves, and
// whether it was forgotten (then it leaves nothing).
func (u *Unit) remainsAfterRetire() ([]dormantSlot, bool) {
	u.mu.Lock()
	defer u.mu.Unlock()
	if u.retired == forgotten {
		return nil, true
	}
	return dormantOf(u.slots), false
}

// forget retires the unit as forgotten and releases what it holds; a job
// in flight is released when reported.
func (u *Unit) forget() {
	var rel releaser
	u.mu.Lock()
	u.retired = forgotten
	for i := range u.slots {
		s := &u.slots[i]
		if len(s.pending) == 0 {
			continue
		}
		for _, b := range s.pending {
			rel.add(b, nil)
		}
		s.pending = nil
		s.settle()
	}
	u.mu.Unlock()
	rel.run(u.m)
}

// restore records a version already in the database in slot i. Deltas
// waiting on an older base of it can then never apply, and are dropped as
// stale. It reports whether the unit became ready (a bundle was waiting
// for v), or that it is retired (nothing was recorded).
func (u *Unit) restore(i int, v bundle.Version) (ready, retired bool) {
	var rel releaser
	u.mu.Lock()
	if u.retired != live {
		u.mu.Unlock()
		return false, true
	}
	s := &u.slots[i]
	if !s.hasProcessed || v.Newer(s.processed) {
		s.processed, s.hasProcessed = v, true
	}
	if !s.hasSeen || v.Newer(s.seen) {
		s.seen, s.hasSeen = v, true
		u.pruneDependentsLocked(i, &rel)
	}
	ready = u.becomeReadyLocked()
	u.mu.Unlock()
	rel.run(u.m)
	return ready, false
}

// releaser collects bundles to release once the unit's mutex is dropped.
type releaser struct {
	bs []*bundle.Bundle
}

func (r *releaser) add(b *bundle.Bundle, c counter) {
	if c != nil {
		c.Inc()
	}
	r.bs = append(r.bs, b)
}

func (r *releaser) run(m *Manager) {
	for _, b := range r.bs {
		m.held.Add(-int64(b.HeldBytes()))
		b.Release()
	}
}

// dropPartition forgets the pending bundles read from a partition this
// bridge no longer holds, leaving what is in flight to finish. What the
// unit has seen goes back to what is processed, in flight or still pending,
// so that when the partition comes back and those messages are read again
// they are taken, not dropped as stale.
func (u *Unit) dropPartition(topic string, partition int32) {
	var rel releaser
	u.mu.Lock()
	for i := range u.slots {
		s := &u.slots[i]
		kept := s.pending[:0]
		for _, b := range s.pending {
			if b.Origin.Topic == topic && b.Origin.Partition == partition {
				rel.add(b, nil)
				continue
			}
			kept = append(kept, b)
		}
		if len(kept) == len(s.pending) {
			continue
		}
		clear(s.pending[len(kept):])
		s.pending = kept
		s.settle()
		// Back to the newest version processed, in flight or pending.
		s.seen, s.hasSeen = s.processed, s.hasProcessed
		for _, bs := range [][]*bundle.Bundle{s.inflight, s.pending} {
			for _, b := range bs {
				if !s.hasSeen || b.Version.Newer(s.seen) {
					s.seen, s.hasSeen = b.Version, true
				}
			}
		}
	}
	u.mu.Unlock()
	rel.run(u.m)
}

// maxErrorText caps the error text a unit keeps per type.
const maxErrorText = 512
