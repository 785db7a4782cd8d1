package main

import (
	"context"
	"fmt"
	"os"
	"time"

	"github.com/confluentinc/confluent-kafka-go/v2/kafka"
	"go.uber.org/zap"

	"github.com/stbridge/stb/internal/demo"
	simwork "github.com/stbridge/stb/pkg/sim/work"
	"github.com/stbridge/stb/pkg/transport"
)

// workFlags are simulate's flags of --agent work beside the shared ones
// (--hubs is the clusters, --clusters the works per cluster,
// --generations the rounds).
type workFlags struct {
	sources                       int
	statusBytes                   int
	duplicate, late, deleteChance float64
	structured                    bool
}

func (w *workFlags) bind(fs interface {
	IntVar(*int, string, int, string)
	Float64Var(*float64, string, float64, string)
	BoolVar(*bool, string, bool, string)
}) {
	fs.IntVar(&w.sources, "work-sources", 2, "with --agent work: sources the works come from (--hubs is the clusters, --clusters the works per cluster, --generations the rounds)")
	fs.IntVar(&w.statusBytes, "work-status-bytes", 2000, "with --agent work: rough size of a status in bytes (Maestro measures ~20 KB)")
	fs.Float64Var(&w.duplicate, "work-duplicate-probability", 0, "with --agent work: chance a status is sent twice (0 = default 0.05, negative = never)")
	fs.Float64Var(&w.late, "work-late-probability", 0, "with --agent work: chance an older status of a work is sent again after a newer (0 = default 0.05, negative = never)")
	fs.Float64Var(&w.deleteChance, "work-delete-probability", 0, "with --agent work: chance per work and round that it is deleted and a new one created (0 = default 0.03, negative = never)")
	fs.BoolVar(&w.structured, "work-structured", true, "with --agent work: every other cluster sends in structured mode")
}

// workConfig is the work simulation s's flags describe.
func workConfig(s simFlags) simwork.Config {
	return simwork.Config{
		Clusters: s.cfg.Hubs, Resources: s.cfg.Clusters, Sources: s.work.sources, Rounds: s.cfg.Generations,
		Seed: uint64(s.cfg.Seed), Topic: s.cfg.Topic, StatusBytes: s.work.statusBytes,
		RestartProbability: s.cfg.RestartProbability, DuplicateProbability: s.work.duplicate,
		LateProbability: s.work.late, DeleteProbability: s.work.deleteChance, Structured: s.work.structured,
	}
}

// publishWork runs the work simulation against Kafka and waits until every
// message is delivered.
func publishWork(ctx context.Context, s simFlags, progress func(int)) (*simwork.Expected, error) {
	logger, err := newLogger("warn", "console")
	if err != nil {
		return nil, err
	}
	pub, err := transport.NewPublisher(transport.PublisherConfig{Brokers: s.brokers}, logger)
	if err != nil {
		return nil, err
	}
	defer pub.Close()
	exp, err := simwork.Run(ctx, workConfig(s), func(ctx context.Context, msg *kafka.Message) error {
		return pub.PublishMessage(ctx, msg)
	}, progress)
	if err != nil {
		return nil, err
	}
	if err := pub.Flush(ctx); err != nil {
		return nil, err
	}
	return exp, nil
}

// simulateWork is `stb simulate --agent work`.
func simulateWork(ctx context.Context, s simFlags) error {
	start := time.Now()
	last := time.Now()
	exp, err := publishWork(ctx, s, func(sent int) {
		if time.Since(last) >= time.Second {
			last = time.Now()
			fmt.Fprintf(os.Stderr, "\rsimulate: %d messages sent", sent)
		}
	})
	fmt.Fprintln(os.Stderr)
	if err != nil {
		return err
	}
	if err := exp.WriteFile(s.expected); err != nil {
		return err
	}
	fmt.Printf("simulate: work agents: %d clusters, %d works, %d messages (%d structured) on %s, %d restarts, %d duplicates, %d late copies, %d deletes in %.1fs; expected state in %s\n",
		len(exp.Clusters), len(exp.Rows), exp.Messages, exp.Structured, exp.Topic, exp.Restarts, exp.Duplicates, exp.LateCopies, exp.Deletes,
		time.Since(start).Seconds(), s.expected)
	return nil
}

// verifyWork is `stb verify` of a work simulation's expected state.
func verifyWork(ctx context.Context, db simwork.Querier, exp *simwork.Expected) error {
	rep, err := simwork.Verify(ctx, db, exp)
	if err != nil {
		return err
	}
	return verified(rep.OK(), rep.Summary(), fmt.Sprintf("%d works of %d clusters match (fence, tombstones, status hashes)", rep.Rows, len(exp.Clusters)))
}

// demoWork is `stb demo --agent work`: cfg's database, listeners and
// partitions, s's work simulation.
func demoWork(ctx context.Context, s simFlags, cfg demo.Config, logger *zap.Logger) error {
	res, err := demo.RunWork(ctx, demo.WorkConfig{
		Sim: workConfig(s), Timeout: cfg.Timeout, DatabaseURL: cfg.DatabaseURL, DatabaseName: cfg.DatabaseName,
		HTTPAddr: cfg.HTTPAddr, AdminAddr: cfg.AdminAddr, Partitions: cfg.Partitions, Out: cfg.Out, Logger: logger,
	})
	if err != nil {
		return err
	}
	if !res.OK() {
		return exitError{code: 1}
	}
	return nil
}
