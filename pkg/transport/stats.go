package transport

import (
	"encoding/json"
	"strconv"

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

type statsMetrics struct {
	consumerLag *prometheus.GaugeVec
	highWater   *prometheus.GaugeVec
	rtt         *prometheus.GaugeVec
}

func newStatsMetrics() *statsMetrics {
	return &statsMetrics{
		consumerLag: prometheus.NewGaugeVec(prometheus.GaugeOpts{
			Name: "stb_kafka_consumer_lag_messages",
			Help: "librdkafka's consumer lag per partition: high watermark minus the offset committed to the consumer group (which trails status.transport).",
		}, []string{"topic", "partition"}),
		highWater: prometheus.NewGaugeVec(prometheus.GaugeOpts{
			Name: "stb_kafka_high_watermark_offset",
			Help: "High watermark per partition, from librdkafka's statistics.",
		}, []string{"topic", "partition"}),
		rtt: prometheus.NewGaugeVec(prometheus.GaugeOpts{
			Name: "stb_kafka_broker_rtt_seconds",
			Help: "Average broker round-trip time over the last statistics window, by broker.",
		}, []string{"broker"}),
	}
}

func (m *statsMetrics) collectors() []prometheus.Collector {
	return []prometheus.Collector{m.consumerLag, m.highWater, m.rtt}
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
			part := strconv.FormatInt(int64(p.Partition), 10)
			if p.HiOffset >= 0 {
				if tracker := r.parts[partitionKey{topic, p.Partition}]; tracker != nil {
					tracker.SetHighWatermark(p.HiOffset)
				}
				r.stats.highWater.WithLabelValues(topic, part).Set(float64(p.HiOffset))
			}
			if p.ConsumerLag >= 0 {
				r.stats.consumerLag.WithLabelValues(topic, part).Set(float64(p.ConsumerLag))
			}
		}
	}
	for _, b := range st.Brokers {
		if b.NodeID < 0 {
			continue // bootstrap and internal pseudo-brokers
		}
		r.stats.rtt.WithLabelValues(b.Name).Set(float64(b.RTT.Avg) / 1e6)
	}
}
