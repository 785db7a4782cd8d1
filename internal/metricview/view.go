// Package metricview reads sums and quantiles off a Prometheus registry,
// for the demo and the bench.
package metricview

import (
	"math"
	"sort"

	"github.com/prometheus/client_golang/prometheus"
	dto "github.com/prometheus/client_model/go"
)

// View is one gathering of a registry, so that the demo's progress line,
// its summary and the bench show exactly what /metrics would.
type View struct {
	Families map[string]*dto.MetricFamily
}

// Gather reads every metric of g once.
func Gather(g prometheus.Gatherer) View {
	mfs, _ := g.Gather()
	v := View{Families: make(map[string]*dto.MetricFamily, len(mfs))}
	for _, mf := range mfs {
		v.Families[mf.GetName()] = mf
	}
	return v
}

// Matches reports whether m carries every one of labels.
func Matches(m *dto.Metric, labels map[string]string) bool {
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

// Sum adds up a counter's or gauge's series that carry the given labels.
func (v View) Sum(name string, labels map[string]string) float64 {
	mf := v.Families[name]
	if mf == nil {
		return 0
	}
	total := 0.0
	for _, m := range mf.GetMetric() {
		if !Matches(m, labels) {
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

// Quantile estimates a quantile over all series of a histogram by linear
// interpolation inside the bucket that holds it; NaN when it is empty.
func (v View) Quantile(name string, q float64) float64 {
	mf := v.Families[name]
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
