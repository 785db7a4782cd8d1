package bench

import (
	"github.com/stbridge/stb/dbsyncers"
	"github.com/stbridge/stb/pkg/bundle"
)

// finalState is the newest state of every hub in a backlog, as the
// bundles that write it: per hub, the last bundle of each complete type,
// the deltas on the last base, and every stream bundle (events are never
// conflated: each one is a row). It is what the pgx ceiling writes, and
// exactly what a perfectly conflating bridge would have to write.
type finalState struct {
	types []bundle.TypeInfo
	index map[string]int
	hubs  map[string]*hubFinal
	order []string // hubs in the order they were first seen
}

// hubFinal holds one hub's bundles per type index.
type hubFinal struct {
	slots [][]*bundle.Bundle
}

func newFinalState(reg *dbsyncers.Registry) *finalState {
	s := &finalState{types: reg.Types(), index: map[string]int{}, hubs: map[string]*hubFinal{}}
	for i, t := range s.types {
		s.index[t.Name] = i
	}
	return s
}

// add records a decoded bundle. Bundles of one hub must come in the order
// the hub sent them, as they do from one Kafka partition.
func (s *finalState) add(b *bundle.Bundle) {
	i, ok := s.index[b.Type]
	if !ok {
		return
	}
	h := s.hubs[b.Hub]
	if h == nil {
		h = &hubFinal{slots: make([][]*bundle.Bundle, len(s.types))}
		s.hubs[b.Hub] = h
		s.order = append(s.order, b.Hub)
	}
	slot := h.slots[i]
	if n := len(slot); n > 0 && s.types[i].Stale(b.Version, slot[n-1].Version) {
		return // stale, as the bridge would drop it (an equal version is taken by the types that take it)
	}
	switch s.types[i].Kind {
	case bundle.Complete:
		h.slots[i] = append(slot[:0], b)
	case bundle.Delta:
		if len(slot) > 0 && slot[0].Dependency != b.Dependency {
			slot = slot[:0] // a newer base: the older deltas never apply
		}
		h.slots[i] = append(slot, b)
	default:
		h.slots[i] = append(slot, b)
	}
}

// jobs returns the hub's writes in priority order, each a group of
// Registry.Write: the complete bundles, the deltas on the base that is
// written (if it is the one they build on), and the stream bundles.
func (s *finalState) jobs(hub string) [][]*bundle.Bundle {
	h := s.hubs[hub]
	if h == nil {
		return nil
	}
	var out [][]*bundle.Bundle
	for i, t := range s.types {
		slot := h.slots[i]
		if len(slot) == 0 {
			continue
		}
		if t.Rule == bundle.Exactly {
			base := h.slots[s.index[t.DependsOn]]
			if len(base) == 0 || base[len(base)-1].Version != slot[0].Dependency {
				continue // the last base came after the deltas
			}
		}
		out = append(out, slot)
	}
	return out
}

// bundles returns the number of bundles the state writes.
func (s *finalState) bundles() int {
	n := 0
	for _, h := range s.order {
		for _, job := range s.jobs(h) {
			n += len(job)
		}
	}
	return n
}
