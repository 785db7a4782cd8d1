package bench

import (
	"math"
	"sort"

	"github.com/stbridge/stb/internal/metricview"
)

// histSnapshot is the state of a Prometheus histogram at one moment, all
// its series added up: cumulative counts per upper bound. The difference
// of two snapshots is the histogram of what was observed between them,
// which is how the overload scenario tells the freshness of its first half
// from that of its second.
type histSnapshot struct {
	bounds []float64 // ascending upper bounds, +Inf last
	cum    []float64 // cumulative count at each bound
	count  float64
}

// snapshotHistogram adds up the series of histogram name in v that carry
// labels.
func snapshotHistogram(v metricview.View, name string, labels map[string]string) histSnapshot {
	mf := v.Families[name]
	if mf == nil {
		return histSnapshot{}
	}
	byBound := map[float64]float64{}
	var count float64
	for _, m := range mf.GetMetric() {
		h := m.GetHistogram()
		if h == nil || !metricview.Matches(m, labels) {
			continue
		}
		count += float64(h.GetSampleCount())
		for _, b := range h.GetBucket() {
			byBound[b.GetUpperBound()] += float64(b.GetCumulativeCount())
		}
		byBound[math.Inf(1)] += float64(h.GetSampleCount())
	}
	s := histSnapshot{count: count}
	for ub := range byBound {
		s.bounds = append(s.bounds, ub)
	}
	sort.Float64s(s.bounds)
	for _, ub := range s.bounds {
		s.cum = append(s.cum, byBound[ub])
	}
	return s
}

// minus returns what was observed after earlier (a snapshot of the same
// histogram).
func (s histSnapshot) minus(earlier histSnapshot) histSnapshot {
	prev := map[float64]float64{}
	for i, ub := range earlier.bounds {
		prev[ub] = earlier.cum[i]
	}
	out := histSnapshot{bounds: s.bounds, cum: make([]float64, len(s.cum)), count: s.count - earlier.count}
	for i, ub := range s.bounds {
		out.cum[i] = s.cum[i] - prev[ub]
	}
	return out
}

// quantile estimates the q-quantile by linear interpolation inside the
// bucket that holds it, as Prometheus's histogram_quantile does; NaN when
// nothing was observed. A quantile in the +Inf bucket is reported as the
// largest finite bound.
func (s histSnapshot) quantile(q float64) float64 {
	if s.count <= 0 {
		return math.NaN()
	}
	rank := q * s.count
	prevBound, prevCum := 0.0, 0.0
	for i, ub := range s.bounds {
		c := s.cum[i]
		if c >= rank {
			if math.IsInf(ub, 1) {
				return prevBound
			}
			if c == prevCum {
				return ub
			}
			return prevBound + (ub-prevBound)*(rank-prevCum)/(c-prevCum)
		}
		prevBound, prevCum = ub, c
	}
	return prevBound
}
