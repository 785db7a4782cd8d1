package demo

import (
	"context"
	"errors"
	"fmt"
	"strings"
	"time"

	"github.com/stbridge/stb/dbsyncers/cne"
	"github.com/stbridge/stb/pkg/sim"
	cnesim "github.com/stbridge/stb/pkg/sim/cne"
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
// profiles writes them, and the demo ends when stb.cne_state holds
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

	st, err := startStage(ctx, stageConfig{DatabaseURL: cfg.DatabaseURL, DatabaseName: cfg.DatabaseName,
		HTTPAddr: cfg.HTTPAddr, AdminAddr: cfg.AdminAddr, Topics: []string{scfg.Topic}, Partitions: cfg.Partitions,
		Profiles: []string{"stb", cne.Profile}, Console: "a node's page: /hub?name=NODE", Logger: cfg.Logger}, say)
	if err != nil {
		return nil, err
	}
	defer st.close()
	pool, brk := st.pool, st.broker

	say("%d nodes publishing Cloud Native Events, %d rounds (restarts, duplicates, late copies, clock steps back, bad events)", scfg.Nodes, scfg.Rounds)
	pub, err := cnesim.NewKafkaPublisher(sim.PublisherConfig{Brokers: brk.Addr()}, cfg.Logger.Named("simulate"))
	if err != nil {
		return nil, err
	}
	defer pub.Close()
	res := &CNEResult{}
	res.Expected, _, err = follow(ctx, st, cfg.Out, cfg.Timeout,
		func(ctx context.Context, sent func(int)) (*cnesim.Expected, int, error) {
			exp, err := cnesim.Run(ctx, scfg, pub, sent)
			if err != nil {
				return nil, 0, err
			}
			return exp, exp.Messages, nil
		},
		func(e *cnesim.Expected, after time.Duration) {
			say("all %d messages published after %.1fs; waiting for the database to catch up", e.Messages, after.Seconds())
		},
		func(ctx context.Context, e *cnesim.Expected) (bool, error) {
			var err error
			res.Report, err = cnesim.Verify(ctx, pool, e)
			return err == nil && res.Report.OK(), err
		})
	if err != nil {
		return res, err
	}
	e := res.Expected
	say("sent %d messages: %d restarts, %d clock steps back, %d duplicates, %d late copies, %d values behind their key's latest, %d bad events",
		e.Messages, e.Restarts, e.ClockSteps, e.Duplicates, e.LateCopies, e.Behind, e.DeadLetters)
	if rows, err := cne.LoadNode(ctx, pool, e.Nodes[0], 12); err == nil {
		say("stb.cne_state of node %s:", e.Nodes[0])
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
