package test

import (
	"fmt"
	"sync"
	"testing"
	"time"
)

// metricPeaks scrapes /metrics in the background and keeps what the
// backpressure test needs.
type metricPeaks struct {
	stop  chan struct{}
	done  chan struct{}
	limit float64 // --max-buffered-bytes

	mu              sync.Mutex
	scrapes, failed int
	firstErr        error
	// missing names metrics a scrape lacked: a bound checked against a
	// metric that is not exported would pass vacuously.
	missing             map[string]bool
	buffered, heap, rss float64 // peaks
	pausedScrapes       int     // scrapes with partitions paused
	overLimitScrapes    int     // scrapes with more buffered than the limit
	pauses, resumes     float64 // the last values
}

func (b *bridge) watchMetrics(every time.Duration, limit float64) *metricPeaks {
	p := &metricPeaks{stop: make(chan struct{}), done: make(chan struct{}), limit: limit, missing: map[string]bool{}}
	go func() {
		defer close(p.done)
		for {
			m, err := b.scrape()
			p.mu.Lock()
			if err != nil {
				p.failed++
				if p.firstErr == nil {
					p.firstErr = err
				}
			} else {
				p.scrapes++
				get := func(name string) float64 {
					v, ok := m.sum(name)
					if !ok {
						p.missing[name] = true
					}
					return v
				}
				buffered := get("stb_conflation_buffered_bytes")
				p.buffered = max(p.buffered, buffered)
				p.heap = max(p.heap, get("go_memstats_heap_inuse_bytes"))
				p.rss = max(p.rss, get("process_resident_memory_bytes"))
				if get("stb_transport_paused_partitions") > 0 {
					p.pausedScrapes++
				}
				if buffered > p.limit {
					p.overLimitScrapes++
				}
				p.pauses = get("stb_transport_pauses_total")
				p.resumes = get("stb_transport_resumes_total")
			}
			p.mu.Unlock()
			select {
			case <-p.stop:
				return
			case <-time.After(every):
			}
		}
	}()
	return p
}

func (p *metricPeaks) finish() {
	close(p.stop)
	<-p.done
}

const (
	bpKiB = 1 << 10
	bpMiB = 1 << 20
)

// TestBackpressureBacklog starts the bridge on a backlog of 1,000 hubs
// whose payloads far exceed a small --max-buffered-bytes, with two
// database connections, so that reading is much faster than writing. The
// reader must pause and resume, the buffered bytes must stay within the
// limit plus one poll's overshoot, the Go heap must stay within a budget
// that does not grow with the backlog, and the database must end in the
// hubs' final state.
func TestBackpressureBacklog(t *testing.T) {
	const (
		limit = 2 * bpMiB
		// The reader checks the buffered bytes after every message it
		// polls (one message per poll) and pauses every partition as soon
		// as they exceed the limit; pausing also drops what librdkafka had
		// prefetched. So the buffer overshoots the limit by at most the
		// one bundle that crossed it. The margin is four bundles of the
		// largest size this test allows (64 KiB; the backlog's largest
		// is checked below): the one that crossed the limit, one more a
		// poll may hand over while the pause takes effect, and as much
		// again to spare.
		margin       = 256 * bpKiB
		largestAllow = 64 * bpKiB
		// The Go heap in use of the bridge: the process itself (runtime,
		// pgx pools, librdkafka wrappers, metrics, the 1,000 units'
		// bookkeeping) takes about 12–16 MiB; on top of it the buffered
		// payloads count about twice (the decoded bundles and the message
		// values they came from, until the next GC), and GOGC=100 lets
		// the heap grow to twice the live data before a collection. So
		// 16 MiB + 4 × (limit + margin) ≈ 25 MiB, rounded up to a budget
		// of 32 MiB (a fixed margin of 30 MiB over the limit). A reader
		// that did not pause would hold far more: see the check of the
		// backlog's size below.
		heapBudget = 32 * bpMiB
	)
	e := newEnv(t, 4)
	const generations = 2
	exp := e.simulate("backlog", "--hubs", "1000", "--clusters", "100", "--generations", fmt.Sprint(generations), "--seed", "51")
	n := e.messages(exp)
	backlog, largest := e.valueSizes(n)
	t.Logf("backlog: %d messages, %.1f MiB of payload, largest %d bytes; limit %d MiB", n, float64(backlog)/bpMiB, largest, limit/bpMiB)
	if largest > largestAllow {
		t.Fatalf("the largest bundle (%d bytes) is over the %d the margin allows for", largest, largestAllow)
	}
	// A reader that never paused would reach the end of the backlog long
	// before the two workers wrote most hubs, holding about one
	// generation: the newest bundle of every hub and type (conflation
	// drops the older ones). Those payloads alone, before any copy or GC
	// headroom, must be over the budget.
	if perGeneration := backlog / generations; perGeneration < heapBudget {
		t.Fatalf("a generation of the backlog (%d bytes) is too small to tell a bounded buffer from an unbounded one", perGeneration)
	}

	b := e.startBridge("--max-buffered-bytes", fmt.Sprint(limit), "--db-pool-size", "2")
	peaks := b.watchMetrics(20*time.Millisecond, limit)
	start := time.Now()
	// The stored offsets reach the end of every partition only once
	// nothing is held any more: a cheaper signal than running verify
	// over 100,000 clusters again and again while the bridge works.
	e.waitOffsets(e.highWatermarks(), 3*time.Minute)
	took := time.Since(start)
	peaks.finish()
	e.waitVerified(exp, time.Minute)

	p := peaks
	t.Logf("caught up in %v; %d scrapes of /metrics (%d failed), %d with partitions paused",
		took.Round(time.Millisecond), p.scrapes, p.failed, p.pausedScrapes)
	t.Logf("pauses %.0f, resumes %.0f; peak buffered %d bytes (%.2f MiB; limit %.2f MiB + margin %d KiB), %d scrapes over the limit",
		p.pauses, p.resumes, int64(p.buffered), p.buffered/bpMiB, float64(limit)/bpMiB, margin/bpKiB, p.overLimitScrapes)
	t.Logf("peak Go heap in use %.1f MiB (budget %d MiB); peak resident set %.1f MiB",
		p.heap/bpMiB, heapBudget/bpMiB, p.rss/bpMiB)

	if p.scrapes < 10 {
		t.Fatalf("only %d scrapes of /metrics succeeded (first error: %v)", p.scrapes, p.firstErr)
	}
	if len(p.missing) > 0 {
		t.Fatalf("metrics missing from /metrics: %v", p.missing)
	}
	if p.pauses == 0 || p.resumes == 0 {
		t.Errorf("stb_transport_pauses_total = %v, stb_transport_resumes_total = %v; want both > 0", p.pauses, p.resumes)
	}
	if p.buffered > limit+margin {
		t.Errorf("stb_conflation_buffered_bytes peaked at %.0f, over the limit %d + margin %d", p.buffered, limit, margin)
	}
	if p.heap > heapBudget {
		t.Errorf("go_memstats_heap_inuse_bytes peaked at %.0f, over the budget %d", p.heap, heapBudget)
	}
	b.stop(30 * time.Second)
}
