package bridge

import (
	"sync/atomic"
	"testing"
	"time"
)

// TestMemoryReleasedAfterManyEvictions: a few evictions release nothing;
// many do, once; more soon after wait for the next allowed time rather
// than being forgotten.
func TestMemoryReleasedAfterManyEvictions(t *testing.T) {
	var calls atomic.Int32
	r := &memoryReleaser{release: func() { calls.Add(1) }}
	r.evicted(releaseAfterEvictions - 1)
	time.Sleep(50 * time.Millisecond)
	if n := calls.Load(); n != 0 {
		t.Fatalf("%d releases after %d evictions, want none", n, releaseAfterEvictions-1)
	}
	r.evicted(1)
	waitFor(t, 5*time.Second, "a release", func() bool { return calls.Load() == 1 })

	r.evicted(releaseAfterEvictions)
	time.Sleep(50 * time.Millisecond)
	r.mu.Lock()
	scheduled, last := r.scheduled, r.last
	r.mu.Unlock()
	if n := calls.Load(); n != 1 || !scheduled || time.Since(last) > releaseEvery {
		t.Fatalf("right after a release: %d releases, scheduled %v; want the next one scheduled for later", n, scheduled)
	}
}
