package bridge

import (
	"context"
	"fmt"
	"testing"
	"time"

	"go.uber.org/zap"

	"github.com/stbridge/stb/pkg/bundle"
	"github.com/stbridge/stb/pkg/db/dbtest"
	"github.com/stbridge/stb/pkg/sim"
	"github.com/stbridge/stb/pkg/verify"
)

// catchUp runs a bridge with the given --linger over a backlog of the
// simulator's hubs on one partition until it verifies, then sends a
// heartbeat live and returns the bundles the workers wrote per type
// during the catch-up, and how long the live heartbeat took to be written.
func catchUp(t *testing.T, linger time.Duration) (written map[string]float64, live time.Duration) {
	t.Helper()
	brk := startBroker(t, 1, "status")
	pool, url := dbtest.New(t)
	ctx := context.Background()
	pub, err := sim.NewKafkaPublisher(sim.PublisherConfig{Brokers: brk.Addr()}, zap.NewNop())
	if err != nil {
		t.Fatal(err)
	}
	defer pub.Close()
	scfg := sim.Config{Hubs: 20, Clusters: 5, Generations: 60, Seed: 5, Topic: "status"}
	exp, err := sim.Run(ctx, scfg, pub, nil)
	if err != nil {
		t.Fatal(err)
	}

	cfg := DefaultConfig()
	cfg.Reader.Brokers, cfg.DatabaseURL, cfg.HTTPAddr, cfg.AdminAddr = brk.Addr(), url, "", ""
	cfg.Reader.GroupID = fmt.Sprintf("linger-%v", linger)
	cfg.Conflation.Linger = linger
	cfg.Dispatcher.Workers = 4
	b, err := New(ctx, cfg, Deps{Logger: zap.NewNop()})
	if err != nil {
		t.Fatal(err)
	}
	defer b.Close()
	runCtx, stop := context.WithCancel(ctx)
	defer stop()
	go func() { _ = b.Run(runCtx) }()
	verified := func(exp *sim.Expected) func() bool {
		return func() bool {
			rep, err := verify.Verify(ctx, pool, exp)
			return err == nil && rep.OK()
		}
	}
	waitFor(t, 2*time.Minute, "the backlog verified", verified(exp))
	written = appliedByType(t, b)

	// Live: a heartbeat of a new hub, sent with the bridge at the
	// partition's end, is written without waiting for the linger.
	start := time.Now()
	if err := pub.Publish(ctx, sim.Message{Topic: "status", Hub: "hub-live", Type: "heartbeat",
		Version: bundle.Version{Incarnation: 1, Generation: 1}, Data: []byte(`{}`)}); err != nil {
		t.Fatal(err)
	}
	if err := pub.Flush(ctx); err != nil {
		t.Fatal(err)
	}
	waitFor(t, 2*time.Minute, "the live heartbeat written", func() bool {
		var n int
		return pool.QueryRow(ctx, `SELECT count(*) FROM stb.hub_heartbeats WHERE hub = 'hub-live'`).Scan(&n) == nil && n == 1
	})
	return written, time.Since(start)
}

// appliedByType reads stb_dispatcher_bundles_total{result="applied"} by type.
func appliedByType(t *testing.T, b *Bridge) map[string]float64 {
	t.Helper()
	mfs, err := b.registry.Gather()
	if err != nil {
		t.Fatal(err)
	}
	out := map[string]float64{}
	for _, mf := range mfs {
		if mf.GetName() != "stb_dispatcher_bundles_total" {
			continue
		}
		for _, m := range mf.GetMetric() {
			var typ, result string
			for _, l := range m.GetLabel() {
				switch l.GetName() {
				case "type":
					typ = l.GetValue()
				case "result":
					result = l.GetValue()
				}
			}
			if result == "applied" {
				out[typ] += m.GetCounter().GetValue()
			}
		}
	}
	return out
}

// TestCatchUpWritesEachHubAboutOnce: over a backlog of 60 rounds of 20
// hubs on one partition, a bridge that lingers while far behind writes at
// most 3 bundles per hub and complete type (the last stretch of the
// backlog, within FarBehind of the end, is written as read). Without the
// linger it wrote 359 heartbeats for 20 hubs on a loaded 2-core machine
// (with: 40). A live heartbeat after the catch-up is
// written at once even with a linger of an hour: the partition is at its
// end. Events (policyevents) are a stream and are all written either way.
func TestCatchUpWritesEachHubAboutOnce(t *testing.T) {
	const hubs = 20
	lingered, live := catchUp(t, time.Hour)
	t.Logf("written with --linger 1h: %v; the live heartbeat took %v", lingered, live.Round(time.Millisecond))
	for _, typ := range []string{"heartbeat", "managedclusters", "clusterspolicies", "compliance"} {
		if lingered[typ] > 3*hubs {
			t.Errorf("%s: %v bundles written with a linger, want at most %d (3 per hub)", typ, lingered[typ], 3*hubs)
		}
	}
	if live >= time.Hour/2 {
		t.Errorf("the live heartbeat took %v: it waited for the linger", live)
	}
}
