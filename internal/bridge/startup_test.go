package bridge

import (
	"context"
	"fmt"
	"slices"
	"strings"
	"testing"
	"time"

	"github.com/cloudevents/sdk-go/protocol/kafka_confluent/v2"
	"github.com/cloudevents/sdk-go/v2/binding"
	"github.com/confluentinc/confluent-kafka-go/v2/kafka"
	"go.uber.org/zap"

	wf "github.com/stbridge/stb/dbsyncers/work"
	"github.com/stbridge/stb/internal/profiles"
	"github.com/stbridge/stb/internal/profiles/work"
	"github.com/stbridge/stb/pkg/db/dbtest"
	simwork "github.com/stbridge/stb/pkg/sim/work"
	"github.com/stbridge/stb/pkg/transport"
)

// TestValidateStartup: a start-up step of a profile that is off, or an
// option no profile has, is refused in the words of its flag.
func TestValidateStartup(t *testing.T) {
	for name, tc := range map[string]struct {
		profiles []string
		startup  map[string]string
		want     string
	}{
		"work resync without the work profile": {profiles.Default(), map[string]string{work.ResyncFlag: "resync"},
			"--work-resync-topic needs the work profile"},
		"no such step": {profiles.Default(), map[string]string{"nonsense": "x"}, "--nonsense: no profile has such a start-up step"},
	} {
		t.Run(name, func(t *testing.T) {
			c := DefaultConfig()
			c.Profiles, c.Startup = tc.profiles, tc.startup
			if err := c.Validate(); err == nil || !strings.Contains(err.Error(), tc.want) {
				t.Fatalf("Validate() = %v, want an error saying %q", err, tc.want)
			}
		})
	}
	c := DefaultConfig()
	c.Profiles, c.Startup = append(profiles.Default(), work.Name), map[string]string{work.ResyncFlag: "resync"}
	if err := c.Validate(); err != nil {
		t.Errorf("the work resync with the work profile on: %v", err)
	}
	c.Startup[work.ResyncFlag] = ""
	c.Profiles = profiles.Default()
	if err := c.Validate(); err != nil {
		t.Errorf("an empty option (the flag's default) turns nothing on: %v", err)
	}
}

// TestStartupWorkResync: a bridge restarted with --work-resync-topic asks,
// before it reads, every cluster with a stored status for the statuses
// that differ (status.resync_request events on the topic, one per cluster
// and source), on a real broker and database. The statuses are stored by
// a first bridge reading the work agents' events.
func TestStartupWorkResync(t *testing.T) {
	brk := startBroker(t, 1, "status", "resync")
	pool, url := dbtest.New(t)
	ctx := t.Context()

	pub, err := transport.NewPublisher(transport.PublisherConfig{Brokers: brk.Addr()}, zap.NewNop())
	if err != nil {
		t.Fatal(err)
	}
	exp, err := simwork.Run(ctx, simwork.Config{Clusters: 3, Resources: 4, Sources: 2, Rounds: 1, Seed: 5, Topic: "status",
		RestartProbability: -1, DuplicateProbability: -1, LateProbability: -1, DeleteProbability: -1},
		func(ctx context.Context, m *kafka.Message) error { return pub.PublishMessage(ctx, m) }, nil)
	if err == nil {
		err = pub.Flush(ctx)
	}
	pub.Close()
	if err != nil {
		t.Fatal(err)
	}

	cfg := DefaultConfig()
	cfg.Reader.Brokers, cfg.DatabaseURL, cfg.HTTPAddr, cfg.AdminAddr = brk.Addr(), url, "", ""
	cfg.Reader.GroupID, cfg.Committer.Interval = "startup-test", 100*time.Millisecond
	cfg.Profiles = append(profiles.Default(), work.Name)
	run := func(cfg Config, until func() bool) {
		t.Helper()
		b, err := New(ctx, cfg, Deps{Logger: zap.NewNop()})
		if err != nil {
			t.Fatal(err)
		}
		defer b.Close()
		runCtx, stop := context.WithCancel(ctx)
		done := make(chan error, 1)
		go func() { done <- b.Run(runCtx) }()
		waitFor(t, time.Minute, "the bridge's work", until)
		stop()
		if err := <-done; err != nil {
			t.Fatalf("Run: %v", err)
		}
	}
	// The first bridge stores the statuses; it has no start-up step.
	run(cfg, func() bool {
		var n int
		return pool.QueryRow(ctx, `SELECT count(*) FROM work.resource_status`).Scan(&n) == nil && n == len(exp.Rows)
	})

	// The second asks for them again before it reads.
	c, err := kafka.NewConsumer(&kafka.ConfigMap{"bootstrap.servers": brk.Addr(), "group.id": "startup-test-resync",
		"auto.offset.reset": "earliest", "enable.metrics.push": false})
	if err != nil {
		t.Fatal(err)
	}
	defer c.Close()
	if err := c.Subscribe("resync", nil); err != nil {
		t.Fatal(err)
	}
	cfg.Startup = map[string]string{work.ResyncFlag: "resync"}
	requests := map[string]int{} // per cluster
	run(cfg, func() bool {
		if msg, err := c.ReadMessage(100 * time.Millisecond); err == nil {
			ev, err := binding.ToEvent(context.Background(), kafka_confluent.NewMessage(msg))
			if err != nil {
				t.Fatal(err)
			}
			cluster, _ := ev.Extensions()[wf.ExtClusterName].(string)
			if ev.Type() != wf.ResyncRequest || cluster == "" {
				t.Errorf("a request of type %q for cluster %q", ev.Type(), cluster)
			}
			requests[cluster]++
		}
		n := 0
		for _, k := range requests {
			n += k
		}
		return n == len(exp.Clusters)*2
	})
	got := slices.Sorted(func(yield func(string) bool) {
		for c := range requests {
			if !yield(c) {
				return
			}
		}
	})
	if fmt.Sprint(got) != fmt.Sprint(slices.Sorted(slices.Values(exp.Clusters))) {
		t.Errorf("requests for clusters %v, want every cluster with a stored status %v", got, exp.Clusters)
	}
}
