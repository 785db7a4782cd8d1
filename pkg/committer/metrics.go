package committer

import (
	"strconv"

	"github.com/prometheus/client_golang/prometheus"
)

// collector exports each assigned partition's committed offset and lag
// (high watermark − committed), computed at scrape time, plus commit
// outcomes.
type collector struct {
	c         *Committer
	committed *prometheus.Desc
	lag       *prometheus.Desc
	position  *prometheus.Desc
	commits   *prometheus.CounterVec
}

func newCollector(c *Committer) *collector {
	m := &collector{
		c: c,
		committed: prometheus.NewDesc("stb_committer_committed_offset",
			"Offset stored in status.transport per partition: where a restart resumes.", []string{"topic", "partition"}, nil),
		lag: prometheus.NewDesc("stb_committer_lag_messages",
			"High watermark minus the committed offset per partition: messages a restart would read again or that are not yet read.", []string{"topic", "partition"}, nil),
		position: prometheus.NewDesc("stb_committer_position_offset",
			"Offset the next commit would store per partition: the lowest offset still held by a unit, else the last read + 1.", []string{"topic", "partition"}, nil),
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

func (m *collector) Collect(ch chan<- prometheus.Metric) {
	for _, p := range m.c.Partitions() {
		part := strconv.FormatInt(int64(p.Partition), 10)
		committed := p.Committed()
		if committed >= 0 {
			ch <- prometheus.MustNewConstMetric(m.committed, prometheus.GaugeValue, float64(committed), p.Topic, part)
		}
		if pos, ok := p.Position(); ok {
			ch <- prometheus.MustNewConstMetric(m.position, prometheus.GaugeValue, float64(pos), p.Topic, part)
		}
		if lag, ok := p.Lag(); ok {
			ch <- prometheus.MustNewConstMetric(m.lag, prometheus.GaugeValue, float64(lag), p.Topic, part)
		}
	}
	m.commits.Collect(ch)
}
