package transport

import (
	"errors"
	"fmt"
	"sync"

	"github.com/prometheus/client_golang/prometheus"
	"github.com/stbridge/stb/pkg/bundle"
	"github.com/stbridge/stb/pkg/deadletter"
)

// Start labels of stb_transport_assignments_total.
const (
	startStored = "stored" // at the position stored in Postgres
	startReset  = "reset"  // at auto.offset.reset: nothing usable stored
	startGroup  = "group"  // at the group's committed offset: the store failed
)

// metrics are the reader's Prometheus collectors.
type metrics struct {
	messages    *prometheus.CounterVec
	rejected    *prometheus.CounterVec
	skipped     *skippedCounters
	assignments *prometheus.CounterVec
	assigned    prometheus.Gauge
	kafkaErrors *prometheus.CounterVec
	pauses      prometheus.Counter
	outOfRange  prometheus.Counter
	resumes     prometheus.Counter
	paused      prometheus.Gauge
	handoffs    prometheus.Counter
}

// newMetrics builds the collectors and registers them with reg; a nil reg
// leaves them unregistered.
func newMetrics(reg prometheus.Registerer) (*metrics, error) {
	m := &metrics{
		messages: prometheus.NewCounterVec(prometheus.CounterOpts{
			Name: "stb_transport_messages_total",
			Help: "Kafka messages read, by topic (the --kafka-topics entry that subscribed to it: the topic, or the pattern that matched it) and outcome (accepted or rejected).",
		}, []string{"topic", "outcome"}),
		rejected: prometheus.NewCounterVec(prometheus.CounterOpts{
			Name: "stb_transport_rejected_total",
			Help: "Messages rejected on read, by reason; each becomes a dead letter.",
		}, []string{"reason"}),
		skipped: newSkippedCounters(prometheus.NewCounterVec(prometheus.CounterOpts{
			Name: "stb_transport_skipped_total",
			Help: "Valid messages of a type a sender is known to send that the bridge does not store; not dead letters. By type: the global-hub profile's bundle type (globalhub.event.clustergroupupgrade, globalhub.managedhub.info), or the name of the family that skipped it (work: a family's types are the sender's to choose).",
		}, []string{"type"})),
		assignments: prometheus.NewCounterVec(prometheus.CounterOpts{
			Name: "stb_transport_assignments_total",
			Help: "Partitions assigned, by where reading started (stored, reset or group).",
		}, []string{"start"}),
		assigned: prometheus.NewGauge(prometheus.GaugeOpts{
			Name: "stb_transport_assigned_partitions",
			Help: "Partitions currently assigned to this reader.",
		}),
		outOfRange: prometheus.NewCounter(prometheus.CounterOpts{
			Name: "stb_transport_offset_out_of_range_total",
			Help: "Partitions restarted at auto.offset.reset because their position was outside the log.",
		}),
		pauses: prometheus.NewCounter(prometheus.CounterOpts{
			Name: "stb_transport_pauses_total",
			Help: "Times reading was paused because the buffered bytes exceeded --max-buffered-bytes.",
		}),
		resumes: prometheus.NewCounter(prometheus.CounterOpts{
			Name: "stb_transport_resumes_total",
			Help: "Times reading resumed after the buffered bytes fell below 80 % of --max-buffered-bytes.",
		}),
		paused: prometheus.NewGauge(prometheus.GaugeOpts{
			Name: "stb_transport_paused_partitions",
			Help: "Partitions paused by backpressure now.",
		}),
		handoffs: prometheus.NewCounter(prometheus.CounterOpts{
			Name: "stb_transport_handoffs_total",
			Help: "Batches of polled messages the poll loop handed to the decoding goroutine: messages read divided by it is how many each wake-up carried.",
		}),
		kafkaErrors: prometheus.NewCounterVec(prometheus.CounterOpts{
			Name: "stb_transport_kafka_errors_total",
			Help: "Errors reported by the Kafka client, by librdkafka error code.",
		}, []string{"code"}),
	}
	// Every reason and start appears from the beginning, at zero, so that
	// rate() and alerts work before the first occurrence.
	for _, r := range deadletter.ReadReasons {
		m.rejected.WithLabelValues(string(r))
	}
	for _, s := range []string{startStored, startReset, startGroup} {
		m.assignments.WithLabelValues(s)
	}
	if reg == nil {
		return m, nil
	}
	var errs []error
	for _, c := range []prometheus.Collector{m.messages, m.rejected, m.skipped.vec, m.assignments, m.assigned, m.kafkaErrors, m.pauses, m.resumes, m.paused, m.outOfRange, m.handoffs} {
		if err := reg.Register(c); err != nil {
			errs = append(errs, err)
		}
	}
	if err := errors.Join(errs...); err != nil {
		return nil, fmt.Errorf("register transport metrics: %w", err)
	}
	return m, nil
}

// topicCounters are one topic's message counters, resolved once so the hot
// path does not hash label values per message.
type topicCounters struct {
	accepted, rejected prometheus.Counter
}

// forTopic returns the counters of a topic label (TopicLabels.Label).
func (m *metrics) forTopic(topic string) *topicCounters {
	return &topicCounters{
		accepted: m.messages.WithLabelValues(topic, "accepted"),
		rejected: m.messages.WithLabelValues(topic, "rejected"),
	}
}

// skippedCounters are stb_transport_skipped_total's counters. No label
// value may come from the wire, where a sender picks it: the series were
// labelled with the event's type, and the work family skips every
// …manifestbundles.spec.* type, so any sender could make one series per
// type it made up, in every replica, for as long as Prometheus keeps them
// (issue 34, item 3). A skipped reject's Type is the profile's own word
// for it (decodeFamily: the family's name; GlobalHub: one of its fixed
// bundle types), and this holds the label set to that: the global-hub
// profile's skipped types, and at most maxSkipLabels others (the families'
// names, a handful), anything past them counted as "other". Safe for
// concurrent use.
type skippedCounters struct {
	vec *prometheus.CounterVec

	mu     sync.Mutex
	byType map[string]prometheus.Counter
	others int
}

// maxSkipLabels bounds the labels of skipped messages besides the
// global-hub profile's: the names of the families read.
const maxSkipLabels = 16

// skipOther is the label of what no profile named.
const skipOther = "other"

// ghSkipLabels are the labels of the global-hub profile's skipped
// messages: the types it does not store and the types it screens (a hub
// info it ignores).
var ghSkipLabels = func() map[string]bool {
	out := map[string]bool{}
	for short := range ghSkipped {
		out[bundle.GlobalHubPrefix+short] = true
	}
	for short, t := range ghTypes {
		if t.screened {
			out[bundle.GlobalHubPrefix+short] = true
		}
	}
	return out
}()

// newSkippedCounters starts with the series "other" at 0, so that the
// family is exported before anything is skipped, as the dashboard's panel
// and the deploy test expect of every series they name.
func newSkippedCounters(vec *prometheus.CounterVec) *skippedCounters {
	return &skippedCounters{vec: vec, byType: map[string]prometheus.Counter{skipOther: vec.WithLabelValues(skipOther)}}
}

// WithLabelValues returns the counter of a skipped message whose reject
// has the type label: its own series when the label is one of the
// global-hub profile's, or one of the first maxSkipLabels others, else
// the series "other".
func (s *skippedCounters) WithLabelValues(label string) prometheus.Counter {
	s.mu.Lock()
	defer s.mu.Unlock()
	if c, ok := s.byType[label]; ok {
		return c
	}
	if !ghSkipLabels[label] {
		if s.others >= maxSkipLabels {
			label = skipOther
			if c, ok := s.byType[label]; ok {
				return c
			}
		} else {
			s.others++
		}
	}
	c := s.vec.WithLabelValues(label)
	s.byType[label] = c
	return c
}
