package main

import (
	"context"
	"fmt"
	"os"
	"time"

	"go.uber.org/zap"

	"github.com/stbridge/stb/pkg/db"
	"github.com/stbridge/stb/pkg/sim"
	cnesim "github.com/stbridge/stb/pkg/sim/cne"
)

// simulateCNE is `stb simulate --agent cne`: --hubs nodes publish Cloud
// Native Events for --generations rounds.
func simulateCNE(ctx context.Context, s simFlags, logger *zap.Logger) error {
	cfg := cnesimConfig(s)
	pub, err := cnesim.NewKafkaPublisher(sim.PublisherConfig{Brokers: s.brokers}, logger)
	if err != nil {
		return err
	}
	defer pub.Close()
	start := time.Now()
	last := start
	exp, err := cnesim.Run(ctx, cfg, pub, func(sent int) {
		if time.Since(last) >= time.Second {
			last = time.Now()
			fmt.Fprintf(os.Stderr, "\rsimulate: %d messages sent", sent)
		}
	})
	if err != nil {
		return err
	}
	if err := exp.WriteFile(s.expected); err != nil {
		return err
	}
	fmt.Printf("simulate: cne: %d nodes, %d messages, %d rows expected; %d restarts, %d clock steps back, %d duplicates, %d late copies, "+
		"%d values behind their key's latest, %d bad events in %.1fs; expected state in %s\n",
		len(exp.Nodes), exp.Messages, len(exp.Rows), exp.Restarts, exp.ClockSteps, exp.Duplicates, exp.LateCopies,
		exp.Behind, exp.DeadLetters, time.Since(start).Seconds(), s.expected)
	return nil
}

// cnesimConfig maps simulate's flags onto the cne simulation.
func cnesimConfig(s simFlags) cnesim.Config {
	return cnesim.Config{
		Nodes: s.cfg.Hubs, Rounds: s.cfg.Generations, Seed: s.cfg.Seed, Topic: s.cfg.Topic,
		Restart: s.cfg.RestartProbability,
	}
}

// verifyCNE is `stb verify` of a cne simulation's expected state.
func verifyCNE(ctx context.Context, url string, exp *cnesim.Expected) error {
	pool, err := db.Connect(ctx, url, 2)
	if err != nil {
		return err
	}
	defer pool.Close()
	rep, err := cnesim.Verify(ctx, pool, exp)
	if err != nil {
		return err
	}
	return verified(rep.OK(), rep.Summary(), fmt.Sprintf("cne: %d nodes, %d rows, %d dead letters match", rep.Nodes, rep.Rows, rep.DeadLetters))
}
