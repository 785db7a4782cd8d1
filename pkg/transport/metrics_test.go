package transport_test

import (
	"testing"

	"github.com/prometheus/client_golang/prometheus"
	"github.com/prometheus/client_golang/prometheus/testutil"
	"go.uber.org/zap"

	"github.com/stbridge/stb/pkg/committer"
	"github.com/stbridge/stb/pkg/transport"
)

func TestMetricsLint(t *testing.T) {
	reg := prometheus.NewRegistry()
	c, err := committer.New(committer.Config{Interval: 1e9}, committer.Deps{Store: &memStore{}, Logger: zap.NewNop()})
	if err != nil {
		t.Fatal(err)
	}
	cfg := transport.DefaultConfig()
	cfg.Brokers, cfg.Topics = "127.0.0.1:1", []string{"status"}
	r, err := transport.NewReader(cfg, transport.Deps{
		Decoder: testDecoders(), Sink: &testSink{}, Positions: positions{c}, Offsets: &memOffsets{}, Registerer: reg,
	})
	if err != nil {
		t.Fatal(err)
	}
	defer r.Close()
	problems, err := testutil.GatherAndLint(reg)
	if err != nil || len(problems) > 0 {
		t.Fatalf("lint: %v %v", err, problems)
	}
	if n, _ := testutil.GatherAndCount(reg); n == 0 {
		t.Fatal("reader registered no metrics")
	}
}
