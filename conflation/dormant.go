package conflation

import "github.com/stbridge/stb/pkg/bundle"

// maxTypes is the most bundle types a Manager takes: a dormant slot names
// its type in one byte.
const maxTypes = 256

// dormantSlot is what outlives an evicted unit of one of its types: the
// versions seen and processed. Only types with a version are kept, so a
// hub that sent nothing but heartbeats costs one of these.
type dormantSlot struct {
	seen, processed bundle.Version
	slot            uint8
	flags           uint8
}

const (
	hasSeen uint8 = 1 << iota
	hasProcessed
)

// dormantOf returns the versions of slots worth keeping.
func dormantOf(slots []slot) []dormantSlot {
	n := 0
	for i := range slots {
		if slots[i].hasSeen || slots[i].hasProcessed {
			n++
		}
	}
	if n == 0 {
		return nil
	}
	out := make([]dormantSlot, 0, n)
	for i := range slots {
		s := &slots[i]
		if !s.hasSeen && !s.hasProcessed {
			continue
		}
		ds := dormantSlot{seen: s.seen, processed: s.processed, slot: uint8(i)}
		if s.hasSeen {
			ds.flags |= hasSeen
		}
		if s.hasProcessed {
			ds.flags |= hasProcessed
		}
		out = append(out, ds)
	}
	return out
}

// restoreDormant records v as processed and seen for slot i of a hub
// without a unit, as Unit.restore does for one with a unit: a version
// only moves forward.
func restoreDormant(d []dormantSlot, i int, v bundle.Version) []dormantSlot {
	for k := range d {
		ds := &d[k]
		if int(ds.slot) != i {
			continue
		}
		if ds.flags&hasProcessed == 0 || v.Newer(ds.processed) {
			ds.processed = v
		}
		if ds.flags&hasSeen == 0 || v.Newer(ds.seen) {
			ds.seen = v
		}
		ds.flags |= hasSeen | hasProcessed
		return d
	}
	return append(d, dormantSlot{seen: v, processed: v, slot: uint8(i), flags: hasSeen | hasProcessed})
}
