package conflation

import (
	"math/rand/v2"
	"time"
)

// Backoff is the capped exponential backoff, with full jitter on its upper
// half, between retries of a transiently failing bundle type.
type Backoff struct {
	Min time.Duration
	Max time.Duration
}

// DefaultBackoff is 100ms doubling up to 30s.
var DefaultBackoff = Backoff{Min: 100 * time.Millisecond, Max: 30 * time.Second}

// delay returns the wait before attempt n (n ≥ 1): Min·2^(n-1) capped at Max,
// then drawn uniformly from its upper half so that many hubs failing at once
// do not retry in lockstep.
func (b Backoff) delay(n int) time.Duration {
	d := b.Min
	for i := 1; i < n && d < b.Max; i++ {
		d *= 2
	}
	if d > b.Max {
		d = b.Max
	}
	if d <= 1 {
		return d
	}
	half := d / 2
	return half + time.Duration(rand.Int64N(int64(half)))
}
