package bench

import (
	"sync/atomic"
	"testing"
	"time"
)

// TestMemSamplerPeak: the peak is the largest reading from the start to
// the stop, the readings at both ends included, and nothing is read after
// Stop.
func TestMemSamplerPeak(t *testing.T) {
	for name, tc := range map[string]struct {
		readings []memUse // in order; the last repeats
		every    time.Duration
		want     memUse
	}{
		// An interval that never passes: only the start and the stop read.
		"larger at the start": {[]memUse{{RSS: 300, Heap: 30}, {RSS: 100, Heap: 10}}, time.Hour, memUse{RSS: 300, Heap: 30}},
		"larger at the stop":  {[]memUse{{RSS: 100, Heap: 10}, {RSS: 300, Heap: 30}}, time.Hour, memUse{RSS: 300, Heap: 30}},
		// RSS and heap peak at different readings.
		"separate peaks": {[]memUse{{RSS: 100, Heap: 50}, {RSS: 200, Heap: 20}}, time.Hour, memUse{RSS: 200, Heap: 50}},
		// A spike between the ends, seen only by the loop.
		"spike in between": {[]memUse{{RSS: 100}, {RSS: 100}, {RSS: 900, Heap: 90}, {RSS: 100}}, time.Millisecond, memUse{RSS: 900, Heap: 90}},
	} {
		t.Run(name, func(t *testing.T) {
			var n atomic.Int64
			read := func() memUse {
				i := min(int(n.Add(1))-1, len(tc.readings)-1)
				return tc.readings[i]
			}
			s := startMemSampler(tc.every, read)
			deadline := time.Now().Add(10 * time.Second)
			for n.Load() < int64(len(tc.readings)-1) {
				if time.Now().After(deadline) {
					t.Fatalf("%d readings after 10s", n.Load())
				}
				time.Sleep(time.Millisecond)
			}
			if got := s.Stop(); got != tc.want {
				t.Errorf("peak %+v, want %+v", got, tc.want)
			}
			after := n.Load()
			time.Sleep(20 * time.Millisecond)
			if again := s.Stop(); again != tc.want || n.Load() != after {
				t.Errorf("after Stop: peak %+v and %d readings, want %+v and %d", again, n.Load(), tc.want, after)
			}
		})
	}
}

func TestRSSBudget(t *testing.T) {
	for name, tc := range map[string]struct {
		peak, budget int64
		ratios       int
		met          bool
	}{
		"within":    {peak: 500 << 20, budget: 512 << 20, ratios: 1, met: true},
		"at":        {peak: 640 << 20, budget: 512 << 20, ratios: 1, met: true},
		"above":     {peak: 700 << 20, budget: 512 << 20, ratios: 1, met: false},
		"no budget": {peak: 700 << 20, budget: 0, ratios: 0},
	} {
		t.Run(name, func(t *testing.T) {
			res := &scenarioResult{}
			res.rssBudget(tc.peak, tc.budget, "")
			if len(res.Ratios) != tc.ratios {
				t.Fatalf("%d ratios, want %d", len(res.Ratios), tc.ratios)
			}
			if tc.ratios == 0 {
				return
			}
			r := res.Ratios[0]
			if want := float64(tc.peak) / float64(tc.budget+128<<20); r.Value != want {
				t.Errorf("value %v, want %v", r.Value, want)
			}
			if r.Met == nil || *r.Met != tc.met {
				t.Errorf("met %v, want %v", r.Met, tc.met)
			}
		})
	}
}
