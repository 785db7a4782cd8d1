package work

import (
	"context"
	"flag"
	"fmt"
	"time"

	"github.com/confluentinc/confluent-kafka-go/v2/kafka"
	"github.com/jackc/pgx/v5/pgxpool"

	"github.com/stbridge/stb/internal/profiles/profile"
	"github.com/stbridge/stb/pkg/sim"
	simwork "github.com/stbridge/stb/pkg/sim/work"
	"github.com/stbridge/stb/pkg/transport"
)

// flags are the work agent's flags beside the shared ones (--hubs is the
// clusters, --clusters the works per cluster, --generations the rounds).
type flags struct {
	sources                       int
	statusBytes                   int
	duplicate, late, deleteChance float64
	structured                    bool
}

// bind registers the work agent's flags and returns its commands.
func bind(fs *flag.FlagSet) profile.Commands {
	w := &flags{}
	fs.IntVar(&w.sources, "work-sources", 2, "with --agent work: sources the works come from (--hubs is the clusters, --clusters the works per cluster, --generations the rounds)")
	fs.IntVar(&w.statusBytes, "work-status-bytes", 2000, "with --agent work: rough size of a status in bytes (Maestro measures ~20 KB)")
	fs.Float64Var(&w.duplicate, "work-duplicate-probability", 0, "with --agent work: chance a status is sent twice (0 = default 0.05, negative = never)")
	fs.Float64Var(&w.late, "work-late-probability", 0, "with --agent work: chance an older status of a work is sent again after a newer (0 = default 0.05, negative = never)")
	fs.Float64Var(&w.deleteChance, "work-delete-probability", 0, "with --agent work: chance per work and round that it is deleted and a new one created (0 = default 0.03, negative = never)")
	fs.BoolVar(&w.structured, "work-structured", true, "with --agent work: every other cluster sends in structured mode")
	return profile.Commands{
		Simulate: func(ctx context.Context, run profile.SimulateRun) error { return simulate(ctx, run, w.config(run.Sim)) },
		Demo:     func(ctx context.Context, run profile.DemoRun) (bool, error) { return Demo(ctx, run, w.config(run.Sim)) },
	}
}

// config is the work simulation the shared flags s and w describe.
func (w *flags) config(s sim.Config) simwork.Config {
	return simwork.Config{
		Clusters: s.Hubs, Resources: s.Clusters, Sources: w.sources, Rounds: s.Generations,
		Seed: uint64(s.Seed), Topic: s.Topic, StatusBytes: w.statusBytes,
		RestartProbability: s.RestartProbability, DuplicateProbability: w.duplicate,
		LateProbability: w.late, DeleteProbability: w.deleteChance, Structured: w.structured,
	}
}

// publish runs the work simulation against Kafka and waits until every
// message is delivered.
func publish(ctx context.Context, cfg simwork.Config, pcfg transport.PublisherConfig, run profile.SimulateRun) (*simwork.Expected, error) {
	pub, err := transport.NewPublisher(pcfg, run.Logger)
	if err != nil {
		return nil, err
	}
	defer pub.Close()
	exp, err := simwork.Run(ctx, cfg, func(ctx context.Context, msg *kafka.Message) error {
		return pub.PublishMessage(ctx, msg)
	}, run.Progress)
	if err != nil {
		return nil, err
	}
	if err := pub.Flush(ctx); err != nil {
		return nil, err
	}
	return exp, nil
}

// simulate is `stb simulate --agent work`.
func simulate(ctx context.Context, run profile.SimulateRun, cfg simwork.Config) error {
	start := time.Now()
	exp, err := publish(ctx, cfg, transport.PublisherConfig{Brokers: run.Brokers}, run)
	if err != nil {
		return err
	}
	if err := exp.WriteFile(run.Expected); err != nil {
		return err
	}
	fmt.Fprintf(run.Out, "simulate: work agents: %d clusters, %d works, %d messages (%d structured) on %s, %d restarts, %d duplicates, %d late copies, %d deletes in %.1fs; expected state in %s\n",
		len(exp.Clusters), len(exp.Rows), exp.Messages, exp.Structured, exp.Topic, exp.Restarts, exp.Duplicates, exp.LateCopies, exp.Deletes,
		time.Since(start).Seconds(), run.Expected)
	return nil
}

// verify is `stb verify` of a work simulation's expected state.
func verify(ctx context.Context, pool *pgxpool.Pool, path string) (bool, profile.Verdict, error) {
	exp, ok, err := simwork.ReadExpected(path)
	if err != nil || !ok {
		return ok, profile.Verdict{}, err
	}
	rep, err := simwork.Verify(ctx, pool, exp)
	if err != nil {
		return true, profile.Verdict{}, err
	}
	return true, profile.Verdict{OK: rep.OK(), Summary: rep.Summary(),
		Matched: fmt.Sprintf("%d works of %d clusters match (fence, tombstones, status hashes)", rep.Rows, len(exp.Clusters))}, nil
}
