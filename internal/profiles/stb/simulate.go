package stb

import (
	"context"
	"fmt"
	"os"
	"time"

	"github.com/confluentinc/confluent-kafka-go/v2/kafka"
	"go.uber.org/zap"

	"github.com/stbridge/stb/internal/profiles/profile"
	"github.com/stbridge/stb/pkg/sim"
	"github.com/stbridge/stb/pkg/transport"
)

// Simulate is `stb simulate` of the hubs' agents (run.Sim.Agent: STB's,
// the hub-of-hubs or the global-hub agents): it publishes to Kafka,
// answers resync requests after the rounds when run.ResyncTopic is set,
// and writes the expected final state.
func Simulate(ctx context.Context, run profile.SimulateRun) error {
	start := time.Now()
	exp, err := publish(ctx, run)
	if err != nil {
		return err
	}
	if err := exp.WriteFile(run.Expected); err != nil {
		return err
	}
	lost := ""
	if (run.Sim.LoseProbability > 0 && exp.GlobalHub == nil) || run.ResyncTopic != "" {
		lost = fmt.Sprintf(", %d reports lost, %d resyncs answered", exp.Lost, exp.Resyncs)
	}
	fmt.Fprintf(run.Out, "simulate: %d hubs, %d messages (%v), %d agent restarts%s in %.1fs; expected state in %s\n",
		len(exp.Hubs), exp.Messages, exp.MessagesByType, exp.Restarts, lost, time.Since(start).Seconds(), run.Expected)
	if g := exp.GlobalHub; g != nil {
		fmt.Fprintf(run.Out, "simulate: global-hub agents: %d restarts (%d with the clock set back), %d resyncs in %d frames, %d frames lost, "+
			"%d duplicates, %d late copies, %d copies of an earlier run's first events, %d events in %d chunks, %d single events, "+
			"%d infos without a clusterId, %d migrations, %d migration resyncs\n",
			g.Restarts, g.SkewedRestarts, g.Resyncs, g.ResyncFrames, g.Lost, g.Duplicates, g.LateCopies, g.EarlierRunCopies,
			g.ChunkedEvents, g.Chunks, g.SingleEvents, g.InfosWithoutClusterID, g.Migrations, g.MigrationResyncs)
	}
	return nil
}

// publish runs the simulator against Kafka and waits until every message
// is delivered.
func publish(ctx context.Context, run profile.SimulateRun) (*sim.Expected, error) {
	pub, err := sim.NewKafkaPublisher(sim.PublisherConfig{Brokers: run.Brokers, TypePrefix: run.TypePrefix}, run.Logger)
	if err != nil {
		return nil, err
	}
	defer pub.Close()
	if run.ResyncTopic == "" {
		return sim.Run(ctx, run.Sim, pub, run.Progress)
	}
	asks, stop, err := readResyncRequests(run)
	if err != nil {
		return nil, err
	}
	defer stop()
	return sim.RunWithResync(ctx, run.Sim, pub, run.Progress, asks, run.ResyncQuiet)
}

// readResyncRequests reads resync requests from run.ResyncTopic, from its
// start, in a consumer group of its own, and hands them on as the
// simulated agents read them; stop ends it.
func readResyncRequests(run profile.SimulateRun) (<-chan sim.ResyncAsk, func(), error) {
	c, err := kafka.NewConsumer(&kafka.ConfigMap{
		"bootstrap.servers":                  run.Brokers,
		"group.id":                           fmt.Sprintf("stb-simulate-%d-%d", os.Getpid(), time.Now().UnixNano()),
		"auto.offset.reset":                  "earliest",
		"enable.auto.commit":                 false,
		"enable.metrics.push":                false,
		"topic.metadata.refresh.interval.ms": 1000,
	})
	if err != nil {
		return nil, nil, fmt.Errorf("resync consumer: %w", err)
	}
	if err := c.Subscribe(run.ResyncTopic, nil); err != nil {
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
			req, err := transport.DecodeResync(msg, run.TypePrefix)
			if err != nil {
				run.Logger.Warn("not a resync request", zap.Error(err))
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
