package conflation

import "github.com/stbridge/stb/pkg/bundle"

// Merging a slot's waiting deltas into fewer bundles (Config.MaxDeltaBytes):
// the unit's part of it, always under its lock.

// mergeLocked folds the pending deltas into as few bundles as it can:
// each run of consecutive deltas whose data decodes becomes one bundle
// that keeps the run's oldest origin, so the committer stays behind every
// merged offset, and its newest version. A delta whose data does not
// decode is never merged away: it stays pending between the runs, in its
// place, for the worker to dead-letter when it writes the group.
func (u *Unit) mergeLocked(s *slot, rel *releaser, tm *typeMetrics) {
	if len(s.pending) < 2 {
		return
	}
	type run struct {
		from, to int // s.pending[from:to]
		acc      any
	}
	var runs []run
	from := 0
	for i := 0; i <= len(s.pending); i++ {
		if i < len(s.pending) && decodeSafely(s.pending[i], u.m.cfg.Decode) {
			continue
		}
		if i-from >= 2 {
			runs = append(runs, run{from: from, to: i})
		}
		from = i + 1
	}
	// Every run is merged before anything is released, so that a merge
	// that panics (a bug of the bridge's) leaves the deltas as they are,
	// each written in turn; the slot then merges no more, rather than
	// leave the unit's lock held for good.
	for k := range runs {
		acc, ok := mergePayloads(s.merge, s.pending[runs[k].from:runs[k].to])
		if !ok {
			s.mergeOff = true
			tm.mergePanics.Inc()
			return
		}
		runs[k].acc = acc
	}
	if len(runs) == 0 {
		return
	}
	out := make([]*bundle.Bundle, 0, len(s.pending))
	next := 0
	for _, r := range runs {
		out = append(out, s.pending[next:r.from]...)
		out = append(out, u.mergedLocked(s.pending[r.from:r.to], r.acc, rel, tm))
		next = r.to
	}
	out = append(out, s.pending[next:]...)
	clear(s.pending)
	s.pending = append(s.pending[:0], out...)
}

// mergedLocked returns the bundle a run of deltas merged into, with
// payload acc, and queues the run's other bundles for release.
func (u *Unit) mergedLocked(run []*bundle.Bundle, acc any, rel *releaser, tm *typeMetrics) *bundle.Bundle {
	size, held := 0, 0
	for _, b := range run {
		size += b.Size
		held += b.HeldBytes()
	}
	first, last := run[0], run[len(run)-1]
	merged := *first // keeps the first's origin and tracker
	// The merged payload is no single message's data, nor of one event's
	// attributes: a dead letter of it carries the payload itself
	// (deadletter.Bundles), and no family rebuilds an event of it.
	merged.Raw, merged.Attrs, merged.Message = nil, nil, nil
	merged.Payload, merged.Version, merged.EventTime = acc, last.Version, last.EventTime
	merged.Size, merged.Held = size, held
	for _, b := range run[1:] {
		rel.add(b, tm.merged)
		// The merged bundle still accounts for the released one's bytes,
		// which it now holds; undo the decrement its release will make.
		u.m.held.Add(int64(b.HeldBytes()))
	}
	return &merged
}

// decodeSafely decodes b with decode unless it was decoded before, and
// reports whether its payload can be merged. A decoder that panics (a bug
// of the bridge's) leaves b undecoded and unmerged, for the worker, which
// dead-letters it as decode_panic with the stack in its log.
func decodeSafely(b *bundle.Bundle, decode bundle.DecodeFunc) (ok bool) {
	if b.Decoded() {
		return b.Decode(nil) == nil
	}
	if decode == nil {
		return false
	}
	defer func() {
		if recover() != nil {
			ok = false
		}
	}()
	return b.Decode(decode) == nil
}

// mergePayloads folds the bundles' payloads with merge, oldest first; ok
// is false when merge panicked.
func mergePayloads(merge MergeFunc, bs []*bundle.Bundle) (acc any, ok bool) {
	defer func() {
		if recover() != nil {
			acc, ok = nil, false
		}
	}()
	acc = bs[0].Payload
	for _, b := range bs[1:] {
		acc = merge(acc, b.Payload)
	}
	return acc, true
}
