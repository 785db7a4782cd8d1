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
// bundles come, unless one of these comes first:
//   - the reader has read everything that was in the partition when the
//     unit's newest lingering bundle was read (its end then, which
//     CatchingUp returns): any newer bundle of the hub that was waiting
//     then has replaced it, so writing it now wastes nothing. A reader a
//     few thousand messages behind under live load so waits only as long
//     as it takes to read them;
//   - the partition reaches its end (the first bundle read there that is
//     not behind releases every unit lingering on it);
//   - the held bytes pass Config.LingerMaxBytes (every lingering unit is
//     released).
// Live traffic (a partition at its end) never lingers, and neither do a
// lingering unit's streams (events): each of their bundles is written
// anyway, so holding them would only fill the buffer and, past
// LingerMaxBytes, end every unit's linger. Lingering only delays
// readiness: the bundles stay tracked, so the committed offset never
// passes them.

// lingerSet is the units lingering on each partition, in the order of
// the ends they wait for, so that the reader's progress releases them
// from the front and a partition that catches up releases all of its own
// at once. Entries are removed when released, or by WakeAll once their
// unit no longer lingers (it was written at the end of its linger); lock
// order: mu is never held while a unit's mutex is taken.
type lingerSet struct {
	mu    sync.Mutex
	units map[partitionKey][]lingerEntry
	// n counts the entries, so that an Insert on a partition at its end
	// costs one atomic load when nothing lingers.
	n atomic.Int64
}

// lingerEntry is a unit waiting for the reader to read its partition up
// to end (exclusive). A unit whose newest bundle extends its wait has a
// later entry too; the earlier one then releases nothing.
type lingerEntry struct {
	u   *Unit
	end int64
}

func (s *lingerSet) add(k partitionKey, u *Unit, end int64) {
	s.mu.Lock()
	defer s.mu.Unlock()
	if s.units == nil {
		s.units = map[partitionKey][]lingerEntry{}
	}
	// The ends a partition's bundles are read with never decrease (they
	// are its high watermark when each was read), so appending keeps
	// the order.
	s.units[k] = append(s.units[k], lingerEntry{u, end})
	s.n.Add(1)
}

// take removes and returns the entries of k.
func (s *lingerSet) take(k partitionKey) []lingerEntry {
	s.mu.Lock()
	defer s.mu.Unlock()
	es := s.units[k]
	if len(es) == 0 {
		return nil
	}
	delete(s.units, k)
	s.n.Add(-int64(len(es)))
	return es
}

// reached removes and returns the entries of k whose end the reader has
// reached: it read the message before offset.
func (s *lingerSet) reached(k partitionKey, offset int64) []lingerEntry {
	s.mu.Lock()
	defer s.mu.Unlock()
	es := s.units[k]
	i := 0
	for i < len(es) && es[i].end <= offset {
		i++
	}
	if i == 0 {
		return nil
	}
	out := append([]lingerEntry(nil), es[:i]...)
	if i == len(es) {
		delete(s.units, k)
	} else {
		clear(es[:i])
		s.units[k] = es[i:]
	}
	s.n.Add(-int64(i))
	return out
}

// takeAll removes and returns every entry.
func (s *lingerSet) takeAll() map[partitionKey][]lingerEntry {
	s.mu.Lock()
	defer s.mu.Unlock()
	all := s.units
	s.units = nil
	for _, es := range all {
		s.n.Add(-int64(len(es)))
	}
	return all
}

// lingers reports whether a bundle read from o may wait (Config.Linger):
// its partition is behind and the held bytes leave room; end is the
// partition's end when o was read. over is true when the held bytes
// passed LingerMaxBytes: every lingering unit must go.
func (m *Manager) lingers(o bundle.Origin) (linger bool, end int64, caughtUp, over bool) {
	if m.cfg.Linger <= 0 || m.cfg.CatchingUp == nil || m.cfg.NoConflation {
		return false, 0, false, false
	}
	end, behind := m.cfg.CatchingUp(o)
	if !behind {
		return false, 0, true, false
	}
	if max := m.cfg.LingerMaxBytes; max > 0 && m.held.Load() > max {
		return false, 0, false, true
	}
	return true, end, false, false
}

// release ends the linger of the entries' units that wait for no later
// end than reached (all of them when reached is -1) and queues those
// that became ready.
func (m *Manager) release(es []lingerEntry, reached int64) {
	for _, e := range es {
		if e.u.endLinger(reached) {
			m.queue.Push(e.u)
		}
	}
}

// settleLingering runs after an Insert of a bundle read from o: the
// units whose end the reader has now read are released, a partition that
// caught up releases all of its lingering units, a buffer past
// LingerMaxBytes releases all.
func (m *Manager) settleLingering(o bundle.Origin, caughtUp, over bool) {
	if m.linger.n.Load() == 0 {
		return
	}
	k := partitionKey{o.Topic, o.Partition}
	switch {
	case over:
		for _, es := range m.linger.takeAll() {
			m.release(es, -1)
		}
	case caughtUp:
		m.release(m.linger.take(k), -1)
	default:
		reached := o.Offset + 1
		m.release(m.linger.reached(k, reached), reached)
	}
}

// pruneLingering drops the entries of units that no longer linger (their
// linger ran out and WakeAll queued them, or a worker took their job).
func (m *Manager) pruneLingering(now time.Time) {
	if m.linger.n.Load() == 0 {
		return
	}
	for k, es := range m.linger.takeAll() {
		for _, e := range es {
			if e.u.lingering(now) {
				m.linger.add(k, e.u, e.end)
			}
		}
	}
}

// endLinger ends the unit's linger, unless it waits for a later end than
// reached (-1: whatever it waits for); it returns whether the unit became
// ready (the caller pushes it).
func (u *Unit) endLinger(reached int64) bool {
	u.mu.Lock()
	defer u.mu.Unlock()
	if u.retired != live || u.lingerUntil.IsZero() || reached >= 0 && u.lingerEnd > reached {
		return false
	}
	u.lingerUntil, u.lingerEnd = time.Time{}, 0
	return u.becomeReadyLocked()
}

// lingering reports whether the unit still waits for its linger to end.
func (u *Unit) lingering(now time.Time) bool {
	u.mu.Lock()
	defer u.mu.Unlock()
	return u.retired == live && u.lingerUntil.After(now)
}
