package bench

import (
	"math"
	"testing"
	"time"
)

// TestSteadyCPUPer1000Read: the steady target counts the bridge's and
// PostgreSQL's CPU time together, per 1,000 bundles read.
func TestSteadyCPUPer1000Read(t *testing.T) {
	for name, tc := range map[string]struct {
		m    steadyMeasure
		want float64
	}{
		"at the target":  {steadyMeasure{cpu: 3 * time.Second, pgCPU: 4 * time.Second, read: 20_000}, 0.35},
		"bridge alone":   {steadyMeasure{cpu: 7 * time.Second, read: 10_000}, 0.7},
		"postgres alone": {steadyMeasure{pgCPU: 500 * time.Millisecond, read: 1_000}, 0.5},
	} {
		t.Run(name, func(t *testing.T) {
			if got := tc.m.withPostgresPer1000Read(); math.Abs(got-tc.want) > 1e-9 {
				t.Errorf("%v CPU-s per 1,000 read, want %v", got, tc.want)
			}
		})
	}
}
