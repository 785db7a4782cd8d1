package metricview

import (
	"math"
	"testing"

	"github.com/prometheus/client_golang/prometheus"
)

func TestSumAndQuantile(t *testing.T) {
	reg := prometheus.NewRegistry()
	c := prometheus.NewCounterVec(prometheus.CounterOpts{Name: "c_total", Help: "c"}, []string{"type", "result"})
	h := prometheus.NewHistogramVec(prometheus.HistogramOpts{Name: "h_seconds", Help: "h", Buckets: []float64{1, 2, 4}}, []string{"type"})
	reg.MustRegister(c, h)
	c.WithLabelValues("a", "ok").Add(3)
	c.WithLabelValues("b", "ok").Add(4)
	c.WithLabelValues("b", "error").Add(5)
	for _, v := range []float64{0.5, 1.5, 1.5, 3} {
		h.WithLabelValues("a").Observe(v)
	}

	v := Gather(reg)
	for _, tc := range []struct {
		labels map[string]string
		want   float64
	}{
		{nil, 12},
		{map[string]string{"result": "ok"}, 7},
		{map[string]string{"type": "b", "result": "error"}, 5},
		{map[string]string{"type": "z"}, 0},
	} {
		if got := v.Sum("c_total", tc.labels); got != tc.want {
			t.Errorf("Sum(%v) = %v, want %v", tc.labels, got, tc.want)
		}
	}
	if got := v.Sum("missing_total", nil); got != 0 {
		t.Errorf("Sum of a missing metric = %v, want 0", got)
	}
	// 4 samples: one in (0,1], two in (1,2], one in (2,4]. The median
	// (rank 2) falls halfway through the (1,2] bucket.
	if got := v.Quantile("h_seconds", 0.5); got != 1.5 {
		t.Errorf("median = %v, want 1.5", got)
	}
	if got := v.Quantile("h_seconds", 1); got != 4 {
		t.Errorf("max = %v, want 4", got)
	}
	if got := v.Quantile("missing_seconds", 0.5); !math.IsNaN(got) {
		t.Errorf("quantile of a missing histogram = %v, want NaN", got)
	}
}
