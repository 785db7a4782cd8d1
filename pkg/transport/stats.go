package transport

import (
	"encoding/json"
	"strconv"
	"sync"

	"github.com/prometheus/client_golang/prometheus"
	"go.uber.org/zap"
)

// librdkafka emits a JSON statistics document every
// statistics.interval.ms; the reader keeps the parts operators need: each
// partition's high watermark (also handed to the partition's tracker, for
// the committer's lag) and the client's own view of consumer lag, and each
// broker's round-trip time. The poll loop digests it, under runMu.

// rdStats is the subset of librdkafka's statistics the reader reads.
type rdStats struct {
	Brokers map[string]struct {
		Name   string `json:"name"`
		NodeID int    `json:"nodeid"`
		State  string `json:"state"`
		RTT    struct {
			Avg int64 `json:"avg"` // microseconds
			P99 int64 `json:"p99"`
		} `json:"rtt"`
	} `json:"brokers"`
	Topics map[string]struct {
		Partitions map[string]struct {
			Partition   int32  `json:"partition"`
			HiOffset    int64  `json:"hi_offset"`
			ConsumerLag int64  `json:"consumer_lag"`
			FetchState  string `json:"fetch_state"`
		} `json:"partitions"`
	} `json:"topics"`
}

// statsMetrics serves the partitions' statistics at scrape time, from the
// last document read, for the partitions assigned now: a revoked
// partition's series go with it (docs/conventions.md, Metrics), where gauges set per
// partition stayed, exporting the lag of partitions another replica
// reads. Series are labelled by TopicLabels: a pattern's sum over every
// partition of every topic it matched, with an empty partition label.
type statsMetrics struct {
	labels      *TopicLabels
	consumerLag *prometheus.Desc
	highWater   *prometheus.Desc
	rtt         *prometheus.GaugeVec

	// mu guards parts: the poll loop writes, scrapes read. It is never
	// held while calling out.
	mu    sync.Mutex
	parts map[partitionKey]partitionStats
}

// partitionStats are one assigned partition's statistics; -1 when not
// known yet.
type partitionStats struct {
	highWater, consumerLag int64
}

func newStatsMetrics(labels *TopicLabels) *statsMetrics {
	return &statsMetrics{
		labels: labels,
		consumerLag: prometheus.NewDesc("stb_kafka_consumer_lag_messages",
			"librdkafka's consumer lag of the assigned partitions: high watermark minus the offset committed to the consumer group (which trails status.transport); per partition of a topic named in --kafka-topics, summed over the partitions of the topics a pattern matched.",
			[]string{"topic", "partition"}, nil),
		highWater: prometheus.NewDesc("stb_kafka_high_watermark_offset",
			"High watermark of the assigned partitions, from librdkafka's statistics; per partition of a topic named in --kafka-topics, summed over the partitions of the topics a pattern matched.",
			[]string{"topic", "partition"}, nil),
		rtt: prometheus.NewGaugeVec(prometheus.GaugeOpts{
			Name: "stb_kafka_broker_rtt_seconds",
			Help: "Average broker round-trip time over the last statistics window, by broker.",
		}, []string{"broker"}),
		parts: map[partitionKey]partitionStats{},
	}
}

// set records what a statistics document says of an assigned partition;
// a negative value leaves what was known.
func (m *statsMetrics) set(k partitionKey, highWater, consumerLag int64) {
	m.mu.Lock()
	defer m.mu.Unlock()
	s, ok := m.parts[k]
	if !ok {
		s = partitionStats{highWater: -1, consumerLag: -1}
	}
	if highWater >= 0 {
		s.highWater = highWater
	}
	if consumerLag >= 0 {
		s.consumerLag = consumerLag
	}
	m.parts[k] = s
}

// forget drops a revoked partition's statistics, and with them its series.
func (m *statsMetrics) forget(k partitionKey) {
	m.mu.Lock()
	delete(m.parts, k)
	m.mu.Unlock()
}

func (m *statsMetrics) Describe(ch chan<- *prometheus.Desc) {
	ch <- m.consumerLag
	ch <- m.highWater
	m.rtt.Describe(ch)
}

func (m *statsMetrics) Collect(ch chan<- prometheus.Metric) {
	type series struct{ topic, partition string }
	type sums struct {
		highWater, consumerLag int64
		hasHigh, hasLag        bool
	}
	m.mu.Lock()
	out := make(map[series]*sums, len(m.parts))
	for k, s := range m.parts {
		key := series{topic: m.labels.Label(k.topic)}
		if key.topic == k.topic {
			key.partition = strconv.FormatInt(int64(k.partition), 10)
		}
		sum := out[key]
		if sum == nil {
			sum = &sums{}
			out[key] = sum
		}
		if s.highWater >= 0 {
			sum.highWater += s.highWater
			sum.hasHigh = true
		}
		if s.consumerLag >= 0 {
			sum.consumerLag += s.consumerLag
			sum.hasLag = true
		}
	}
	m.mu.Unlock()
	for key, sum := range out {
		if sum.hasHigh {
			ch <- prometheus.MustNewConstMetric(m.highWater, prometheus.GaugeValue, float64(sum.highWater), key.topic, key.partition)
		}
		if sum.hasLag {
			ch <- prometheus.MustNewConstMetric(m.consumerLag, prometheus.GaugeValue, float64(sum.consumerLag), key.topic, key.partition)
		}
	}
	m.rtt.Collect(ch)
}

// onStats digests one statistics document.
func (r *Reader) onStats(doc string) {
	var st rdStats
	if err := json.Unmarshal([]byte(doc), &st); err != nil {
		r.logger.Debug("unreadable librdkafka statistics", zap.Error(err))
		return
	}
	for topic, t := range st.Topics {
		for _, p := range t.Partitions {
			if p.Partition < 0 || p.FetchState == "none" {
				continue // the internal UA partition, or one not assigned here
			}
			k := partitionKey{topic, p.Partition}
			tracker := r.parts[k]
			if tracker == nil {
				continue // revoked since librdkafka wrote the document
			}
			if p.HiOffset >= 0 {
				tracker.SetHighWatermark(p.HiOffset)
			}
			r.stats.set(k, p.HiOffset, p.ConsumerLag)
		}
	}
	for _, b := range st.Brokers {
		if b.NodeID < 0 {
			continue // bootstrap and internal pseudo-brokers
		}
		if b.State == "UP" {
			r.noteBrokerUp()
		}
		r.stats.rtt.WithLabelValues(b.Name).Set(float64(b.RTT.Avg) / 1e6)
	}
}
