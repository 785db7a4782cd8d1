package conflation

import (
	"errors"
	"fmt"

	"github.com/prometheus/client_golang/prometheus"
)

type counter interface{ Inc() }

// typeMetrics are one bundle type's counters, curried once so the hot path
// does no label lookups.
type typeMetrics struct {
	inserted, conflated, stale, merged, retries, resyncs, mergePanics prometheus.Counter
}

type metrics struct {
	types   []*typeMetrics
	unknown prometheus.Counter
	evicted prometheus.Counter
}

// newMetrics builds the collectors and registers them with reg (none with
// a nil reg); a registration error is returned, never a panic.
func newMetrics(reg prometheus.Registerer, types []string, m *Manager) (*metrics, error) {
	bundles := prometheus.NewCounterVec(prometheus.CounterOpts{
		Namespace: "stb", Subsystem: "conflation", Name: "bundles_total",
		Help: "Bundles inserted into conflation units, by type and outcome: inserted (accepted), conflated (replaced before being written), stale (not newer than what the unit held or processed), merged (folded into another delta), unknown_type.",
	}, []string{"type", "outcome"})
	retries := prometheus.NewCounterVec(prometheus.CounterOpts{
		Namespace: "stb", Subsystem: "conflation", Name: "retries_total",
		Help: "Transient write failures scheduled for a retry, by bundle type.",
	}, []string{"type"})
	resyncs := prometheus.NewCounterVec(prometheus.CounterOpts{
		Namespace: "stb", Subsystem: "conflation", Name: "resyncs_total",
		Help: "Resyncs asked of hubs, by the bundle type asked for: a bundle waited for a version of it that was never read.",
	}, []string{"type"})
	units := prometheus.NewGaugeFunc(prometheus.GaugeOpts{
		Namespace: "stb", Subsystem: "conflation", Name: "units",
		Help: "Conflation units (hubs) known to the bridge.",
	}, func() float64 { return float64(m.Len()) })
	held := prometheus.NewGaugeFunc(prometheus.GaugeOpts{
		Namespace: "stb", Subsystem: "conflation", Name: "buffered_bytes",
		Help: "Bytes the bundles held in all units keep in memory (their data, the message's key and headers, the bundle itself), written or not yet: what --max-buffered-bytes bounds.",
	}, func() float64 { return float64(m.held.Load()) })
	ready := prometheus.NewGaugeFunc(prometheus.GaugeOpts{
		Namespace: "stb", Subsystem: "conflation", Name: "ready_queue_length",
		Help: "Units waiting on the ready queue for a worker.",
	}, func() float64 { return float64(m.queue.Len()) })
	dormant := prometheus.NewGaugeFunc(prometheus.GaugeOpts{
		Namespace: "stb", Subsystem: "conflation", Name: "dormant_hubs",
		Help: "Hubs without a unit, known only by their versions: evicted after --unit-idle-timeout, or restored and not heard from since.",
	}, func() float64 { return float64(m.Dormant()) })
	mergePanics := prometheus.NewCounterVec(prometheus.CounterOpts{
		Namespace: "stb", Subsystem: "conflation", Name: "merge_panics_total",
		Help: "Merges of pending deltas that panicked (a bug of the bridge's), by bundle type: the deltas are written one by one instead.",
	}, []string{"type"})
	evicted := prometheus.NewCounter(prometheus.CounterOpts{
		Namespace: "stb", Subsystem: "conflation", Name: "units_evicted_total",
		Help: "Units evicted from memory after --unit-idle-timeout with nothing held or in flight.",
	})
	if reg != nil {
		var errs []error
		for _, c := range []prometheus.Collector{bundles, retries, resyncs, mergePanics, units, held, ready, dormant, evicted} {
			if err := reg.Register(c); err != nil {
				errs = append(errs, err)
			}
		}
		if err := errors.Join(errs...); err != nil {
			return nil, fmt.Errorf("conflation: register metrics: %w", err)
		}
	}
	out := &metrics{unknown: bundles.WithLabelValues("", "unknown_type"), evicted: evicted}
	for _, t := range types {
		out.types = append(out.types, &typeMetrics{
			inserted:  bundles.WithLabelValues(t, "inserted"),
			conflated: bundles.WithLabelValues(t, "conflated"),
			stale:     bundles.WithLabelValues(t, "stale"),
			merged:    bundles.WithLabelValues(t, "merged"),
			retries:   retries.WithLabelValues(t),
			resyncs:   resyncs.WithLabelValues(t),

			mergePanics: mergePanics.WithLabelValues(t),
		})
	}
	return out, nil
}
