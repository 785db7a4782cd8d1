package dispatcher

import (
	"testing"
	"testing/synctest"
	"time"

	"github.com/stbridge/stb/conflation"
)

// TestRetryTimersWaitedFor: Run's stopTimers returns only after the retry
// timers' callbacks that already fired have returned, and stops the
// others. Issue 21: it stopped the timers without waiting for them, so a
// callback could still wake a unit after the dispatcher's Run returned.
func TestRetryTimersWaitedFor(t *testing.T) {
	synctest.Test(t, func(t *testing.T) {
		entered, release := make(chan struct{}), make(chan struct{})
		calls := 0
		d := &Dispatcher{timers: map[*time.Timer]struct{}{}}
		d.wake = func(*conflation.Unit) {
			calls++
			close(entered)
			<-release
		}
		d.wakeAfter(nil, time.Second)
		d.wakeAfter(nil, time.Hour)
		<-entered // the first timer fired; its callback runs

		stopped := make(chan struct{})
		go func() {
			d.stopTimers()
			close(stopped)
		}()
		synctest.Wait() // stopTimers has returned, or is blocked for good
		select {
		case <-stopped:
			t.Error("stopTimers returned while a timer's callback was still running")
		default:
		}
		close(release)
		<-stopped
		time.Sleep(2 * time.Hour) // the stopped timer's time passes
		synctest.Wait()
		if calls != 1 {
			t.Fatalf("%d callbacks ran, want 1: the second timer was stopped", calls)
		}
	})
}
