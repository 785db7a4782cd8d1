package backoff

import (
	"fmt"
	"math/rand/v2"
	"time"
)

// Exponential is the capped exponential backoff, with full jitter on its
// upper half: Min doubling on every attempt up to Max.
type Exponential struct {
	Min time.Duration
	Max time.Duration
}

// Validate reports an Exponential that cannot wait: Min must be positive
// and Max at least Min.
func (b Exponential) Validate() error {
	if b.Min <= 0 || b.Max < b.Min {
		return fmt.Errorf("bad backoff %v…%v: need 0 < Min ≤ Max", b.Min, b.Max)
	}
	return nil
}

// Delay returns the wait before retry n (n ≥ 1, the number of failures so
// far): Min·2^(n-1) capped at Max, then drawn uniformly from its upper half
// so that many callers failing at once do not retry in lockstep.
func (b Exponential) Delay(n int) time.Duration {
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
