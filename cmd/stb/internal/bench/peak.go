package bench

import (
	"fmt"
	"sync"
	"time"

	"github.com/stbridge/stb/internal/memtrim"
)

// memSampleInterval is how often a running variant's memory is sampled.
// A peak shorter than it can be missed; the sampler also reads at the
// variant's start and stop.
const memSampleInterval = time.Second

// memUse is an amount of memory of this process: its resident size, the
// live Go heap after the last GC, what the Go runtime holds from the OS
// (the heap with its garbage and free spans not yet returned, stacks, its
// own structures), and the C heap (glibc's bytes in use, and what its
// arenas hold mapped), where librdkafka keeps its buffers. Their sum is
// about the RSS; a peak keeps each one's own largest value.
type memUse struct{ RSS, Heap, GoHeld, CInUse, CArenas int64 }

// processMemory reads this process's memory now.
func processMemory() memUse {
	inUse, arenas := memtrim.CHeap()
	return memUse{RSS: selfRSS(), Heap: goLiveHeap(), GoHeld: goHeld(), CInUse: inUse, CArenas: arenas}
}

// memSampler reads memory at a fixed interval from its start until Stop
// and keeps the largest values: the peak of one bridge variant, whatever
// the scenario does meanwhile. Its goroutine is owned by the sampler and
// waited for by Stop.
type memSampler struct {
	read func() memUse
	stop chan struct{}
	done chan struct{}
	once sync.Once

	mu   sync.Mutex
	peak memUse // guarded by mu
}

// startMemSampler reads once now, then every interval until Stop.
func startMemSampler(every time.Duration, read func() memUse) *memSampler {
	s := &memSampler{read: read, stop: make(chan struct{}), done: make(chan struct{})}
	s.sample()
	go s.run(every)
	return s
}

func (s *memSampler) run(every time.Duration) {
	defer close(s.done)
	t := time.NewTicker(every)
	defer t.Stop()
	for {
		select {
		case <-s.stop:
			return
		case <-t.C:
			s.sample()
		}
	}
}

func (s *memSampler) sample() {
	m := s.read()
	s.mu.Lock()
	s.peak = memUse{RSS: max(s.peak.RSS, m.RSS), Heap: max(s.peak.Heap, m.Heap), GoHeld: max(s.peak.GoHeld, m.GoHeld),
		CInUse: max(s.peak.CInUse, m.CInUse), CArenas: max(s.peak.CArenas, m.CArenas)}
	s.mu.Unlock()
}

// Stop ends the sampling with a last reading, waits for the goroutine and
// returns the peak. It may be called more than once.
func (s *memSampler) Stop() memUse {
	s.once.Do(func() {
		close(s.stop)
		<-s.done
		s.sample()
	})
	return s.Peak()
}

// Peak returns the largest values read so far.
func (s *memSampler) Peak() memUse {
	s.mu.Lock()
	defer s.mu.Unlock()
	return s.peak
}

// rssBudgetSlack is what docs/design.md (Performance) allows above --max-buffered-bytes:
// librdkafka's queue and the rest of the process.
const rssBudgetSlack = 128 << 20

// rssBudget holds the stb variant's peak RSS (of `which` run, when the
// scenario has several) to --max-buffered-bytes + 128 MiB. Without a
// budget (0) there is nothing to hold it to.
func (s *scenarioResult) rssBudget(peak memUse, budget int64, which string) {
	if budget <= 0 {
		return
	}
	detail := fmt.Sprintf("%s against a budget of %s", mib(float64(peak.RSS)), mib(float64(budget)))
	if which != "" {
		detail = which + ": " + detail
	}
	s.ratio("stb peak RSS / (--max-buffered-bytes + 128 MiB)", float64(peak.RSS)/float64(budget+rssBudgetSlack), detail).atMost(1, "×")
	s.note("stb's peaks, each its own: RSS %s; held by the Go runtime %s (live heap after a collection %s); C heap in use %s, its arenas %s",
		mib(float64(peak.RSS)), mib(float64(peak.GoHeld)), mib(float64(peak.Heap)), mib(float64(peak.CInUse)), mib(float64(peak.CArenas)))
	s.note("peak RSS is of the whole bench process, sampled every %s from a variant's start to its stop after handing freed memory back to the OS; what earlier variants left in it may still count (catch-up runs the bridge first)", memSampleInterval)
}

// peakRSS adds the variant's peak resident size to its row.
func (r *variantRow) peakRSS(m memUse) *variantRow {
	return r.set("peak rss", "peakRSS", float64(m.RSS), mib(float64(m.RSS)))
}
