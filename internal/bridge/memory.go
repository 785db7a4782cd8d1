package bridge

import (
	"context"
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

// memoryReleaser counts evictions and, after many, has its run loop
// release memory: at once, or as soon as releaseEvery has passed since the
// last release. The release runs on run's goroutine, which the bridge's
// Run owns and waits for; evicted never blocks.
type memoryReleaser struct {
	mu      sync.Mutex
	pending int
	// due holds a signal when pending reached releaseAfterEvictions.
	due chan struct{}
	// release is memtrim.Release; tests count calls instead.
	release func()
}

func newMemoryReleaser() *memoryReleaser {
	return &memoryReleaser{due: make(chan struct{}, 1), release: memtrim.Release}
}

// evicted is conflation.Config.OnEvict.
func (r *memoryReleaser) evicted(n int) {
	r.mu.Lock()
	r.pending += n
	full := r.pending >= releaseAfterEvictions
	r.mu.Unlock()
	if full {
		select {
		case r.due <- struct{}{}:
		default: // already signalled
		}
	}
}

// run releases memory when enough evictions were counted, at most once
// per releaseEvery, until ctx ends. It returns once no release is running.
func (r *memoryReleaser) run(ctx context.Context) error {
	var last time.Time
	for {
		select {
		case <-ctx.Done():
			return nil
		case <-r.due:
		}
		if wait := time.Until(last.Add(releaseEvery)); wait > 0 {
			t := time.NewTimer(wait)
			select {
			case <-ctx.Done():
				t.Stop()
				return nil
			case <-t.C:
			}
		}
		r.mu.Lock()
		full := r.pending >= releaseAfterEvictions
		if full {
			r.pending = 0
		}
		r.mu.Unlock()
		if !full {
			continue // a signal left from before the last release
		}
		last = time.Now()
		r.release() // a full collection, then the freed pages go back, Go's and C's
	}
}
