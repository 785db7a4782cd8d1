package conflation

import (
	"sync"
	"sync/atomic"
	"time"

	"github.com/stbridge/stb/pkg/bundle"
)

// Lingering: while the reader is far behind the end of a partition (a
// catch-up after a restart, a rebalance or an outage), a newer bundle of a
// hub is usually already in Kafka, unread, so writing the one a unit holds
// now is wasted. A unit that takes a bundle of such a partition waits up to
// Config.Linger before it becomes ready, replacing what it holds as newer
// bundles come, unless the partition reaches its end first (the reader
// reports it caught up: the first bundle read there that is not behind
// releases every unit lingering on it) or the held bytes pass
// Config.LingerMaxBytes (every lingering unit is released). Live traffic
// (a partition at its end) never lingers. Lingering only delays readiness:
// the bundles stay tracked, so the committed offset never passes them.

// lingerSet is the units lingering on each partition, so that a partition
// that catches up releases its own at once. Entries are removed when
// released, or by WakeAll once their unit no longer lingers (it was
// written at the end of its linger); lock order: mu is never held while a
// unit's mutex is taken.
type lingerSet struct {
	mu    sync.Mutex
	units map[partitionKey]map[*Unit]struct{}
	// n counts the entries, so that an Insert on a partition at its end
	// costs one atomic load when nothing lingers.
	n atomic.Int64
}

func (s *lingerSet) add(k partitionKey, u *Unit) {
	s.mu.Lock()
	defer s.mu.Unlock()
	if s.units == nil {
		s.units = map[partitionKey]map[*Unit]struct{}{}
	}
	us := s.units[k]
	if us == nil {
		us = map[*Unit]struct{}{}
		s.units[k] = us
	}
	if _, ok := us[u]; !ok {
		us[u] = struct{}{}
		s.n.Add(1)
	}
}

// take removes and returns the units lingering on k.
func (s *lingerSet) take(k partitionKey) []*Unit {
	s.mu.Lock()
	defer s.mu.Unlock()
	us := s.units[k]
	if len(us) == 0 {
		return nil
	}
	delete(s.units, k)
	out := make([]*Unit, 0, len(us))
	for u := range us {
		out = append(out, u)
	}
	s.n.Add(-int64(len(out)))
	return out
}

// takeAll removes and returns every entry.
func (s *lingerSet) takeAll() map[partitionKey]map[*Unit]struct{} {
	s.mu.Lock()
	defer s.mu.Unlock()
	all := s.units
	s.units = nil
	for _, us := range all {
		s.n.Add(-int64(len(us)))
	}
	return all
}

// lingers reports whether a bundle read from o may wait (Config.Linger):
// its partition is behind and the held bytes leave room. over is true when
// the held bytes passed LingerMaxBytes: every lingering unit must go.
func (m *Manager) lingers(o bundle.Origin) (linger, caughtUp, over bool) {
	if m.cfg.Linger <= 0 || m.cfg.CatchingUp == nil || m.cfg.NoConflation {
		return false, false, false
	}
	if !m.cfg.CatchingUp(o) {
		return false, true, false
	}
	if max := m.cfg.LingerMaxBytes; max > 0 && m.held.Load() > max {
		return false, false, true
	}
	return true, false, false
}

// release ends the linger of us and queues those that became ready.
func (m *Manager) release(us []*Unit) {
	for _, u := range us {
		if u.endLinger() {
			m.queue.Push(u)
		}
	}
}

// settleLingering runs after an Insert of a bundle read from o: a
// partition that caught up releases its lingering units, a buffer past
// LingerMaxBytes releases all.
func (m *Manager) settleLingering(o bundle.Origin, caughtUp, over bool) {
	if m.linger.n.Load() == 0 {
		return
	}
	switch {
	case over:
		for _, us := range m.linger.takeAll() {
			m.release(keys(us))
		}
	case caughtUp:
		m.release(m.linger.take(partitionKey{o.Topic, o.Partition}))
	}
}

// pruneLingering drops the entries of units that no longer linger (their
// linger ran out and WakeAll queued them, or a worker took their job).
func (m *Manager) pruneLingering(now time.Time) {
	if m.linger.n.Load() == 0 {
		return
	}
	for k, us := range m.linger.takeAll() {
		for u := range us {
			if u.lingering(now) {
				m.linger.add(k, u)
			}
		}
	}
}

func keys(us map[*Unit]struct{}) []*Unit {
	out := make([]*Unit, 0, len(us))
	for u := range us {
		out = append(out, u)
	}
	return out
}

// endLinger ends the unit's linger; it returns whether the unit became
// ready (the caller pushes it).
func (u *Unit) endLinger() bool {
	u.mu.Lock()
	defer u.mu.Unlock()
	if u.retired != live {
		return false
	}
	u.lingerUntil = time.Time{}
	return u.becomeReadyLocked()
}

// lingering reports whether the unit still waits for its linger to end.
func (u *Unit) lingering(now time.Time) bool {
	u.mu.Lock()
	defer u.mu.Unlock()
	return u.retired == live && u.lingerUntil.After(now)
}
