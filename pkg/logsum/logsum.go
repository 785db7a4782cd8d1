// Package logsum counts occurrences of one repeated warning per interval,
// so that a flood (a database outage failing every write, a sender's
// malformed payloads) makes one line per interval instead of one per
// occurrence. The first occurrence after a quiet interval is to be logged
// at once; the others are counted by key, with the last one's detail kept,
// and taken as one summary per interval. An interval without any makes the
// counter quiet again. Its callers log; it does no I/O and holds its lock
// only to count.
package logsum

import (
	"slices"
	"sync"
	"time"
)

// Counter counts occurrences by key over intervals. Safe for concurrent
// use. L is the detail kept of the last occurrence counted (its error, its
// log fields).
type Counter[L any] struct {
	interval time.Duration

	mu     sync.Mutex
	since  time.Time // start of the interval being counted; zero when quiet
	counts map[string]int
	last   L
}

// New returns a counter summing up every interval.
func New[L any](interval time.Duration) *Counter[L] {
	return &Counter[L]{interval: interval, counts: map[string]int{}}
}

// Interval is the counter's interval.
func (c *Counter[L]) Interval() time.Duration { return c.interval }

// Add records one occurrence at now under key and reports whether it is
// the first after a quiet interval, which the caller logs at once (it is
// not counted); otherwise it is counted and last is kept.
func (c *Counter[L]) Add(now time.Time, key string, last L) (first bool) {
	c.mu.Lock()
	defer c.mu.Unlock()
	if c.since.IsZero() {
		c.since = now
		return true
	}
	c.counts[key]++
	c.last = last
	return false
}

// Summary is what was counted over one interval.
type Summary[L any] struct {
	// Keys are the keys counted, sorted; Counts their counts; Total
	// their sum.
	Keys   []string
	Counts map[string]int
	Total  int
	// Over is how long the interval ran; Last the last occurrence's
	// detail.
	Over time.Duration
	Last L
}

// Take returns the summary of the interval if it has ended by now and
// counted anything, and starts the next one; ok is false when there is
// nothing to log. An ended interval that counted nothing makes the
// counter quiet.
func (c *Counter[L]) Take(now time.Time) (s Summary[L], ok bool) {
	c.mu.Lock()
	if c.since.IsZero() || now.Sub(c.since) < c.interval {
		c.mu.Unlock()
		return s, false
	}
	var zero L
	counts, last, since := c.counts, c.last, c.since
	if len(counts) == 0 {
		c.since = time.Time{}
	} else {
		c.since = now
		c.counts, c.last = map[string]int{}, zero
	}
	c.mu.Unlock()
	if len(counts) == 0 {
		return s, false
	}
	s = Summary[L]{Counts: counts, Over: now.Sub(since).Round(time.Second), Last: last}
	for k, n := range counts {
		s.Keys = append(s.Keys, k)
		s.Total += n
	}
	slices.Sort(s.Keys)
	return s, true
}
