package cne

import (
	"context"
	"fmt"
	"strings"
	"time"

	dcne "github.com/stbridge/stb/dbsyncers/cne"
	"github.com/stbridge/stb/internal/profiles/profile"
	"github.com/stbridge/stb/internal/profiles/stb"
	"github.com/stbridge/stb/pkg/sim"
	cnesim "github.com/stbridge/stb/pkg/sim/cne"
)

// DefaultDemoRounds is how many times each node publishes in `stb demo
// --agent cne` when --generations is 0.
const DefaultDemoRounds = 100

// Demo is `stb demo --agent cne`: simulated nodes (--hubs of them,
// --generations rounds) publish Cloud Native Events (pkg/sim/cne) to the
// embedded broker, a bridge reading the stb and cne profiles writes them,
// and the demo ends when stb.cne_state holds exactly the latest value of
// every key, showing one node's rows. ok reports whether it did.
func Demo(ctx context.Context, run profile.DemoRun) (ok bool, _ error) {
	scfg := config(run.Sim)
	if scfg.Rounds == 0 {
		scfg.Rounds = DefaultDemoRounds
	}
	if scfg.Topic == "" {
		scfg.Topic = cnesim.DefaultTopic
	}
	st, err := run.Start(ctx, []string{scfg.Topic}, 0, []string{stb.Name, Name}, "a node's page: /hub?name=NODE")
	if err != nil {
		return false, err
	}
	defer st.Close()

	run.Say("%d nodes publishing Cloud Native Events, %d rounds (restarts, duplicates, late copies, clock steps back, bad events)", scfg.Nodes, scfg.Rounds)
	pub, err := cnesim.NewKafkaPublisher(sim.PublisherConfig{Brokers: st.Brokers()}, run.Logger.Named("simulate"))
	if err != nil {
		return false, err
	}
	defer pub.Close()
	var (
		e   *cnesim.Expected
		rep *cnesim.Report
	)
	ok, err = st.Follow(ctx,
		func(ctx context.Context, sent func(int)) (int, error) {
			exp, err := cnesim.Run(ctx, scfg, pub, sent)
			if err != nil {
				return 0, err
			}
			e = exp
			return exp.Messages, nil
		},
		func(after time.Duration) {
			run.Say("all %d messages published after %.1fs; waiting for the database to catch up", e.Messages, after.Seconds())
		},
		func(ctx context.Context) (bool, error) {
			var err error
			rep, err = cnesim.Verify(ctx, st.Pool(), e)
			return err == nil && rep.OK(), err
		})
	if err != nil {
		return false, err
	}
	run.Say("sent %d messages: %d restarts, %d clock steps back, %d duplicates, %d late copies, %d values behind their key's latest, %d bad events",
		e.Messages, e.Restarts, e.ClockSteps, e.Duplicates, e.LateCopies, e.Behind, e.DeadLetters)
	if rows, err := dcne.LoadNode(ctx, st.Pool(), e.Nodes[0], 12); err == nil {
		run.Say("stb.cne_state of node %s:", e.Nodes[0])
		for _, r := range rows {
			fmt.Fprintf(run.Out, "  %-52s %-58s %-12s %-14s %s\n", r.Type, r.Address, r.DataType, r.Value, r.Time.Format(time.RFC3339Nano))
		}
	}
	if !ok {
		fmt.Fprintf(run.Out, "verified: FAILED — %s\n", strings.ReplaceAll(rep.Summary(), "\n", "; "))
		return false, nil
	}
	fmt.Fprintf(run.Out, "verified: ok — %d nodes, %d keys and %d dead letters match the nodes' latest state\n",
		rep.Nodes, rep.Rows, rep.DeadLetters)
	return true, nil
}
