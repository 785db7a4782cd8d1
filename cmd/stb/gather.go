package main

import (
	"math"
	"sort"

	"github.com/prometheus/client_golang/prometheus"
	dto "github.com/prometheus/client_model/go"
)

// metricView reads the bridge's own registry, so the demo's progress line
// and summary show exactly what /metrics would.
type metricView struct {
	families map[string]*dto.MetricFamily
}

func gather(g prometheus.Gatherer) metricView {
	mfs, _ := g.Gather()
	v := metricView{families: make(map[string]*dto.MetricFamily, len(mfs))}
	for _, mf := range mfs {
		v.families[mf.GetName()] = mf
	}
	return v
}

func matches(m *dto.Metric, labels map[string]string) bool {
	for k, want := range labels {
		found := false
		for _, lp := range m.GetLabel() {
			if lp.GetName() == k {
				found = lp.GetValue() == want
				break
			}
		}
		if !found {
			return false
		}
	}
	return true
}

// sum adds up a counter's or gauge's series that carry the given labels.
func (v metricView) sum(name string, labels map[string]string) float64 {
	mf := v.families[name]
	if mf == nil {
		return 0
	}
	total := 0.0
	for _, m := range mf.GetMetric() {
		if !matches(m, labels) {
			continue
		}
		switch {
		case m.Counter != nil:
			total += m.GetCounter().GetValue()
		case m.Gauge != nil:
			total += m.GetGauge().GetValue()
		}
	}
	return total
}

// quantile estimates a quantile over all series of a histogram by linear
// interpolation inside the bucket that holds it; NaN when it is empty.
func (v metricView) quantile(name string, q float64) float64 {
	mf := v.families[name]
	if mf == nil {
		return math.NaN()
	}
	cum := map[float64]float64{}
	var count float64
	for _, m := range mf.GetMetric() {
		h := m.GetHistogram()
		if h == nil {
			continue
		}
		count += float64(h.GetSampleCount())
		for _, b := range h.GetBucket() {
			cum[b.GetUpperBound()] += float64(b.GetCumulativeCount())
		}
	}
	if count == 0 {
		return math.NaN()
	}
	bounds := make([]float64, 0, len(cum))
	for ub := range cum {
		bounds = append(bounds, ub)
	}
	sort.Float64s(bounds)
	rank := q * count
	prevBound, prevCount := 0.0, 0.0
	for _, ub := range bounds {
		c := cum[ub]
		if c >= rank {
			if c == prevCount {
				return ub
			}
			return prevBound + (ub-prevBound)*(rank-prevCount)/(c-prevCount)
		}
		prevBound, prevCount = ub, c
	}
	return bounds[len(bounds)-1]
}
