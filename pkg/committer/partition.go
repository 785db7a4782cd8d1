package committer

import (
	"sort"
	"sync"

	"github.com/stbridge/stb/pkg/bundle"
)

// Partition tracks the offsets of one assigned partition that are still
// outstanding. It implements bundle.Tracker.
//
// Offsets are read in increasing order, so the outstanding ones form a queue
// sorted by offset: Read appends, Done marks an entry and pops the finished
// prefix. The position (lowest outstanding, else last read + 1) therefore
// never moves backwards.
type Partition struct {
	Topic     string
	Partition int32

	mu   sync.Mutex
	offs []int64 // outstanding offsets, ascending, from head on
	done []bool  // done[i] says offs[i] finished out of order
	head int
	next int64 // last read + 1; -1 until something was read or a start is known
	// committed is the position last persisted; guarded by mu.
	committed int64
	// retired is set once the committer stops tracking the partition
	// (revoked, or claimed by another bridge): its position is never
	// stored again (pending). Guarded by mu.
	retired bool
	// idle are closed, and dropped, once nothing is outstanding.
	idle []chan struct{}
	// highWatermark is the partition's high watermark as the reader last
	// saw it (-1: unknown), for the lag metric.
	highWatermark int64
}

func newPartition(topic string, partition int32, start int64) *Partition {
	return &Partition{Topic: topic, Partition: partition, next: start, committed: start, highWatermark: -1}
}

// Read registers offset as outstanding. Call it, in offset order, before the
// bundle read from it is handed to anyone who may call Done.
func (p *Partition) Read(offset int64) {
	p.mu.Lock()
	p.offs = append(p.offs, offset)
	p.done = append(p.done, false)
	if offset+1 > p.next {
		p.next = offset + 1
	}
	p.mu.Unlock()
}

// Done marks the offset of o finished. Unknown offsets are ignored, so a
// bundle finishing after its partition was revoked and reassigned does no
// harm.
func (p *Partition) Done(o bundle.Origin) {
	p.mu.Lock()
	defer p.mu.Unlock()
	live := p.offs[p.head:]
	i := sort.Search(len(live), func(i int) bool { return live[i] >= o.Offset })
	if i == len(live) || live[i] != o.Offset {
		return
	}
	p.done[p.head+i] = true
	for p.head < len(p.offs) && p.done[p.head] {
		p.head++
	}
	if p.head == len(p.offs) {
		p.offs, p.done, p.head = p.offs[:0], p.done[:0], 0
		for _, ch := range p.idle {
			close(ch)
		}
		p.idle = nil
	} else if p.head > 1024 && p.head > len(p.offs)/2 {
		n := copy(p.offs, p.offs[p.head:])
		copy(p.done, p.done[p.head:])
		p.offs, p.done, p.head = p.offs[:n], p.done[:n], 0
	}
}

// Position returns the offset from which a restart must read: the lowest
// outstanding offset, else the last read plus one. ok is false while
// nothing was read and no start offset is known.
func (p *Partition) Position() (offset int64, ok bool) {
	p.mu.Lock()
	defer p.mu.Unlock()
	return p.positionLocked()
}

func (p *Partition) positionLocked() (int64, bool) {
	if p.head < len(p.offs) {
		return p.offs[p.head], true
	}
	return p.next, p.next >= 0
}

// Outstanding returns how many offsets are read but not done.
func (p *Partition) Outstanding() int {
	p.mu.Lock()
	defer p.mu.Unlock()
	n := 0
	for _, d := range p.done[p.head:] {
		if !d {
			n++
		}
	}
	return n
}

// Idle returns a channel that is closed once no offset read is
// outstanding: at once if none is. A revocation waits on it for the
// partition's writes in flight to finish.
func (p *Partition) Idle() <-chan struct{} {
	ch := make(chan struct{})
	p.mu.Lock()
	defer p.mu.Unlock()
	if p.head == len(p.offs) {
		close(ch)
		return ch
	}
	p.idle = append(p.idle, ch)
	return ch
}

// SetHighWatermark records the partition's high watermark, for the lag
// metric; the reader calls it from librdkafka's statistics.
func (p *Partition) SetHighWatermark(offset int64) {
	p.mu.Lock()
	p.highWatermark = offset
	p.mu.Unlock()
}

// Lag returns the high watermark minus the committed position (0 before
// the first commit counts as offset 0): what a restart would read again or
// for the first time; ok false while no high watermark was recorded.
func (p *Partition) Lag() (lag int64, ok bool) {
	p.mu.Lock()
	defer p.mu.Unlock()
	if p.highWatermark < 0 {
		return 0, false
	}
	return max(0, p.highWatermark-max(p.committed, 0)), true
}

// pending returns the position if it moved past the committed one and
// the partition is not retired.
func (p *Partition) pending() (int64, bool) {
	p.mu.Lock()
	defer p.mu.Unlock()
	pos, ok := p.positionLocked()
	if !ok || p.retired || pos <= p.committed {
		return 0, false
	}
	return pos, true
}

// retire marks the partition no longer this committer's to store: a
// commit that listed it before skips it from now on.
func (p *Partition) retire() {
	p.mu.Lock()
	p.retired = true
	p.mu.Unlock()
}

// markCommitted records that pos was persisted.
func (p *Partition) markCommitted(pos int64) {
	p.mu.Lock()
	if pos > p.committed {
		p.committed = pos
	}
	p.mu.Unlock()
}

// Committed returns the position last persisted (-1 when none).
func (p *Partition) Committed() int64 {
	p.mu.Lock()
	defer p.mu.Unlock()
	return p.committed
}
