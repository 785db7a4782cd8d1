package main

import (
	"context"
	"fmt"
	"os"
	"time"

	"github.com/confluentinc/confluent-kafka-go/v2/kafka"
	"go.uber.org/zap"

	"github.com/stbridge/stb/pkg/sim"
	cnesim "github.com/stbridge/stb/pkg/sim/cne"
	simwork "github.com/stbridge/stb/pkg/sim/work"
	"github.com/stbridge/stb/pkg/transport"
)

// newKafkaPublisher returns the simulator's publisher to s's brokers.
func newKafkaPublisher(s simFlags, logger *zap.Logger) (*sim.KafkaPublisher, error) {
	return sim.NewKafkaPublisher(sim.PublisherConfig{Brokers: s.brokers, TypePrefix: s.prefix}, logger)
}

type simFlags struct {
	cfg      sim.Config
	brokers  string
	prefix   string
	expected string
	// resyncTopic, when set, is read for resync requests after the
	// rounds, until none came for resyncQuiet.
	resyncTopic string
	resyncQuiet time.Duration
	// work holds the flags of --agent work (simulate_work.go).
	work workFlags
}

func (s *simFlags) bind(fs interface {
	IntVar(*int, string, int, string)
	Int64Var(*int64, string, int64, string)
	Float64Var(*float64, string, float64, string)
	StringVar(*string, string, string, string)
	Uint64Var(*uint64, string, uint64, string)
	DurationVar(*time.Duration, string, time.Duration, string)
	BoolVar(*bool, string, bool, string)
}) {
	s.work.bind(fs)
	fs.IntVar(&s.cfg.Hubs, "hubs", 50, "number of simulated hubs")
	fs.IntVar(&s.cfg.Clusters, "clusters", 20, "managed clusters per hub")
	fs.IntVar(&s.cfg.Policies, "policies", 0, "policies per hub at the start (0 = default 5, negative = none: hubs send only clusters and heartbeats)")
	fs.IntVar(&s.cfg.Generations, "generations", 20, "rounds; in each every hub sends one bundle of each type")
	fs.Int64Var(&s.cfg.Seed, "seed", 1, "random seed; the same seed sends the same bundles")
	fs.Float64Var(&s.cfg.Rate, "rate", 0, "messages per second over all hubs; 0 is as fast as Kafka takes them")
	fs.StringVar(&s.cfg.Agent, "agent", sim.AgentSTB, "agent kind: stb lists every policy in a compliance report; hoh leaves out fully compliant policies, as the hub-of-hubs agents do; globalhub sends the multicluster global-hub agent's events (read with --profiles globalhub); work sends OCM work agents' ManifestWork statuses (read with --profiles …,work); cne: nodes publishing Cloud Native Events, --hubs of them (read with --profiles …,cne)")
	fs.Float64Var(&s.cfg.RestartProbability, "restart-probability", 0, "chance per hub and round of an agent restart (0 = default 0.05, negative = never)")
	fs.Uint64Var(&s.cfg.FirstIncarnation, "first-incarnation", 0, "incarnation agents start with (raise it to simulate again into a database holding an earlier run)")
	fs.StringVar(&s.cfg.Topic, "topic", "", "topic to publish to (default "+sim.DefaultTopic+"; with --agent globalhub a topic per hub, "+sim.GlobalHubTopicPrefix+"<hub>, or the shared "+sim.GlobalHubSharedTopic+" keyed by event type)")
	fs.StringVar(&s.prefix, "type-prefix", transport.DefaultTypePrefix, "CloudEvents type prefix")
	gh := &s.cfg.GlobalHub
	fs.StringVar(&gh.SendMode, "event-send-mode", sim.SendModeBatch, "with --agent globalhub: how the event types are sent, as the agent's --event-send-mode: batch (data an array), single (a CloudEvent per event), or mixed (every other hub single)")
	fs.IntVar(&gh.ResyncEvery, "gh-resync-every", 0, fmt.Sprintf("with --agent globalhub: rounds between periodic resyncs of managedcluster and policy.localspec, upstream every 6 h (0 = default %d, negative = only when the agent starts)", sim.DefaultResyncEvery))
	fs.IntVar(&gh.FrameBytes, "gh-frame-bytes", 0, fmt.Sprintf("with --agent globalhub: largest generic bundle frame and event batch in bytes (0 = upstream's %d)", sim.DefaultFrameBytes))
	fs.IntVar(&gh.ChunkBytes, "gh-chunk-bytes", 0, fmt.Sprintf("with --agent globalhub: data above this many bytes is sent in chunks (0 = upstream's %d)", sim.DefaultChunkBytes))
	fs.DurationVar(&gh.ClockSkew, "gh-clock-skew", 0, fmt.Sprintf("with --agent globalhub: how far a restarted agent's clock may be behind the run before's (0 = default %s, negative = none)", sim.DefaultClockSkew))
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
	if s.cfg.Agent == simwork.Agent {
		return simulateWork(ctx, s)
	}
	logger, err := newLogger("warn", "console")
	if err != nil {
		return err
	}
	if s.cfg.Agent == cnesim.AgentName {
		return simulateCNE(ctx, s, logger)
	}
	start := time.Now()
	exp, err := publishSimulation(ctx, s, logger, func(sent int) {
		fmt.Fprintf(os.Stderr, "\rsimulate: %d messages sent", sent)
	})
	fmt.Fprintln(os.Stderr)
	if err != nil {
		return err
	}
	if err := exp.WriteFile(s.expected); err != nil {
		return err
	}
	lost := ""
	if (s.cfg.LoseProbability > 0 && exp.GlobalHub == nil) || s.resyncTopic != "" {
		lost = fmt.Sprintf(", %d reports lost, %d resyncs answered", exp.Lost, exp.Resyncs)
	}
	fmt.Printf("simulate: %d hubs, %d messages (%v), %d agent restarts%s in %.1fs; expected state in %s\n",
		len(exp.Hubs), exp.Messages, exp.MessagesByType, exp.Restarts, lost, time.Since(start).Seconds(), s.expected)
	if g := exp.GlobalHub; g != nil {
		fmt.Printf("simulate: global-hub agents: %d restarts (%d with the clock set back), %d resyncs in %d frames, %d frames lost, "+
			"%d duplicates, %d late copies, %d copies of an earlier run's first events, %d events in %d chunks, %d single events, "+
			"%d infos without a clusterId, %d migrations, %d migration resyncs\n",
			g.Restarts, g.SkewedRestarts, g.Resyncs, g.ResyncFrames, g.Lost, g.Duplicates, g.LateCopies, g.EarlierRunCopies,
			g.ChunkedEvents, g.Chunks, g.SingleEvents, g.InfosWithoutClusterID, g.Migrations, g.MigrationResyncs)
	}
	return nil
}

// publishSimulation runs the simulator against Kafka and waits until every
// message is delivered.
func publishSimulation(ctx context.Context, s simFlags, logger *zap.Logger, progress func(int)) (*sim.Expected, error) {
	pub, err := newKafkaPublisher(s, logger)
	if err != nil {
		return nil, err
	}
	defer pub.Close()
	last := time.Now()
	report := func(sent int) {
		if progress != nil && time.Since(last) >= time.Second {
			last = time.Now()
			progress(sent)
		}
	}
	if s.resyncTopic == "" {
		return sim.Run(ctx, s.cfg, pub, report)
	}
	asks, stop, err := readResyncRequests(s, logger)
	if err != nil {
		return nil, err
	}
	defer stop()
	return sim.RunWithResync(ctx, s.cfg, pub, report, asks, s.resyncQuiet)
}

// readResyncRequests reads resync requests from s.resyncTopic, from its
// start, in a consumer group of its own, and hands them on as the
// simulated agents read them; stop ends it.
func readResyncRequests(s simFlags, logger *zap.Logger) (<-chan sim.ResyncAsk, func(), error) {
	c, err := kafka.NewConsumer(&kafka.ConfigMap{
		"bootstrap.servers":                  s.brokers,
		"group.id":                           fmt.Sprintf("stb-simulate-%d-%d", os.Getpid(), time.Now().UnixNano()),
		"auto.offset.reset":                  "earliest",
		"enable.auto.commit":                 false,
		"enable.metrics.push":                false,
		"topic.metadata.refresh.interval.ms": 1000,
	})
	if err != nil {
		return nil, nil, fmt.Errorf("resync consumer: %w", err)
	}
	if err := c.Subscribe(s.resyncTopic, nil); err != nil {
		_ = c.Close()
		return nil, nil, fmt.Errorf("resync consumer: %w", err)
	}
	asks := make(chan sim.ResyncAsk, 1024)
	done := make(chan struct{})
	finished := make(chan struct{})
	go func() {
		defer close(finished)
		for {
			select {
			case <-done:
				return
			default:
			}
			ev := c.Poll(100)
			msg, ok := ev.(*kafka.Message)
			if !ok {
				continue
			}
			req, err := transport.DecodeResync(msg, s.prefix)
			if err != nil {
				logger.Warn("not a resync request", zap.Error(err))
				continue
			}
			select {
			case asks <- sim.ResyncAsk{Hub: req.Hub, Type: req.BundleType}:
			case <-done:
				return
			}
		}
	}()
	return asks, func() {
		close(done)
		<-finished
		_ = c.Close()
	}, nil
}
