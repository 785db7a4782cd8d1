package demo

import (
	"context"
	"errors"
	"fmt"
	"os"
	"strings"
	"sync/atomic"
	"time"

	"github.com/stbridge/stb/dbsyncers/cne"
	"github.com/stbridge/stb/internal/bridge"
	"github.com/stbridge/stb/internal/metricview"
	"github.com/stbridge/stb/pkg/broker"
	"github.com/stbridge/stb/pkg/db"
	cnesim "github.com/stbridge/stb/pkg/sim/cne"
	"github.com/stbridge/stb/pkg/transport"
)

// DefaultCNERounds is how many times each node publishes in `stb demo
// --agent cne` when --generations is 0.
const DefaultCNERounds = 100

// CNEResult is what a Cloud Native Events demo ended with.
type CNEResult struct {
	Expected *cnesim.Expected
	Report   *cnesim.Report
}

// OK reports whether the database held the nodes' latest state.
func (r *CNEResult) OK() bool { return r.Report != nil && r.Report.OK() }

// RunCNE is Run for `stb demo --agent cne`: simulated nodes (cfg.Sim.Hubs
// of them, cfg.Sim.Generations rounds) publish Cloud Native Events
// (pkg/sim/cne) to the embedded broker, a bridge reading the stb and cne
// profiles writes them, and the demo ends when status.cne_state holds
// exactly the latest value of every key, showing one node's rows.
func RunCNE(ctx context.Context, cfg Config) (*CNEResult, error) {
	if cfg.Partitions < 1 || cfg.Timeout <= 0 || cfg.DatabaseName == "" || cfg.Out == nil || cfg.Logger == nil {
		return nil, errors.New("demo: Partitions, Timeout, DatabaseName, Out and Logger are required")
	}
	scfg := cnesim.Config{Nodes: cfg.Sim.Hubs, Rounds: cfg.Sim.Generations, Seed: cfg.Sim.Seed, Topic: cfg.Sim.Topic, Restart: cfg.Sim.RestartProbability}
	if scfg.Rounds == 0 {
		scfg.Rounds = DefaultCNERounds
	}
	if scfg.Topic == "" {
		scfg.Topic = cnesim.DefaultTopic
	}
	say := func(format string, a ...any) { fmt.Fprintf(cfg.Out, "demo: "+format+"\n", a...) }

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
	brk, err := broker.Start(broker.Config{DataDir: dir, Topics: []string{scfg.Topic}, Partitions: int32(cfg.Partitions)}, cfg.Logger)
	if err != nil {
		return nil, err
	}
	defer brk.Close()
	say("kafka broker %s (kfake, topic %s of %d partitions)", brk.Addr(), scfg.Topic, cfg.Partitions)

	bcfg := bridge.DefaultConfig()
	bcfg.Reader.Brokers, bcfg.Reader.Topics, bcfg.DatabaseURL = brk.Addr(), []string{scfg.Topic}, demoURL
	bcfg.HTTPAddr, bcfg.AdminAddr, bcfg.Committer.Interval, bcfg.Reader.GroupID = cfg.HTTPAddr, cfg.AdminAddr, time.Second, "stb-demo"
	bcfg.Profiles = []string{"stb", cne.Profile}
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
		say("console http://%s/  (a node's page: /hub?name=NODE)", a)
	}

	say("%d nodes publishing Cloud Native Events, %d rounds (restarts, duplicates, late copies, clock steps back, bad events)", scfg.Nodes, scfg.Rounds)
	pub, err := cnesim.NewKafkaPublisher(transport.PublisherConfig{Brokers: brk.Addr()}, cfg.Logger.Named("simulate"))
	if err != nil {
		return nil, err
	}
	defer pub.Close()
	var sent atomic.Int64
	type simResult struct {
		exp *cnesim.Expected
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
		exp, err := cnesim.Run(simCtx, scfg, pub, func(n int) { sent.Store(int64(n)) })
		simDone <- simResult{exp, err}
	}()

	start := time.Now()
	tick := time.NewTicker(time.Second)
	defer tick.Stop()
	res := &CNEResult{}
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
			res.Expected = r.exp
			deadline = time.Now().Add(cfg.Timeout)
			say("all %d messages published after %.1fs; waiting for the database to catch up", r.exp.Messages, time.Since(start).Seconds())
			continue
		case <-tick.C:
		}
		m, st := metricview.Gather(b.Gatherer()), b.Stats()
		published := sent.Load()
		fmt.Fprintf(cfg.Out, "[%4.0fs] sent %7d | read %7d | written %7.0f | committed lag %6d | dead letters %.0f\n",
			time.Since(start).Seconds(), published, st.Read,
			m.Sum("stb_dispatcher_bundles_total", map[string]string{"result": "applied"}), max(0, published-st.Committed()),
			m.Sum("stb_transport_rejected_total", nil)+m.Sum("stb_dispatcher_dead_letters_total", nil))
		if res.Expected == nil {
			continue
		}
		if res.Report, err = cnesim.Verify(ctx, pool, res.Expected); err != nil {
			return res, err
		}
		if (res.Report.OK() && st.Committed() >= int64(res.Expected.Messages)) || time.Now().After(deadline) {
			break
		}
	}
	e := res.Expected
	say("sent %d messages: %d restarts, %d clock steps back, %d duplicates, %d late copies, %d values behind their key's latest, %d bad events",
		e.Messages, e.Restarts, e.ClockSteps, e.Duplicates, e.LateCopies, e.Behind, e.DeadLetters)
	if rows, err := cne.LoadNode(ctx, pool, e.Nodes[0], 12); err == nil {
		say("status.cne_state of node %s:", e.Nodes[0])
		for _, r := range rows {
			fmt.Fprintf(cfg.Out, "  %-52s %-58s %-12s %-14s %s\n", r.Type, r.Address, r.DataType, r.Value, r.Time.Format(time.RFC3339Nano))
		}
	}
	if !res.OK() {
		fmt.Fprintf(cfg.Out, "verified: FAILED — %s\n", strings.ReplaceAll(res.Report.Summary(), "\n", "; "))
		return res, nil
	}
	fmt.Fprintf(cfg.Out, "verified: ok — %d nodes, %d keys and %d dead letters match the nodes' latest state\n",
		res.Report.Nodes, res.Report.Rows, res.Report.DeadLetters)
	return res, nil
}
