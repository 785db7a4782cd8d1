package committer

import (
	"context"
	"strings"
	"testing"
	"time"

	"github.com/prometheus/client_golang/prometheus"
	"github.com/prometheus/client_golang/prometheus/testutil"
	"go.uber.org/zap"

	"github.com/stbridge/stb/pkg/bundle"
)

// perHub labels the topics of a hub, "gh-status.<hub>", with the pattern
// that reads them, as transport.TopicLabels does.
func perHub(topic string) string {
	if strings.HasPrefix(topic, "gh-status.") {
		return `^gh-status\..*`
	}
	return topic
}

func TestMetrics(t *testing.T) {
	reg := prometheus.NewRegistry()
	c, err := New(Config{Interval: time.Second}, Deps{Store: &memStore{}, Logger: zap.NewNop(), Registerer: reg, TopicLabel: perHub})
	if err != nil {
		t.Fatal(err)
	}
	read := func(p *Partition, high int64, offsets ...int64) {
		p.SetHighWatermark(high)
		for _, o := range offsets {
			p.Read(o)
		}
		p.Done(bundle.Origin{Offset: offsets[0]})
	}
	read(c.Assign("status", 2, 10), 100, 10, 11)
	read(c.Assign("status", 3, 0), 5, 0)
	read(c.Assign("gh-status.hub-1", 0, 0), 7, 0, 1)
	read(c.Assign("gh-status.hub-2", 0, 0), 3, 0)
	if err := c.Commit(context.Background()); err != nil {
		t.Fatal(err)
	}
	// A topic named is exported per partition; the topics of a pattern
	// are summed into one series without a partition.
	want := `
# HELP stb_committer_committed_offset Offset stored in status.transport per assigned partition: where a restart resumes (summed over the partitions of the topics a --kafka-topics pattern matched).
# TYPE stb_committer_committed_offset gauge
stb_committer_committed_offset{partition="",topic="^gh-status\\..*"} 2
stb_committer_committed_offset{partition="2",topic="status"} 11
stb_committer_committed_offset{partition="3",topic="status"} 1
# HELP stb_committer_lag_messages High watermark minus the committed offset per assigned partition: messages a restart would read again or that are not yet read (summed over the partitions of the topics a --kafka-topics pattern matched).
# TYPE stb_committer_lag_messages gauge
stb_committer_lag_messages{partition="",topic="^gh-status\\..*"} 8
stb_committer_lag_messages{partition="2",topic="status"} 89
stb_committer_lag_messages{partition="3",topic="status"} 4
`
	names := []string{"stb_committer_committed_offset", "stb_committer_lag_messages"}
	if err := testutil.GatherAndCompare(reg, strings.NewReader(want), names...); err != nil {
		t.Fatal(err)
	}
	if v := testutil.ToFloat64(c.metrics.commits.WithLabelValues("ok")); v != 1 {
		t.Fatalf("ok commits %v, want 1", v)
	}
	problems, err := testutil.GatherAndLint(reg)
	if err != nil || len(problems) > 0 {
		t.Fatalf("lint: %v %v", err, problems)
	}

	// A revoked partition's series go; so does a pattern's once its last
	// topic is revoked.
	for _, tp := range []struct {
		topic     string
		partition int32
	}{{"status", 3}, {"gh-status.hub-1", 0}, {"gh-status.hub-2", 0}} {
		if err := c.Revoke(context.Background(), tp.topic, tp.partition); err != nil {
			t.Fatal(err)
		}
	}
	want = `
# HELP stb_committer_committed_offset Offset stored in status.transport per assigned partition: where a restart resumes (summed over the partitions of the topics a --kafka-topics pattern matched).
# TYPE stb_committer_committed_offset gauge
stb_committer_committed_offset{partition="2",topic="status"} 11
# HELP stb_committer_lag_messages High watermark minus the committed offset per assigned partition: messages a restart would read again or that are not yet read (summed over the partitions of the topics a --kafka-topics pattern matched).
# TYPE stb_committer_lag_messages gauge
stb_committer_lag_messages{partition="2",topic="status"} 89
`
	if err := testutil.GatherAndCompare(reg, strings.NewReader(want), names...); err != nil {
		t.Fatal(err)
	}
}
