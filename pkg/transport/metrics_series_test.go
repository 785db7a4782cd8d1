package transport_test

import (
	"context"
	"fmt"
	"slices"
	"strings"
	"testing"

	"github.com/prometheus/client_golang/prometheus"
	dto "github.com/prometheus/client_model/go"
	"go.uber.org/zap"

	"github.com/stbridge/stb/pkg/broker"
	"github.com/stbridge/stb/pkg/transport"
)

// series returns every stb_* series of reg as "name{label=value,…}".
func series(t *testing.T, reg prometheus.Gatherer) []string {
	t.Helper()
	mfs, err := reg.Gather()
	if err != nil {
		t.Fatal(err)
	}
	var out []string
	for _, mf := range mfs {
		if !strings.HasPrefix(mf.GetName(), "stb_") {
			continue
		}
		for _, m := range mf.GetMetric() {
			var ls []string
			for _, lp := range m.GetLabel() {
				ls = append(ls, lp.GetName()+"="+lp.GetValue())
			}
			out = append(out, mf.GetName()+"{"+strings.Join(ls, ",")+"}")
		}
	}
	return out
}

// partitionSeries returns the stb_kafka_* and stb_committer_* series of
// reg that carry a partition, as "name topic/partition".
func partitionSeries(t *testing.T, reg prometheus.Gatherer) []string {
	t.Helper()
	mfs, err := reg.Gather()
	if err != nil {
		t.Fatal(err)
	}
	var out []string
	for _, mf := range mfs {
		name := mf.GetName()
		if !strings.HasPrefix(name, "stb_kafka_") && !strings.HasPrefix(name, "stb_committer_") {
			continue
		}
		for _, m := range mf.GetMetric() {
			var topic, part string
			for _, lp := range m.GetLabel() {
				switch lp.GetName() {
				case "topic":
					topic = lp.GetValue()
				case "partition":
					part = lp.GetValue()
				}
			}
			if topic != "" {
				out = append(out, name+" "+topic+"/"+part)
			}
		}
	}
	slices.Sort(out)
	return out
}

// fastStats makes librdkafka report its statistics every 100 ms.
func fastStats(cfg *transport.Config) {
	cfg.Properties = map[string]string{"statistics.interval.ms": "100"}
}

// slowerStats makes librdkafka report its statistics every second: the
// document of 1,000 partitions is megabytes, and read every 100 ms under
// -race it leaves the poll loop no time to read messages.
func slowerStats(cfg *transport.Config) {
	cfg.Properties = map[string]string{"statistics.interval.ms": "1000"}
}

// TestRevokedPartitionSeriesGone: once a partition moves to another
// replica, this replica exports none of its series. Issue 21: the
// stb_kafka_* gauges were set per partition and never deleted, so a
// replica went on exporting the high watermark and lag of partitions it
// had lost, and alerts summed them with the new owner's.
func TestRevokedPartitionSeriesGone(t *testing.T) {
	b := startBroker(t, 2)
	pub := newPublisher(t, b.Addr())
	ctx := context.Background()
	for i := range 20 {
		env := validEnvelope("status", fmt.Sprintf("hub-%d", i))
		if err := pub.Publish(ctx, env); err != nil {
			t.Fatal(err)
		}
	}
	if err := pub.Flush(ctx); err != nil {
		t.Fatal(err)
	}
	store := &memStore{}
	a := startReaderConfig(t, b, "revoke-series", store, &testSink{release: true}, store, fastStats)
	// The consumer lag comes only once the group has a committed offset.
	both := []string{"stb_kafka_high_watermark_offset status/0", "stb_kafka_high_watermark_offset status/1"}
	waitFor(t, waitTimeout, "the statistics of both partitions", func() bool {
		got := partitionSeries(t, a.registry)
		return !slices.ContainsFunc(both, func(s string) bool { return !slices.Contains(got, s) })
	})

	// A second member takes one of the two partitions (cooperative-sticky).
	startReaderConfig(t, b, "revoke-series", store, &testSink{release: true}, &memStore{}, fastStats)
	waitFor(t, waitTimeout, "one partition to move to the second reader", func() bool {
		return len(a.committer.Partitions()) == 1
	})
	kept := a.committer.Partitions()[0].Partition
	for _, s := range partitionSeries(t, a.registry) {
		if !strings.HasSuffix(s, fmt.Sprintf("status/%d", kept)) {
			t.Errorf("after partition %d was revoked the first reader still exports %s", 1-kept, s)
		}
	}
}

// TestPerHubTopicsSeriesBounded reads 1,000 topics, one per hub as the
// global-hub agents publish them (gh-status.<hub>), through one pattern,
// and checks that the number of stb_* series does not grow with them:
// every per-topic series is labelled with the pattern. Issue 21: the
// topic label was the topic read, a label per hub on
// stb_transport_messages_total, stb_kafka_* and stb_committer_* (5,000
// series here), which Prometheus keeps for every hub that ever was.
func TestPerHubTopicsSeriesBounded(t *testing.T) {
	const hubs = 1000
	const pattern = `^gh-status\..*`
	topics := make([]string, hubs)
	for i := range topics {
		topics[i] = fmt.Sprintf("gh-status.hub-%04d", i)
	}
	b, err := broker.Start(broker.Config{Topics: topics, Partitions: 1, ClusterID: "cluster-a"}, zap.NewNop())
	if err != nil {
		t.Fatalf("start broker: %v", err)
	}
	t.Cleanup(b.Close)
	pub := newPublisher(t, b.Addr())
	ctx := context.Background()
	for i, topic := range topics {
		env := validEnvelope(topic, fmt.Sprintf("hub-%04d", i))
		if i%10 == 0 {
			env.Type = "nosuchtype" // a reject too, for its series (bad data is only decoded at write)
		}
		if err := pub.Publish(ctx, env); err != nil {
			t.Fatal(err)
		}
	}
	if err := pub.Flush(ctx); err != nil {
		t.Fatal(err)
	}

	store := &memStore{}
	sink := &testSink{release: true}
	h := startReaderConfig(t, b, "per-hub", store, sink, store, func(cfg *transport.Config) {
		slowerStats(cfg)
		cfg.Topics = []string{pattern}
	})
	waitFor(t, waitTimeout, "every topic's message", func() bool {
		return h.reader.Stats().Read == hubs
	})
	// Every message decoded and done with, its position stored.
	waitFor(t, waitTimeout, "every position committed", func() bool {
		if err := h.committer.Commit(ctx); err != nil {
			t.Fatal(err)
		}
		var sum int64
		for _, p := range h.committer.Stats() {
			sum += p.Committed
		}
		return sum == hubs
	})
	if n := len(h.committer.Partitions()); n != hubs {
		t.Fatalf("%d partitions assigned, want %d", n, hubs)
	}
	// Once the positions are in the consumer group too, librdkafka's
	// statistics have a consumer lag for every partition.
	want := []string{
		"stb_committer_committed_offset " + pattern + "/", "stb_committer_lag_messages " + pattern + "/",
		"stb_committer_position_offset " + pattern + "/",
		"stb_kafka_consumer_lag_messages " + pattern + "/", "stb_kafka_high_watermark_offset " + pattern + "/",
	}
	var ps []string
	waitFor(t, waitTimeout, "the statistics of the pattern's partitions", func() bool {
		ps = partitionSeries(t, h.registry)
		return slices.Equal(ps, want) || len(ps) > len(want)
	})
	if !slices.Equal(ps, want) {
		t.Errorf("%d per-partition series (%q …), want the pattern's sums %q", len(ps), ps[:len(want)], want)
	}

	got := series(t, h.registry)
	// What the reader and the committer export whatever the topics: one
	// series per reject reason, start and result, plus a few for the
	// pattern.
	const bound = 60
	if len(got) > bound {
		t.Errorf("%d stb_* series for %d topics read through one pattern, want at most %d", len(got), hubs, bound)
	}
	for _, s := range got {
		if strings.Contains(s, "topic=") && !strings.Contains(s, "topic="+pattern) {
			t.Errorf("series labelled with a topic, not the pattern: %s", s)
			break
		}
	}
	if v := counterValue(t, h.registry, "stb_transport_messages_total", map[string]string{"topic": pattern, "outcome": "accepted"}); v != hubs*9/10 {
		t.Errorf("accepted messages of the pattern %v, want %d", v, hubs*9/10)
	}
	for _, name := range []string{"stb_committer_committed_offset", "stb_kafka_high_watermark_offset"} {
		if v := gaugeValue(t, h.registry, name, map[string]string{"topic": pattern}); v != hubs {
			t.Errorf("%s summed over the pattern's topics %v, want %d (one message each)", name, v, hubs)
		}
	}
	t.Logf("%d stb_* series for %d topics", len(got), hubs)
}

func gaugeValue(t *testing.T, reg *prometheus.Registry, name string, labels map[string]string) float64 {
	t.Helper()
	return metricValue(t, reg, name, labels, -1, func(m *dto.Metric) float64 { return m.GetGauge().GetValue() })
}
