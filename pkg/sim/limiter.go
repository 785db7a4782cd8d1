package sim

import (
	"context"
	"fmt"
	"time"
)

// burstWindow is how much time's worth of messages the limiter lets through
// at once. Bursts of 10 ms keep the rate smooth to anyone watching it per
// second while sparing a sleep (and a timer) per message at high rates.
const burstWindow = 10 * time.Millisecond

// limiter is a token bucket refilled by the clock: tokens accrue at rate per
// second up to burst, and each message takes one. Unlike sleeping 1/rate
// after every message, time spent publishing counts against the wait, and
// sleeps that overshoot are made up by the tokens that accrued meanwhile,
// so the long-run rate is the configured one.
//
// It is used by the one goroutine that runs the simulation and has no lock.
type limiter struct {
	rate   float64 // tokens per second; 0 means unlimited
	burst  float64
	tokens float64
	last   time.Time
	now    func() time.Time
}

// newLimiter returns a limiter of rate messages per second (0: unlimited),
// with a full bucket.
func newLimiter(rate float64, now func() time.Time) *limiter {
	burst := max(1, rate*burstWindow.Seconds())
	return &limiter{rate: rate, burst: burst, tokens: burst, last: now(), now: now}
}

// wait takes one token, sleeping until one has accrued or ctx ends.
func (l *limiter) wait(ctx context.Context) error {
	if err := ctx.Err(); err != nil {
		return err
	}
	if l.rate == 0 {
		return nil
	}
	l.refill()
	if l.tokens < 1 {
		need := time.Duration((1 - l.tokens) / l.rate * float64(time.Second))
		t := time.NewTimer(need)
		select {
		case <-ctx.Done():
			t.Stop()
			return fmt.Errorf("rate limit wait: %w", ctx.Err())
		case <-t.C:
		}
		l.refill()
	}
	// A timer may fire a little early on some platforms; the bucket then
	// goes slightly negative and the next wait is longer by as much.
	l.tokens--
	return nil
}

// refill adds the tokens accrued since the last call.
func (l *limiter) refill() {
	now := l.now()
	if elapsed := now.Sub(l.last); elapsed > 0 {
		l.tokens = min(l.burst, l.tokens+elapsed.Seconds()*l.rate)
	}
	l.last = now
}
