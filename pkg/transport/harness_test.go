package transport_test

import (
	"context"
	"testing"
	"time"

	"github.com/prometheus/client_golang/prometheus"
	dto "github.com/prometheus/client_model/go"
	"go.uber.org/zap"
	"go.uber.org/zap/zapcore"
	"go.uber.org/zap/zaptest/observer"

	"github.com/stbridge/stb/pkg/broker"
	"github.com/stbridge/stb/pkg/committer"
	"github.com/stbridge/stb/pkg/transport"
)

// waitTimeout bounds the waits on conditions: generous, because a loaded
// machine (CI beside other work) can take 30 s to subscribe to 1,000
// topics; a passing run never waits for it.
const waitTimeout = 2 * time.Minute

// harness is a broker, a publisher and a running reader wired to test
// collaborators.
type harness struct {
	broker    *broker.Broker
	topic     string
	reader    *transport.Reader
	sink      *testSink
	rejects   *testRejects
	committer *committer.Committer
	store     *memStore
	registry  *prometheus.Registry
	logs      *observer.ObservedLogs
	runErr    chan error
	cancel    context.CancelFunc
}

func startBroker(t *testing.T, partitions int32) *broker.Broker {
	t.Helper()
	b, err := broker.Start(broker.Config{Topics: []string{"status"}, Partitions: partitions, ClusterID: "cluster-a"}, zap.NewNop())
	if err != nil {
		t.Fatalf("start broker: %v", err)
	}
	t.Cleanup(b.Close)
	return b
}

func newPublisher(t *testing.T, addr string) *transport.Publisher {
	t.Helper()
	pub, err := transport.NewPublisher(transport.PublisherConfig{Brokers: addr, Linger: time.Millisecond}, zap.NewNop())
	if err != nil {
		t.Fatalf("new publisher: %v", err)
	}
	t.Cleanup(pub.Close)
	return pub
}

// startReader runs a reader of the broker's "status" topic in group.
func startReader(t *testing.T, b *broker.Broker, group string, offsets transport.Offsets, sink *testSink) *harness {
	t.Helper()
	return startReaderWith(t, b, group, offsets, sink, &memStore{})
}

// startReaderWith is startReader committing to store.
func startReaderWith(t *testing.T, b *broker.Broker, group string, offsets transport.Offsets, sink *testSink, store *memStore) *harness {
	t.Helper()
	return startReaderConfig(t, b, group, offsets, sink, store, nil)
}

// startReaderConfig is startReaderWith with the reader's configuration
// changed by edit, when not nil, and the committer's metrics registered
// beside the reader's, labelled as the bridge labels them.
func startReaderConfig(t *testing.T, b *broker.Broker, group string, offsets transport.Offsets, sink *testSink, store *memStore, edit func(*transport.Config)) *harness {
	t.Helper()
	return startReaderDeps(t, b, group, offsets, sink, store, edit, nil)
}

// startReaderDeps is startReaderConfig with the reader's collaborators
// changed by editDeps, when not nil.
func startReaderDeps(t *testing.T, b *broker.Broker, group string, offsets transport.Offsets, sink *testSink, store *memStore, edit func(*transport.Config), editDeps func(*transport.Deps)) *harness {
	t.Helper()
	core, logs := observer.New(zapcore.InfoLevel)
	h := &harness{
		broker:   b,
		topic:    "status",
		sink:     sink,
		rejects:  &testRejects{},
		store:    store,
		registry: prometheus.NewRegistry(),
		logs:     logs,
		runErr:   make(chan error, 1),
	}
	cfg := transport.DefaultConfig()
	if b != nil {
		cfg.Brokers = b.Addr() // else edit sets it
	}
	cfg.GroupID = group
	cfg.Topics = []string{h.topic}
	cfg.MaxBundleBytes = 1 // raised to the floor, which the cases are sized for
	cdeps := committer.Deps{Store: h.store, Logger: zap.NewNop()}
	if edit != nil {
		edit(&cfg)
		cdeps.Registerer, cdeps.TopicLabel = h.registry, cfg.TopicLabels().Label
	}
	var err error
	// The interval is irrelevant: the tests commit explicitly.
	h.committer, err = committer.New(committer.Config{Interval: time.Hour}, cdeps)
	if err != nil {
		t.Fatal(err)
	}
	deps := transport.Deps{
		Decoder:    testDecoders(),
		Sink:       sink,
		Positions:  positions{h.committer},
		Offsets:    offsets,
		Rejects:    h.rejects,
		Logger:     zap.New(core),
		Registerer: h.registry,
	}
	if editDeps != nil {
		editDeps(&deps)
	}
	h.reader, err = transport.NewReader(cfg, deps)
	if err != nil {
		t.Fatalf("new reader: %v", err)
	}
	ctx, cancel := context.WithCancel(context.Background())
	h.cancel = cancel
	go func() { h.runErr <- h.reader.Run(ctx) }()
	t.Cleanup(func() { h.stop(t) })
	return h
}

// stop cancels Run, waits for it and closes the reader; idempotent.
func (h *harness) stop(t *testing.T) {
	t.Helper()
	if h.cancel == nil {
		return
	}
	h.cancel()
	h.cancel = nil
	select {
	case err := <-h.runErr:
		if err != nil {
			t.Errorf("Run returned %v, want nil after cancellation", err)
		}
	case <-time.After(waitTimeout):
		t.Error("Run did not return after cancellation")
	}
	if err := h.reader.Close(); err != nil {
		t.Errorf("close reader: %v", err)
	}
}

// counterValue returns the counter name with labels in reg, 0 when there
// is none.
func counterValue(t *testing.T, reg *prometheus.Registry, name string, labels map[string]string) float64 {
	t.Helper()
	return metricValue(t, reg, name, labels, 0, func(m *dto.Metric) float64 { return m.GetCounter().GetValue() })
}

// metricValue returns what value reads of the first series name with
// labels in reg, or none when there is no such series.
func metricValue(t *testing.T, reg *prometheus.Registry, name string, labels map[string]string, none float64, value func(*dto.Metric) float64) float64 {
	t.Helper()
	mfs, err := reg.Gather()
	if err != nil {
		t.Fatal(err)
	}
	for _, mf := range mfs {
		if mf.GetName() != name {
			continue
		}
		for _, m := range mf.GetMetric() {
			if labelsMatch(m, labels) {
				return value(m)
			}
		}
	}
	return none
}

func labelsMatch(m *dto.Metric, want map[string]string) bool {
	n := 0
	for _, lp := range m.GetLabel() {
		if v, ok := want[lp.GetName()]; ok {
			if v != lp.GetValue() {
				return false
			}
			n++
		}
	}
	return n == len(want)
}
