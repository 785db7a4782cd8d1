package bridge

import (
	"sync"
	"time"

	"github.com/stbridge/stb/internal/memtrim"
)

// Evicted units' memory goes back to the operating system once this many
// were evicted since the last time, at most once per releaseEvery. The Go
// runtime returns freed memory on its own only slowly, so without it a
// bridge that once held 200,000 hubs keeps their resident memory long
// after evicting them (BENCHMARKS.md, "Idle hubs leave memory").
const (
	releaseAfterEvictions = 1000
	releaseEvery          = time.Minute
)

// memoryReleaser counts evictions and releases memory after many: at
// once, or as soon as releaseEvery has passed since the last release.
type memoryReleaser struct {
	mu        sync.Mutex
	pending   int
	last      time.Time
	scheduled bool
	// release is memtrim.Release; tests count calls instead.
	release func()
}

// evicted is conflation.Config.OnEvict.
func (r *memoryReleaser) evicted(n int) {
	r.mu.Lock()
	defer r.mu.Unlock()
	r.pending += n
	if r.scheduled || r.pending < releaseAfterEvictions {
		return
	}
	r.scheduled = true
	time.AfterFunc(time.Until(r.last.Add(releaseEvery)), func() {
		r.mu.Lock()
		r.pending, r.last = 0, time.Now()
		release := r.release
		r.mu.Unlock()
		if release == nil {
			release = memtrim.Release // a full collection, then the freed pages go back, Go's and C's
		}
		release()
		r.mu.Lock()
		r.scheduled = false
		r.mu.Unlock()
	})
}
