package dispatcher

import (
	"fmt"
	"time"

	"github.com/prometheus/client_golang/prometheus"

	"github.com/stbridge/stb/conflation"
)

type metrics struct {
	duration    *prometheus.HistogramVec
	jobs        *prometheus.CounterVec
	freshness   *prometheus.HistogramVec
	heldFor     *prometheus.HistogramVec
	dead        *prometheus.CounterVec
	batches     prometheus.Histogram
	batchSplits prometheus.Counter
	// schemaErrors counts writes that failed with a schema or SQL error
	// (SQLSTATE class 42): kept and retried, but only an operator can cure
	// them.
	schemaErrors prometheus.Counter
	// unclassified counts writes that failed with an error the dispatcher
	// could not classify, a SQLSTATE of a class it does not know included:
	// retried a bounded number of times, then dead-lettered permanent_error
	// (the log line names the type, the retry log the SQLSTATE).
	unclassified prometheus.Counter
}

func newMetrics(reg prometheus.Registerer, d *Dispatcher) (*metrics, error) {
	m := &metrics{
		duration: prometheus.NewHistogramVec(prometheus.HistogramOpts{
			Namespace: "stb", Subsystem: "dispatcher", Name: "job_duration_seconds",
			Help:    "Duration of one job's database transaction, by bundle type and result (applied, fenced, transient, permanent).",
			Buckets: prometheus.ExponentialBuckets(0.0005, 2, 18),
		}, []string{"type", "result"}),
		jobs: prometheus.NewCounterVec(prometheus.CounterOpts{
			Namespace: "stb", Subsystem: "dispatcher", Name: "bundles_total",
			Help: "Bundles finished by workers, by type and result: applied (written), fenced (the database already held a newer version), transient (will be retried), permanent (dead-lettered).",
		}, []string{"type", "result"}),
		freshness: prometheus.NewHistogramVec(prometheus.HistogramOpts{
			Namespace: "stb", Subsystem: "bundle", Name: "freshness_seconds",
			Help:    "Time from a bundle's event time (when the hub produced it) to its commit in the database, by type.",
			Buckets: prometheus.ExponentialBuckets(0.01, 2, 16),
		}, []string{"type"}),
		heldFor: prometheus.NewHistogramVec(prometheus.HistogramOpts{
			Namespace: "stb", Subsystem: "conflation", Name: "held_seconds",
			Help:    "Time from reading a bundle to its commit in the database, by type.",
			Buckets: prometheus.ExponentialBuckets(0.001, 2, 18),
		}, []string{"type"}),
		batches: prometheus.NewHistogram(prometheus.HistogramOpts{
			Namespace: "stb", Subsystem: "dispatcher", Name: "batch_jobs",
			Help:    "Jobs of different units written together in one transaction.",
			Buckets: []float64{2, 4, 8, 16, 32, 64},
		}),
		batchSplits: prometheus.NewCounter(prometheus.CounterOpts{
			Namespace: "stb", Subsystem: "dispatcher", Name: "batch_splits_total",
			Help: "Batched transactions that failed and were retried one job at a time.",
		}),
		schemaErrors: prometheus.NewCounter(prometheus.CounterOpts{
			Namespace: "stb", Subsystem: "dispatcher", Name: "schema_errors_total",
			Help: "Writes that failed with a schema or SQL error (SQLSTATE class 42: undefined table or column, missing privilege). The bundle is kept and retried; an operator must fix the database.",
		}),
		unclassified: prometheus.NewCounter(prometheus.CounterOpts{
			Namespace: "stb", Subsystem: "dispatcher", Name: "unclassified_errors_total",
			Help: "Writes that failed with an error that is neither a timeout, a lost connection nor a database error of a known SQLSTATE class (an encode error, a bug, SQLSTATE XX internal error, 0A, 25, P0 a trigger's RAISE). Retried --max-unclassified-attempts times, then dead-lettered permanent_error.",
		}),
		dead: prometheus.NewCounterVec(prometheus.CounterOpts{
			Namespace: "stb", Subsystem: "dispatcher", Name: "dead_letters_total",
			Help: "Dead letters stored by the workers, one per bundle (a merged delta's parts each count), by type and reason: a permanent write failure or data that does not decode.",
		}, []string{"type", "reason"}),
	}
	busy := prometheus.NewGaugeFunc(prometheus.GaugeOpts{
		Namespace: "stb", Subsystem: "dispatcher", Name: "busy_workers",
		Help: "Workers running a job now.",
	}, func() float64 { return float64(d.Busy()) })
	workers := prometheus.NewGaugeFunc(prometheus.GaugeOpts{
		Namespace: "stb", Subsystem: "dispatcher", Name: "workers",
		Help: "Workers in the pool (equal to the database pool size).",
	}, func() float64 { return float64(d.cfg.Workers) })
	if reg != nil {
		for _, c := range []prometheus.Collector{m.duration, m.jobs, m.freshness, m.heldFor, m.dead, m.batches, m.batchSplits, m.schemaErrors, m.unclassified, busy, workers} {
			if err := reg.Register(c); err != nil {
				return nil, fmt.Errorf("dispatcher metrics: %w", err)
			}
		}
	}
	return m, nil
}

func (m *metrics) observe(job *conflation.Job, out conflation.Outcome, applied bool, took time.Duration) {
	result := "applied"
	switch {
	case out == conflation.Transient:
		result = "transient"
	case out == conflation.Permanent:
		result = "permanent"
	case !applied:
		result = "fenced"
	}
	m.duration.WithLabelValues(job.Type, result).Observe(took.Seconds())
	m.jobs.WithLabelValues(job.Type, result).Add(float64(len(job.Bundles)))
	if out != conflation.Applied {
		return
	}
	now := time.Now()
	fresh := m.freshness.WithLabelValues(job.Type)
	held := m.heldFor.WithLabelValues(job.Type)
	for _, b := range job.Bundles {
		if !b.EventTime.IsZero() {
			fresh.Observe(now.Sub(b.EventTime).Seconds())
		}
		if !b.ReceivedAt.IsZero() {
			held.Observe(now.Sub(b.ReceivedAt).Seconds())
		}
	}
}

func (m *metrics) deadLettered(typ, reason string, letters int) {
	m.dead.WithLabelValues(typ, reason).Add(float64(letters))
}
