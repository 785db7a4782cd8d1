package demo

import (
	"context"
	"errors"
	"time"

	"github.com/jackc/pgx/v5/pgxpool"

	"github.com/stbridge/stb/internal/profiles/profile"
)

// RunAgent runs the demo of an agent with a demo of its own (a status
// family's: profile.Commands.Demo) on the stage cfg describes: cfg's
// database, listeners, partitions and timeout, cfg.Sim the shared flags
// (NewPublisher, Duration and the rate are the hubs' demo's only). ok
// reports whether the database ended in the agents' final state.
func RunAgent(ctx context.Context, cfg Config, demo func(context.Context, profile.DemoRun) (bool, error)) (ok bool, err error) {
	if cfg.Partitions < 1 || cfg.Timeout <= 0 || cfg.DatabaseName == "" || cfg.Out == nil || cfg.Logger == nil {
		return false, errors.New("demo: Partitions, Timeout, DatabaseName, Out and Logger are required")
	}
	run := profile.DemoRun{Sim: cfg.Sim, Out: cfg.Out, Logger: cfg.Logger}
	say := run.Say
	run.Start = func(ctx context.Context, topics []string, partitions int, profiles []string, console string) (profile.Stage, error) {
		if partitions == 0 {
			partitions = cfg.Partitions
		}
		st, err := startStage(ctx, stageConfig{Config: cfg, Topics: topics, Partitions: partitions,
			Profiles: profiles, Console: console}, say)
		if err != nil {
			return nil, err
		}
		return agentStage{st: st, cfg: cfg}, nil
	}
	return demo(ctx, run)
}

// agentStage is a stage as a profile's demo sees it.
type agentStage struct {
	st  *stage
	cfg Config
}

func (a agentStage) Brokers() string     { return a.st.broker.Addr() }
func (a agentStage) Pool() *pgxpool.Pool { return a.st.pool }
func (a agentStage) Close()              { a.st.close() }

func (a agentStage) Follow(ctx context.Context, publish func(ctx context.Context, sent func(int)) (int, error),
	published func(after time.Duration), verify func(ctx context.Context) (bool, error)) (bool, error) {
	_, ok, err := follow(ctx, a.st, a.cfg.Out, a.cfg.Timeout,
		func(ctx context.Context, sent func(int)) (struct{}, int, error) {
			n, err := publish(ctx, sent)
			return struct{}{}, n, err
		},
		func(_ struct{}, after time.Duration) { published(after) },
		func(ctx context.Context, _ struct{}) (bool, error) { return verify(ctx) })
	return ok, err
}
