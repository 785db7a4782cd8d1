package bench

import (
	"math"
	"slices"
	"testing"

	"github.com/prometheus/client_golang/prometheus"

	"github.com/stbridge/stb/internal/metricview"
)

// TestSnapshotHistogram: a snapshot adds up the series that carry the
// labels, bucket by bucket; the difference of two is what was observed
// between them, whose quantiles are the later half's alone.
func TestSnapshotHistogram(t *testing.T) {
	reg := prometheus.NewRegistry()
	h := prometheus.NewHistogramVec(prometheus.HistogramOpts{Name: "fresh_seconds", Buckets: []float64{1, 2, 4}}, []string{"type"})
	reg.MustRegister(h)
	snap := func(labels map[string]string) histSnapshot {
		return snapshotHistogram(metricview.Gather(reg), "fresh_seconds", labels)
	}
	if s := snap(nil); s.count != 0 || !math.IsNaN(s.quantile(0.5)) {
		t.Fatalf("before any observation: %+v, median %v", s, s.quantile(0.5))
	}
	for _, v := range []float64{0.5, 0.5, 1.5} {
		h.WithLabelValues("heartbeat").Observe(v)
	}
	h.WithLabelValues("compliance").Observe(3)
	first := snap(nil)
	if want := []float64{1, 2, 4, math.Inf(1)}; !slices.Equal(first.bounds, want) {
		t.Fatalf("bounds %v, want %v", first.bounds, want)
	}
	if want := []float64{2, 3, 4, 4}; first.count != 4 || !slices.Equal(first.cum, want) {
		t.Errorf("all series: count %v, cumulative %v; want 4, %v", first.count, first.cum, want)
	}
	if hb := snap(map[string]string{"type": "heartbeat"}); hb.count != 3 || !slices.Equal(hb.cum, []float64{2, 3, 3, 3}) {
		t.Errorf("heartbeat alone: %+v", hb)
	}
	if none := snap(map[string]string{"type": "policyevents"}); none.count != 0 {
		t.Errorf("a label no series has: %+v", none)
	}
	if other := snapshotHistogram(metricview.Gather(reg), "no_such_seconds", nil); other.count != 0 || other.bounds != nil {
		t.Errorf("a histogram not registered: %+v", other)
	}

	for range 4 {
		h.WithLabelValues("compliance").Observe(10) // the second half: all slow
	}
	second := snap(nil).minus(first)
	if want := []float64{0, 0, 0, 4}; second.count != 4 || !slices.Equal(second.cum, want) {
		t.Errorf("second half: count %v, cumulative %v; want 4, %v", second.count, second.cum, want)
	}
	if q := second.quantile(0.5); q != 4 {
		t.Errorf("second half's median %v, want 4 (in +Inf: the largest finite bound)", q)
	}
	if q := first.quantile(0.5); q != 1 {
		t.Errorf("first half's median %v, want 1", q)
	}
}

// TestQuantile: interpolated inside the bucket that holds the rank, as
// Prometheus's histogram_quantile does.
func TestQuantile(t *testing.T) {
	s := func(bounds, cum []float64) histSnapshot {
		return histSnapshot{bounds: bounds, cum: cum, count: cum[len(cum)-1]}
	}
	inf := math.Inf(1)
	for name, tc := range map[string]struct {
		s    histSnapshot
		q    float64
		want float64
	}{
		"first bucket, from 0":      {s([]float64{1, 2, inf}, []float64{4, 4, 4}), 0.5, 0.5},
		"middle of the second":      {s([]float64{1, 2, inf}, []float64{2, 4, 4}), 0.75, 1.5},
		"top of a bucket":           {s([]float64{1, 2, inf}, []float64{2, 4, 4}), 1, 2},
		"in +Inf":                   {s([]float64{1, 2, inf}, []float64{1, 1, 4}), 0.99, 2},
		"p99 of a hundred":          {s([]float64{0.1, 0.2, 0.4, inf}, []float64{50, 90, 100, 100}), 0.99, 0.38},
		"rank reached before empty": {s([]float64{1, 2, 4, inf}, []float64{2, 2, 2, 2}), 1, 1},
		"nothing":                   {histSnapshot{bounds: []float64{1, inf}, cum: []float64{0, 0}}, 0.5, math.NaN()},
	} {
		t.Run(name, func(t *testing.T) {
			got := tc.s.quantile(tc.q)
			if math.IsNaN(tc.want) != math.IsNaN(got) || (!math.IsNaN(got) && math.Abs(got-tc.want) > 1e-9) {
				t.Errorf("quantile(%v) = %v, want %v", tc.q, got, tc.want)
			}
		})
	}
}
