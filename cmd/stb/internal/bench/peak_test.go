package bench

import (
	"strings"
	"testing"
	"testing/synctest"
	"time"
)

// TestMemSamplerPeak: the peak is the largest reading from the start to
// the stop, the readings at both ends and every interval's included, and
// nothing is read after Stop. Time is synthetic: the bubble's clock moves
// only when every goroutine in it waits.
func TestMemSamplerPeak(t *testing.T) {
	for name, tc := range map[string]struct {
		readings []memUse // at the start, at each interval, at the stop
		want     memUse
	}{
		"larger at the start": {[]memUse{{RSS: 300, Heap: 30}, {RSS: 100, Heap: 10}}, memUse{RSS: 300, Heap: 30}},
		"larger at the stop":  {[]memUse{{RSS: 100, Heap: 10}, {RSS: 300, Heap: 30}}, memUse{RSS: 300, Heap: 30}},
		// RSS and heap peak at different readings.
		"separate peaks": {[]memUse{{RSS: 100, Heap: 50}, {RSS: 200, Heap: 20}}, memUse{RSS: 200, Heap: 50}},
		// A spike between the ends, seen only at an interval.
		"spike in between": {[]memUse{{RSS: 100}, {RSS: 100}, {RSS: 900, Heap: 90}, {RSS: 100}, {RSS: 100}}, memUse{RSS: 900, Heap: 90}},
	} {
		t.Run(name, func(t *testing.T) {
			synctest.Test(t, func(t *testing.T) {
				const every = time.Second
				n := 0 // readings so far; read runs on the sampler's goroutine or in Stop, never at once
				read := func() memUse {
					n++
					if n > len(tc.readings) {
						t.Errorf("reading %d, only %d expected", n, len(tc.readings))
						return memUse{}
					}
					return tc.readings[n-1]
				}
				s := startMemSampler(every, read)
				intervals := len(tc.readings) - 2
				time.Sleep(time.Duration(intervals)*every + every/2)
				synctest.Wait()
				if n != 1+intervals {
					t.Fatalf("%d readings after %d intervals, want %d", n, intervals, 1+intervals)
				}
				if got := s.Stop(); got != tc.want {
					t.Errorf("peak %+v, want %+v", got, tc.want)
				}
				time.Sleep(10 * every)
				synctest.Wait()
				if again := s.Stop(); again != tc.want || n != len(tc.readings) {
					t.Errorf("after Stop: peak %+v and %d readings, want %+v and %d", again, n, tc.want, len(tc.readings))
				}
			})
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
			res.rssBudget(memUse{RSS: tc.peak, Heap: 100 << 20, GoHeld: 300 << 20, CInUse: 200 << 20, CArenas: 250 << 20}, tc.budget, "")
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
			want := "held by the Go runtime 300.0MiB (live heap after a collection 100.0MiB); C heap in use 200.0MiB, its arenas 250.0MiB"
			if notes := strings.Join(res.Notes, "\n"); !strings.Contains(notes, want) {
				t.Errorf("notes %q do not break the peak down (%q)", notes, want)
			}
		})
	}
}
