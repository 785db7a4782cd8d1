package transport

import (
	"fmt"
	"testing"

	"github.com/prometheus/client_golang/prometheus"
	"github.com/prometheus/client_golang/prometheus/testutil"
)

// TestSkippedCountersBounded: whatever labels the profiles hand
// stb_transport_skipped_total, its series are the global-hub profile's
// skipped types, at most maxSkipLabels others and "other" (issue 34, item
// 3), and no skipped message goes uncounted.
func TestSkippedCountersBounded(t *testing.T) {
	m, err := newMetrics(prometheus.NewRegistry())
	if err != nil {
		t.Fatal(err)
	}
	const n = 1000
	for i := range n {
		m.skipped.WithLabelValues(fmt.Sprintf("made-up-%d", i)).Inc()
	}
	for label := range ghSkipLabels {
		m.skipped.WithLabelValues(label).Inc()
	}
	want := maxSkipLabels + len(ghSkipLabels) + 1
	if got := testutil.CollectAndCount(m.skipped.vec); got != want {
		t.Errorf("%d series for %d labels, want %d", got, n+len(ghSkipLabels), want)
	}
	if got := testutil.ToFloat64(m.skipped.vec.WithLabelValues(skipOther)); got != n-maxSkipLabels {
		t.Errorf(`"other" counted %v, want %d`, got, n-maxSkipLabels)
	}
	for label := range ghSkipLabels {
		if got := testutil.ToFloat64(m.skipped.vec.WithLabelValues(label)); got != 1 {
			t.Errorf("%s counted %v, want 1", label, got)
		}
	}
}
