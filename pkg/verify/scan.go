package verify

import "github.com/stbridge/stb/pkg/sim"

// hubScan compares the rows of one table, read in an order that keeps each
// hub's rows together, with the expected state one hub at a time: it holds
// the keys found of the current hub only, so that memory does not grow
// with the number of hubs. K identifies a row within its hub.
//
// Call row for every row read and finish after the last: finish reports,
// through missing, the expected rows of every expected hub that were not
// found, including hubs without any row.
type hubScan[K comparable] struct {
	v     *verifier
	table string
	// missing reports the expected rows of hub whose keys are not in
	// found; found holds only keys of expected rows.
	missing func(hub string, st *sim.HubState, found map[K]bool)

	current string
	found   map[K]bool
	done    map[string]bool
}

func newHubScan[K comparable](v *verifier, table string, missing func(string, *sim.HubState, map[K]bool)) *hubScan[K] {
	return &hubScan[K]{v: v, table: table, missing: missing, done: make(map[string]bool, len(v.exp.Hubs))}
}

// row starts or continues hub and returns its expected state, or nil when
// the hub is not expected (the verifier notes it), and the set in which to
// note the keys of the expected rows found.
func (s *hubScan[K]) row(hub string) (*sim.HubState, map[K]bool) {
	if hub != s.current || s.found == nil {
		s.flush()
		s.current, s.found = hub, make(map[K]bool)
	}
	return s.v.expected(hub, s.table), s.found
}

// flush reports the missing rows of the current hub.
func (s *hubScan[K]) flush() {
	if s.found == nil {
		return
	}
	if st := s.v.exp.Hubs[s.current]; st != nil && !s.done[s.current] {
		s.missing(s.current, st, s.found)
		s.done[s.current] = true
	}
}

// finish reports the missing rows of the last hub read and of the expected
// hubs that had no rows.
func (s *hubScan[K]) finish() {
	s.flush()
	for _, hub := range s.v.hubNames {
		if !s.done[hub] {
			s.missing(hub, s.v.exp.Hubs[hub], nil)
		}
	}
}
