package main

import (
	"context"
	"flag"
	"fmt"
	"os"
	"time"

	"github.com/stbridge/stb/internal/profiles"
	"github.com/stbridge/stb/internal/profiles/profile"
	"github.com/stbridge/stb/pkg/sim"
	"github.com/stbridge/stb/pkg/transport"
)

// simFlags are the flags simulate and demo share: the simulation's, and
// every agent's own (profiles.Agent.Bind).
type simFlags struct {
	cfg      sim.Config
	brokers  string
	prefix   string
	expected string
	// resyncTopic, when set, is read for resync requests after the
	// rounds, until none came for resyncQuiet.
	resyncTopic string
	resyncQuiet time.Duration
	// agents are the agents' commands, by name, their flags bound.
	agents map[string]profile.Commands
}

func (s *simFlags) bind(fs *flag.FlagSet) {
	s.agents = map[string]profile.Commands{}
	for _, p := range profiles.All() {
		for _, a := range p.Agents {
			s.agents[a.Name] = a.Bind(fs)
		}
	}
	fs.IntVar(&s.cfg.Hubs, "hubs", 50, "number of simulated hubs")
	fs.IntVar(&s.cfg.Clusters, "clusters", 20, "managed clusters per hub")
	fs.IntVar(&s.cfg.Policies, "policies", 0, "policies per hub at the start (0 = default 5, negative = none: hubs send only clusters and heartbeats)")
	fs.IntVar(&s.cfg.Generations, "generations", 20, "rounds; in each every hub sends one bundle of each type")
	fs.Int64Var(&s.cfg.Seed, "seed", 1, "random seed; the same seed sends the same bundles")
	fs.Float64Var(&s.cfg.Rate, "rate", 0, "messages per second over all hubs; 0 is as fast as Kafka takes them")
	fs.StringVar(&s.cfg.Agent, "agent", sim.AgentSTB, "agent kind: "+profiles.AgentUsage())
	fs.Float64Var(&s.cfg.RestartProbability, "restart-probability", 0, "chance per hub and round of an agent restart (0 = default 0.05, negative = never)")
	fs.Uint64Var(&s.cfg.FirstIncarnation, "first-incarnation", 0, "incarnation agents start with (raise it to simulate again into a database holding an earlier run)")
	fs.StringVar(&s.cfg.Topic, "topic", "", "topic to publish to (default "+sim.DefaultTopic+"; with --agent globalhub a topic per hub, "+sim.GlobalHubTopicPrefix+"<hub>, or the shared "+sim.GlobalHubSharedTopic+" keyed by event type)")
	fs.StringVar(&s.prefix, "type-prefix", transport.DefaultTypePrefix, "CloudEvents type prefix")
}

// commands returns the chosen agent's commands, its flags set on the
// shared simulation config.
func (s *simFlags) commands() (profile.Commands, error) {
	if _, _, err := profiles.LookupAgent(s.cfg.Agent); err != nil {
		return profile.Commands{}, fmt.Errorf("--agent: %w", err)
	}
	c := s.agents[s.cfg.Agent]
	if c.Sim != nil {
		c.Sim(&s.cfg)
	}
	return c, nil
}

func simulateCmd(ctx context.Context, args []string) error {
	var s simFlags
	fs := newFlagSet("simulate", "Publish the bundles of simulated hubs to Kafka and write the state the database must finally hold.")
	s.bind(fs)
	fs.StringVar(&s.brokers, "kafka-brokers", "127.0.0.1:9092", "Kafka bootstrap servers")
	fs.StringVar(&s.expected, "expected", "expected.json", "file to write the expected final state to")
	fs.Float64Var(&s.cfg.LoseProbability, "lose-probability", 0, "chance that a compliance report a delta follows is lost (never published), so that its deltas name a base the bridge never reads; with --agent globalhub, that a managedcluster or policy.localspec frame of changes is lost, which only the next periodic resync repairs")
	fs.StringVar(&s.resyncTopic, "resync-topic", "", "after the rounds, answer the bridge's resync requests on this topic (the bridge's --resync-topic) as agents do, with a complete bundle at a new generation")
	fs.DurationVar(&s.resyncQuiet, "resync-quiet", 15*time.Second, "with --resync-topic: stop answering once no request came for this long")
	if err := parseFlags(fs, args); err != nil {
		return err
	}
	c, err := s.commands()
	if err != nil {
		return err
	}
	logger, err := newLogger("warn", "console")
	if err != nil {
		return err
	}
	pl := &profile.ProgressLine{W: os.Stderr, Out: os.Stdout}
	defer pl.End()
	return c.Simulate(ctx, profile.SimulateRun{Sim: s.cfg, Brokers: s.brokers, TypePrefix: s.prefix, Expected: s.expected,
		ResyncTopic: s.resyncTopic, ResyncQuiet: s.resyncQuiet, Out: pl, Progress: pl.Sent, Logger: logger})
}
