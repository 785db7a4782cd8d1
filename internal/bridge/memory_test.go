package bridge

import (
	"context"
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
		r := newMemoryReleaser()
		r.release = func() { calls.Add(1) }
		ctx, cancel := context.WithCancel(context.Background())
		done := make(chan error)
		go func() { done <- r.run(ctx) }()
		settle := func(d time.Duration) {
			time.Sleep(d)
			synctest.Wait() // every release due by now has run and returned
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
		if n := calls.Load(); n != 1 {
			t.Fatalf("half of releaseEvery after a release: %d releases, want the next one later", n)
		}
		settle(releaseEvery / 2)
		if n := calls.Load(); n != 2 {
			t.Fatalf("releaseEvery after the first release: %d releases, want 2", n)
		}
		cancel()
		if err := <-done; err != nil {
			t.Fatal(err)
		}
	})
}

// TestMemoryReleaseOwned: the release runs on run's goroutine, so run
// returns only once a release in progress has finished, and none starts
// after it returned. Issue 21: the release ran in a time.AfterFunc
// callback that nothing waited for.
func TestMemoryReleaseOwned(t *testing.T) {
	synctest.Test(t, func(t *testing.T) {
		entered, finish := make(chan struct{}), make(chan struct{})
		var calls atomic.Int32
		r := newMemoryReleaser()
		r.release = func() {
			if calls.Add(1) == 1 {
				close(entered)
				<-finish
			}
		}
		ctx, cancel := context.WithCancel(context.Background())
		done := make(chan error, 1)
		go func() { done <- r.run(ctx) }()

		r.evicted(releaseAfterEvictions)
		<-entered
		cancel()
		synctest.Wait()
		select {
		case <-done:
			t.Error("run returned while its release was running")
		default:
		}
		close(finish)
		<-done
		r.evicted(releaseAfterEvictions) // after run returned: nothing runs it
		time.Sleep(2 * releaseEvery)
		synctest.Wait()
		if n := calls.Load(); n != 1 {
			t.Fatalf("%d releases, want 1: none after run returned", n)
		}
	})
}
