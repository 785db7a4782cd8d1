// Package cne is the cne profile: Cloud Native Events (O-RAN PTP and sync
// notifications, redhat-cne cloud-event-proxy), written to stb.cne_state
// by dbsyncers/cne, one node a hub. It holds the profile's value for
// profiles.All and the profile's pieces outside the bridge's decoding:
// its simulated nodes' simulation, verification and demo (pkg/sim/cne),
// and the console's section of a node's rows.
package cne

import (
	"context"
	"flag"
	"fmt"
	"strconv"
	"time"

	"github.com/jackc/pgx/v5/pgxpool"

	dcne "github.com/stbridge/stb/dbsyncers/cne"
	"github.com/stbridge/stb/internal/profiles/profile"
	"github.com/stbridge/stb/internal/profiles/stb"
	"github.com/stbridge/stb/pkg/sim"
	cnesim "github.com/stbridge/stb/pkg/sim/cne"
)

// Name is the profile's name.
const Name = dcne.Profile

// Profile returns the cne profile.
func Profile() profile.Profile {
	return profile.Profile{
		Name: Name, Help: "Cloud Native Events (O-RAN PTP/sync notifications)",
		Syncers: dcne.Syncers, Family: dcne.NewFamily, KeyFenced: true,
		Agents: []profile.Agent{{
			Name: cnesim.AgentName, Help: "nodes publishing Cloud Native Events, --hubs of them (read with --profiles …,cne)",
			Bind:  bind,
			Bench: profile.Bench{CatchUpOnly: true, Profiles: []string{stb.Name, Name}, CatchUp: Name},
		}},
		Verify:     verify,
		HubSection: hubSection,
	}
}

// bind returns the cne agent's commands; it has no flags of its own.
func bind(*flag.FlagSet) profile.Commands {
	return profile.Commands{Simulate: simulate, Demo: Demo}
}

// config maps the shared flags onto the cne simulation: --hubs nodes,
// --generations rounds.
func config(s sim.Config) cnesim.Config {
	return cnesim.Config{Nodes: s.Hubs, Rounds: s.Generations, Seed: s.Seed, Topic: s.Topic, Restart: s.RestartProbability}
}

// simulate is `stb simulate --agent cne`: --hubs nodes publish Cloud
// Native Events for --generations rounds.
func simulate(ctx context.Context, run profile.SimulateRun) error {
	pub, err := cnesim.NewKafkaPublisher(sim.PublisherConfig{Brokers: run.Brokers}, run.Logger)
	if err != nil {
		return err
	}
	defer pub.Close()
	start := time.Now()
	exp, err := cnesim.Run(ctx, config(run.Sim), pub, run.Progress)
	if err != nil {
		return err
	}
	if err := exp.WriteFile(run.Expected); err != nil {
		return err
	}
	fmt.Fprintf(run.Out, "simulate: cne: %d nodes, %d messages, %d rows expected; %d restarts, %d clock steps back, %d duplicates, %d late copies, "+
		"%d values behind their key's latest, %d bad events in %.1fs; expected state in %s\n",
		len(exp.Nodes), exp.Messages, len(exp.Rows), exp.Restarts, exp.ClockSteps, exp.Duplicates, exp.LateCopies,
		exp.Behind, exp.DeadLetters, time.Since(start).Seconds(), run.Expected)
	return nil
}

// verify is `stb verify` of a cne simulation's expected state.
func verify(ctx context.Context, pool *pgxpool.Pool, path string) (bool, profile.Verdict, error) {
	exp, ok, err := cnesim.ReadExpected(path)
	if err != nil || !ok {
		return ok, profile.Verdict{}, err
	}
	rep, err := cnesim.Verify(ctx, pool, exp)
	if err != nil {
		return true, profile.Verdict{}, err
	}
	return true, profile.Verdict{OK: rep.OK(), Summary: rep.Summary(),
		Matched: fmt.Sprintf("cne: %d nodes, %d rows, %d dead letters match", rep.Nodes, rep.Rows, rep.DeadLetters)}, nil
}

// hubSection is a node's rows of stb.cne_state on its console page: a
// Cloud Native Events node is a hub of its own.
func hubSection(ctx context.Context, pool *pgxpool.Pool, hub string, limit int) (profile.Section, error) {
	s := profile.Section{ID: "cne", Title: "Cloud Native Events of this node",
		Columns: []string{"type", "resource address", "data type", "value", "event time", "from"}}
	rows, err := dcne.LoadNode(ctx, pool, hub, limit)
	for _, r := range rows {
		s.Rows = append(s.Rows, []string{r.Type, r.Address, r.DataType, r.Value + " " + r.ValueType,
			r.Time.UTC().Format(time.RFC3339), r.Topic + "/" + strconv.Itoa(int(r.Partition)) + "@" + strconv.FormatInt(r.Offset, 10)})
	}
	return s, err
}
