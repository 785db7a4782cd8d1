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

func TestMetrics(t *testing.T) {
	reg := prometheus.NewRegistry()
	c, err := New(Config{Interval: time.Second}, Deps{Store: &memStore{}, Logger: zap.NewNop(), Registerer: reg})
	if err != nil {
		t.Fatal(err)
	}
	p := c.Assign("status", 2, 10)
	p.SetHighWatermark(100)
	p.Read(10)
	p.Read(11)
	p.Done(bundle.Origin{Offset: 10})
	if err := c.Commit(context.Background()); err != nil {
		t.Fatal(err)
	}
	want := `
# HELP stb_committer_committed_offset Offset stored in status.transport per partition: where a restart resumes.
# TYPE stb_committer_committed_offset gauge
stb_committer_committed_offset{partition="2",topic="status"} 11
# HELP stb_committer_lag_messages High watermark minus the committed offset per partition: messages a restart would read again or that are not yet read.
# TYPE stb_committer_lag_messages gauge
stb_committer_lag_messages{partition="2",topic="status"} 89
`
	if err := testutil.GatherAndCompare(reg, strings.NewReader(want), "stb_committer_committed_offset", "stb_committer_lag_messages"); err != nil {
		t.Fatal(err)
	}
	if v := testutil.ToFloat64(c.metrics.commits.WithLabelValues("ok")); v != 1 {
		t.Fatalf("ok commits %v, want 1", v)
	}
	problems, err := testutil.GatherAndLint(reg)
	if err != nil || len(problems) > 0 {
		t.Fatalf("lint: %v %v", err, problems)
	}
}
