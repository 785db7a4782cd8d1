package bridge

import (
	"context"

	"github.com/stbridge/stb/conflation"
	"github.com/stbridge/stb/pkg/committer"
)

// Stats is a snapshot of the bridge for the demo's progress line, the
// bench and the status page. Counters by type and outcome are on
// Gatherer(), exactly as /metrics serves them.
type Stats struct {
	// Read, Accepted and Rejected count the messages the reader took off
	// Kafka, turned into bundles and rejected.
	Read, Accepted, Rejected uint64
	// Hubs is the number of conflation units in memory.
	Hubs int
	// HeldBytes is what the bundles held in units keep (what backpressure counts).
	HeldBytes int64
	// ReadyUnits is the length of the ready queue.
	ReadyUnits int
	// BusyWorkers is the number of workers writing now.
	BusyWorkers int
	// Partitions are the assigned partitions, by topic and number.
	Partitions []committer.PartitionStats
}

// Stats returns a snapshot; it takes no lock that a worker or the reader
// holds for long.
func (b *Bridge) Stats() Stats {
	rs := b.reader.Stats()
	s := Stats{
		Read: rs.Read, Accepted: rs.Accepted, Rejected: rs.Rejected,
		Hubs:        b.manager.Len(),
		HeldBytes:   b.manager.HeldBytes(),
		ReadyUnits:  b.manager.Queue().Len(),
		BusyWorkers: b.dispatcher.Busy(),
	}
	s.Partitions = b.committer.Stats()
	return s
}

// Outstanding is the number of messages read and not yet done with, over
// all partitions.
func (s Stats) Outstanding() int {
	n := 0
	for _, p := range s.Partitions {
		n += p.Outstanding
	}
	return n
}

// Done is the number of messages the bridge is done with on partitions it
// read from the start: the sum of their positions.
func (s Stats) Done() int64 {
	var n int64
	for _, p := range s.Partitions {
		if p.HasPosition && p.Position > 0 {
			n += p.Position
		}
	}
	return n
}

// Committed is the sum of the stored positions.
func (s Stats) Committed() int64 {
	var n int64
	for _, p := range s.Partitions {
		n += max(0, p.Committed)
	}
	return n
}

// Units returns the state of the hub's unit, or of every unit when hub is
// empty.
func (b *Bridge) Units(hub string) []conflation.UnitState {
	if hub != "" {
		u, ok := b.manager.Lookup(hub)
		if !ok {
			return []conflation.UnitState{}
		}
		return []conflation.UnitState{u.Snapshot()}
	}
	units := b.manager.Units()
	out := make([]conflation.UnitState, len(units))
	for i, u := range units {
		out[i] = u.Snapshot()
	}
	return out
}

// Problems lists what keeps the bridge from being ready: the database
// unreachable, no partitions assigned, commits or writes failing. Empty
// means ready.
func (b *Bridge) Problems(ctx context.Context) []string { return b.readiness.Problems(ctx) }
