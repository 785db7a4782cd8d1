package demo

import (
	"sort"
	"sync"
	"sync/atomic"
	"time"
)

// latencySampleEvery is how often latency samples the counts.
const latencySampleEvery = 50 * time.Millisecond

// latency measures how long messages take from being published to their
// offset being committed, on this machine's clock only: it samples how
// many messages were published and how many committed, and takes the
// k-th message as committed when the committed count first reached k.
// Event times play no part, so a simulated agent whose clock was set back
// does not lengthen it (stb_bundle_freshness_seconds measures from the
// event's time). It treats the partitions as one queue, so a message is
// timed by the order of the counts, not its own offset; the resolution is
// latencySampleEvery.
type latency struct {
	sent      *atomic.Int64
	committed func() int64
	total     atomic.Int64 // all published, once known; 0 before
	from      atomic.Int64 // the messages up to this one are not timed

	mu        sync.Mutex
	sentAt    []sample // sent counts, rising
	commitsAt []sample // committed counts, rising

	done, stopped chan struct{}
	once          sync.Once
}

type sample struct {
	t time.Time
	n int64
}

func startLatency(sent *atomic.Int64, committed func() int64) *latency {
	l := &latency{sent: sent, committed: committed, done: make(chan struct{}), stopped: make(chan struct{})}
	go l.run()
	return l
}

func (l *latency) run() {
	defer close(l.stopped)
	tick := time.NewTicker(latencySampleEvery)
	defer tick.Stop()
	for {
		l.take(time.Now())
		select {
		case <-l.done:
			return
		case <-tick.C:
		}
	}
}

// take records the counts at now when they rose.
func (l *latency) take(now time.Time) {
	sent := l.sent.Load()
	if t := l.total.Load(); t > 0 {
		sent = t
	}
	c := l.committed()
	l.mu.Lock()
	defer l.mu.Unlock()
	if n := len(l.sentAt); n == 0 || sent > l.sentAt[n-1].n {
		l.sentAt = append(l.sentAt, sample{now, sent})
	}
	if n := len(l.commitsAt); c > 0 && (n == 0 || c > l.commitsAt[n-1].n) {
		l.commitsAt = append(l.commitsAt, sample{now, c})
	}
}

// startAt times only the messages published after the first n: those
// published while the bridge was reading, not the backlog's, whose wait
// the demo chose.
func (l *latency) startAt(n int64) { l.from.Store(n) }

// published records that all n messages are published.
func (l *latency) published(n int64) { l.total.Store(n) }

// stop ends the sampling; it may be called more than once.
func (l *latency) stop() {
	l.once.Do(func() { close(l.done) })
	<-l.stopped
}

// quantiles returns the median and the 99th percentile of the messages'
// latencies, and how many messages they are over.
func (l *latency) quantiles() (p50, p99 float64, n int64) {
	l.mu.Lock()
	defer l.mu.Unlock()
	type weighted struct {
		d float64
		w int64
	}
	var ws []weighted
	prev := l.from.Load()
	for _, c := range l.commitsAt {
		if c.n <= prev {
			continue
		}
		// The messages prev+1..c.n committed by c.t, each timed from
		// when the sent count reached it.
		for k := prev + 1; k <= c.n; {
			i := sort.Search(len(l.sentAt), func(i int) bool { return l.sentAt[i].n >= k })
			if i == len(l.sentAt) {
				break // committed more than seen sent: counted no further
			}
			last := min(c.n, l.sentAt[i].n)
			ws = append(ws, weighted{max(0, c.t.Sub(l.sentAt[i].t).Seconds()), last - k + 1})
			k = last + 1
		}
		prev = c.n
	}
	sort.Slice(ws, func(i, j int) bool { return ws[i].d < ws[j].d })
	for _, w := range ws {
		n += w.w
	}
	q := func(p float64) float64 {
		target, acc := int64(p*float64(n)), int64(0)
		for _, w := range ws {
			if acc += w.w; acc > target {
				return w.d
			}
		}
		if len(ws) > 0 {
			return ws[len(ws)-1].d
		}
		return 0
	}
	return q(0.5), q(0.99), n
}
