package committer

import (
	"cmp"
	"slices"
)

// PartitionStats is one assigned partition as the committer tracks it: a
// snapshot for status pages, the demo and the bench.
type PartitionStats struct {
	Topic     string
	Partition int32
	// Committed is the position last stored, -1 when none was.
	Committed int64
	// Position is what would be stored now: the lowest offset still held,
	// else the last read + 1; HasPosition is false before the first read.
	Position    int64
	HasPosition bool
	// Outstanding is the number of messages read and not yet done with.
	Outstanding int
	// Lag is the high watermark minus the committed position: what a
	// restart would read again or for the first time; -1 before the
	// reader learned the high watermark.
	Lag int64
}

// Stats returns a snapshot of every assigned partition, by topic and
// number. It takes each partition's lock in turn, briefly.
func (c *Committer) Stats() []PartitionStats {
	var out []PartitionStats
	for _, p := range c.Partitions() {
		pos, ok := p.Position()
		lag, known := p.Lag()
		if !known {
			lag = -1
		}
		out = append(out, PartitionStats{
			Topic: p.Topic, Partition: p.Partition, Committed: p.Committed(),
			Position: pos, HasPosition: ok, Outstanding: p.Outstanding(), Lag: lag,
		})
	}
	slices.SortFunc(out, func(a, b PartitionStats) int {
		return cmp.Or(cmp.Compare(a.Topic, b.Topic), cmp.Compare(a.Partition, b.Partition))
	})
	return out
}
