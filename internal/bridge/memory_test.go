package bridge

import (
	"sync/atomic"
	"testing"
	"testing/synctest"
	"time"
)

// TestMemoryReleasedAfterManyEvictions: a few evictions release nothing,
// however long one waits; many do, once; more soon after wait for the
// next allowed time (releaseEvery after the last release) rather than
// being forgotten or released at once. The clock is synctest's, so the
// waits are exact and take no time.
func TestMemoryReleasedAfterManyEvictions(t *testing.T) {
	synctest.Test(t, func(t *testing.T) {
		var calls atomic.Int32
		r := &memoryReleaser{release: func() { calls.Add(1) }}
		settle := func(d time.Duration) {
			time.Sleep(d)
			synctest.Wait() // every timer due by now has run and returned
		}

		r.evicted(releaseAfterEvictions - 1)
		settle(2 * releaseEvery)
		if n := calls.Load(); n != 0 {
			t.Fatalf("%d releases after %d evictions, want none", n, releaseAfterEvictions-1)
		}

		r.evicted(1)
		settle(time.Nanosecond)
		if n := calls.Load(); n != 1 {
			t.Fatalf("%d releases right after %d evictions, want 1", n, releaseAfterEvictions)
		}

		r.evicted(releaseAfterEvictions)
		settle(releaseEvery / 2)
		r.mu.Lock()
		scheduled := r.scheduled
		r.mu.Unlock()
		if n := calls.Load(); n != 1 || !scheduled {
			t.Fatalf("half of releaseEvery after a release: %d releases, scheduled %v; want the next one scheduled for later", n, scheduled)
		}
		settle(releaseEvery / 2)
		if n := calls.Load(); n != 2 {
			t.Fatalf("releaseEvery after the first release: %d releases, want 2", n)
		}
		r.mu.Lock()
		scheduled = r.scheduled
		r.mu.Unlock()
		if scheduled {
			t.Fatal("a release is still scheduled after it ran")
		}
	})
}
