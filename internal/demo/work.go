package demo

import (
	"context"
	"errors"
	"fmt"
	"io"
	"os"
	"strings"
	"sync/atomic"
	"time"

	"github.com/confluentinc/confluent-kafka-go/v2/kafka"
	"go.uber.org/zap"

	wf "github.com/stbridge/stb/dbsyncers/work"
	"github.com/stbridge/stb/internal/bridge"
	"github.com/stbridge/stb/internal/metricview"
	"github.com/stbridge/stb/internal/profiles"
	"github.com/stbridge/stb/pkg/broker"
	"github.com/stbridge/stb/pkg/db"
	simwork "github.com/stbridge/stb/pkg/sim/work"
	"github.com/stbridge/stb/pkg/transport"
)

// WorkConfig is a demo of the ManifestWork status family (`stb demo
// --agent work`): simulated work agents (pkg/sim/work) instead of hubs,
// the bridge with the work profile on, and the family's verification.
type WorkConfig struct {
	Sim simwork.Config
	// Timeout, DatabaseURL, DatabaseName, HTTPAddr, AdminAddr,
	// Partitions, Out and Logger are as in Config.
	Timeout                   time.Duration
	DatabaseURL, DatabaseName string
	HTTPAddr, AdminAddr       string
	Partitions                int
	Out                       io.Writer
	Logger                    *zap.Logger
}

// WorkResult is what a work demo ended with.
type WorkResult struct {
	Expected *simwork.Expected
	Report   *simwork.Report
}

// OK reports whether the database held the fence's final state.
func (r *WorkResult) OK() bool { return r.Report != nil && r.Report.OK() }

// RunWork runs the work demo as Run runs the hubs' one: until the table
// holds the agents' final state with every message committed, or until
// cfg.Timeout after the last message was published.
func RunWork(ctx context.Context, cfg WorkConfig) (*WorkResult, error) {
	if cfg.Partitions < 1 || cfg.Timeout <= 0 || cfg.DatabaseName == "" || cfg.Out == nil || cfg.Logger == nil {
		return nil, errors.New("demo: Partitions, Timeout, DatabaseName, Out and Logger are required")
	}
	s := cfg.Sim
	if s.Topic == "" {
		s.Topic = simwork.DefaultTopic
	}
	say := func(format string, a ...any) { fmt.Fprintf(cfg.Out, "demo: "+format+"\n", a...) }

	// 1. A fresh database; 2. the embedded broker; 3. the bridge, with
	// the work profile on.
	demoURL, err := db.Recreate(ctx, cfg.DatabaseURL, cfg.DatabaseName)
	if err != nil {
		return nil, fmt.Errorf("database: %w (is PostgreSQL running? `make demo` starts it)", err)
	}
	say("database %s", db.RedactURL(demoURL))
	dir, err := os.MkdirTemp("", "stb-demo-kafka-")
	if err != nil {
		return nil, err
	}
	defer os.RemoveAll(dir)
	brk, err := broker.Start(broker.Config{DataDir: dir, Topics: []string{s.Topic}, Partitions: int32(cfg.Partitions)}, cfg.Logger)
	if err != nil {
		return nil, err
	}
	defer brk.Close()
	say("kafka broker %s (kfake, topic %s of %d partitions)", brk.Addr(), s.Topic, cfg.Partitions)
	bcfg := bridge.DefaultConfig()
	bcfg.Reader.Brokers, bcfg.Reader.Topics, bcfg.DatabaseURL = brk.Addr(), []string{s.Topic}, demoURL
	bcfg.Profiles = append(profiles.Default(), wf.Name)
	bcfg.HTTPAddr, bcfg.AdminAddr, bcfg.Committer.Interval, bcfg.Reader.GroupID = cfg.HTTPAddr, cfg.AdminAddr, time.Second, "stb-demo"
	b, err := bridge.New(ctx, bcfg, bridge.Deps{Logger: cfg.Logger})
	if err != nil {
		return nil, err
	}
	defer b.Close()
	pool, err := db.Connect(ctx, demoURL, 2)
	if err != nil {
		return nil, err
	}
	defer pool.Close()
	bctx, stopBridge := context.WithCancel(context.Background())
	bridgeDone := make(chan error, 1)
	go func() { bridgeDone <- b.Run(bctx) }()
	defer func() {
		stopBridge()
		<-bridgeDone
	}()
	if a := b.AdminAddr(); a != "" {
		say("console http://%s/work  (the family's rows)", a)
	}

	// 4. The agents publish while the bridge reads.
	pub, err := transport.NewPublisher(transport.PublisherConfig{Brokers: brk.Addr()}, cfg.Logger.Named("simulate"))
	if err != nil {
		return nil, err
	}
	defer pub.Close()
	say("%d clusters × %d works, %d rounds", s.Clusters, s.Resources, s.Rounds)
	var sent atomic.Int64
	type simResult struct {
		exp *simwork.Expected
		err error
	}
	simDone := make(chan simResult, 1)
	simCtx, stopSim := context.WithCancel(ctx)
	defer func() {
		stopSim()
		if simDone != nil {
			<-simDone
		}
	}()
	go func() {
		exp, err := simwork.Run(simCtx, s, func(ctx context.Context, m *kafka.Message) error { return pub.PublishMessage(ctx, m) },
			func(n int) { sent.Store(int64(n)) })
		if err == nil {
			err = pub.Flush(simCtx)
		}
		simDone <- simResult{exp, err}
	}()

	// 5. Progress every second, then the verification.
	start := time.Now()
	tick := time.NewTicker(time.Second)
	defer tick.Stop()
	res := &WorkResult{}
	var published int64
	var deadline time.Time
	for {
		select {
		case <-ctx.Done():
			return res, errors.New("interrupted")
		case r := <-simDone:
			simDone = nil
			if r.err != nil {
				return res, fmt.Errorf("simulate: %w", r.err)
			}
			res.Expected, published = r.exp, int64(r.exp.Messages)
			deadline = time.Now().Add(cfg.Timeout)
			say("all %d messages published after %.1fs (%d restarts, %d duplicates, %d late copies, %d deletes); waiting for the database",
				r.exp.Messages, time.Since(start).Seconds(), r.exp.Restarts, r.exp.Duplicates, r.exp.LateCopies, r.exp.Deletes)
			continue
		case <-tick.C:
		}
		m, st := metricview.Gather(b.Gatherer()), b.Stats()
		if res.Expected == nil {
			published = sent.Load()
		}
		committed := st.Committed()
		fmt.Fprintf(cfg.Out, "[%4.0fs] sent %7d | read %7d | written %7.0f | skipped %5.0f | committed lag %6d | dead letters %.0f\n",
			time.Since(start).Seconds(), published, st.Read, m.Sum("stb_dispatcher_bundles_total", map[string]string{"result": "applied"}),
			m.Sum("stb_transport_skipped_total", nil), max(0, published-committed),
			m.Sum("stb_transport_rejected_total", nil)+m.Sum("stb_dispatcher_dead_letters_total", nil))
		if res.Expected == nil {
			continue
		}
		if res.Report, err = simwork.Verify(ctx, pool, res.Expected); err != nil {
			return res, err
		}
		if (res.Report.OK() && committed >= published) || time.Now().After(deadline) {
			break
		}
	}
	if !res.OK() {
		fmt.Fprintf(cfg.Out, "verified: FAILED — %s\n", strings.ReplaceAll(strings.TrimSpace(res.Report.Summary()), "\n", "; "))
		return res, nil
	}
	fmt.Fprintf(cfg.Out, "verified: ok — %d works of %d clusters hold their greatest (resourceversion, sequenceid), tombstones included; took %.1fs\n",
		res.Report.Rows, len(res.Expected.Clusters), time.Since(start).Seconds())
	return res, nil
}
