package committer

import (
	"strconv"

	"github.com/prometheus/client_golang/prometheus"
)

// collector exports the assigned partitions' committed offsets, positions
// and lag (high watermark − committed), computed at scrape time, so that
// a revoked partition's series go with it, plus commit outcomes.
//
// Series are labelled by topic and partition, where topic is what label
// makes of it: a topic labelled with itself has a series per partition; a
// topic labelled with a pattern (a topic per hub read by one pattern) is
// summed, with every other topic of the pattern and all their partitions,
// into one series whose partition label is empty. The number of series is
// then bounded by the configuration, not by the hubs.
type collector struct {
	c         *Committer
	label     func(topic string) string
	committed *prometheus.Desc
	lag       *prometheus.Desc
	position  *prometheus.Desc
	commits   *prometheus.CounterVec
}

func newCollector(c *Committer, label func(string) string) *collector {
	if label == nil {
		label = func(topic string) string { return topic }
	}
	m := &collector{
		c:     c,
		label: label,
		committed: prometheus.NewDesc("stb_committer_committed_offset",
			"Offset stored in status.transport per assigned partition: where a restart resumes (summed over the partitions of the topics a --kafka-topics pattern matched).", []string{"topic", "partition"}, nil),
		lag: prometheus.NewDesc("stb_committer_lag_messages",
			"High watermark minus the committed offset per assigned partition: messages a restart would read again or that are not yet read (summed over the partitions of the topics a --kafka-topics pattern matched).", []string{"topic", "partition"}, nil),
		position: prometheus.NewDesc("stb_committer_position_offset",
			"Offset the next commit would store per assigned partition: the lowest offset still held by a unit, else the last read + 1 (summed over the partitions of the topics a --kafka-topics pattern matched).", []string{"topic", "partition"}, nil),
		commits: prometheus.NewCounterVec(prometheus.CounterOpts{
			Name: "stb_committer_commits_total",
			Help: "Commits of positions to status.transport, by result: ok, error, or lost (a partition's position refused because another bridge has claimed the partition; counted per partition).",
		}, []string{"result"}),
	}
	// Both results exist from the start, at zero, so rate() and alerts
	// work before the first failure.
	m.commits.WithLabelValues("ok")
	m.commits.WithLabelValues("error")
	m.commits.WithLabelValues("lost")
	return m
}

func (m *collector) Describe(ch chan<- *prometheus.Desc) {
	ch <- m.committed
	ch <- m.lag
	ch <- m.position
	m.commits.Describe(ch)
}

// series is one label set and what is summed into it; a value is exported
// only when at least one of its partitions knows it.
type series struct {
	committed, position, lag          int64
	hasCommitted, hasPosition, hasLag bool
}

func (m *collector) Collect(ch chan<- prometheus.Metric) {
	type labels struct{ topic, partition string }
	var order []labels
	out := map[labels]*series{}
	for _, p := range m.c.Partitions() {
		l := labels{topic: m.label(p.Topic)}
		if l.topic == p.Topic {
			l.partition = strconv.FormatInt(int64(p.Partition), 10)
		}
		s := out[l]
		if s == nil {
			s = &series{}
			out[l] = s
			order = append(order, l)
		}
		if committed := p.Committed(); committed >= 0 {
			s.committed += committed
			s.hasCommitted = true
		}
		if pos, ok := p.Position(); ok {
			s.position += pos
			s.hasPosition = true
		}
		if lag, ok := p.Lag(); ok {
			s.lag += lag
			s.hasLag = true
		}
	}
	for _, l := range order {
		s := out[l]
		if s.hasCommitted {
			ch <- prometheus.MustNewConstMetric(m.committed, prometheus.GaugeValue, float64(s.committed), l.topic, l.partition)
		}
		if s.hasPosition {
			ch <- prometheus.MustNewConstMetric(m.position, prometheus.GaugeValue, float64(s.position), l.topic, l.partition)
		}
		if s.hasLag {
			ch <- prometheus.MustNewConstMetric(m.lag, prometheus.GaugeValue, float64(s.lag), l.topic, l.partition)
		}
	}
	m.commits.Collect(ch)
}
