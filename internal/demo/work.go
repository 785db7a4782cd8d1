package demo

import (
	"context"
	"errors"
	"fmt"
	"io"
	"strings"
	"time"

	"github.com/confluentinc/confluent-kafka-go/v2/kafka"
	"go.uber.org/zap"

	wf "github.com/stbridge/stb/dbsyncers/work"
	"github.com/stbridge/stb/internal/profiles"
	simwork "github.com/stbridge/stb/pkg/sim/work"
	"github.com/stbridge/stb/pkg/transport"
)

// WorkConfig is a demo of the ManifestWork status family (`stb demo
// --agent work`): simulated work agents (pkg/sim/work) instead of hubs,
// the bridge with the work profile on, and the family's verification.
type WorkConfig struct {
	Sim simwork.Config
	// Timeout, DatabaseURL, DatabaseName, HTTPAddr, AdminAddr,
	// Partitions, Out and Logger are as in Config.
	Timeout                   time.Duration
	DatabaseURL, DatabaseName string
	HTTPAddr, AdminAddr       string
	Partitions                int
	Out                       io.Writer
	Logger                    *zap.Logger
}

// WorkResult is what a work demo ended with.
type WorkResult struct {
	Expected *simwork.Expected
	Report   *simwork.Report
}

// OK reports whether the database held the fence's final state.
func (r *WorkResult) OK() bool { return r.Report != nil && r.Report.OK() }

// RunWork runs the work demo as Run runs the hubs' one: until the table
// holds the agents' final state with every message committed, or until
// cfg.Timeout after the last message was published.
func RunWork(ctx context.Context, cfg WorkConfig) (*WorkResult, error) {
	if cfg.Partitions < 1 || cfg.Timeout <= 0 || cfg.DatabaseName == "" || cfg.Out == nil || cfg.Logger == nil {
		return nil, errors.New("demo: Partitions, Timeout, DatabaseName, Out and Logger are required")
	}
	s := cfg.Sim
	if s.Topic == "" {
		s.Topic = simwork.DefaultTopic
	}
	say := func(format string, a ...any) { fmt.Fprintf(cfg.Out, "demo: "+format+"\n", a...) }

	// 1–3. A fresh database, the embedded broker, the bridge with the
	// work profile on.
	st, err := startStage(ctx, stageConfig{DatabaseURL: cfg.DatabaseURL, DatabaseName: cfg.DatabaseName,
		HTTPAddr: cfg.HTTPAddr, AdminAddr: cfg.AdminAddr, Topics: []string{s.Topic}, Partitions: cfg.Partitions,
		Profiles: append(profiles.Default(), wf.Name), Console: "the family's rows at /work", Logger: cfg.Logger}, say)
	if err != nil {
		return nil, err
	}
	defer st.close()
	pool, brk := st.pool, st.broker

	// 4. The agents publish while the bridge reads.
	pub, err := transport.NewPublisher(transport.PublisherConfig{Brokers: brk.Addr()}, cfg.Logger.Named("simulate"))
	if err != nil {
		return nil, err
	}
	defer pub.Close()
	say("%d clusters × %d works, %d rounds", s.Clusters, s.Resources, s.Rounds)
	start := time.Now()
	res := &WorkResult{}
	res.Expected, _, err = follow(ctx, st, cfg.Out, cfg.Timeout,
		func(ctx context.Context, sent func(int)) (*simwork.Expected, int, error) {
			exp, err := simwork.Run(ctx, s, func(ctx context.Context, m *kafka.Message) error { return pub.PublishMessage(ctx, m) }, sent)
			if err == nil {
				err = pub.Flush(ctx)
			}
			if err != nil {
				return nil, 0, err
			}
			return exp, exp.Messages, nil
		},
		func(e *simwork.Expected, after time.Duration) {
			say("all %d messages published after %.1fs (%d restarts, %d duplicates, %d late copies, %d deletes); waiting for the database",
				e.Messages, after.Seconds(), e.Restarts, e.Duplicates, e.LateCopies, e.Deletes)
		},
		func(ctx context.Context, e *simwork.Expected) (bool, error) {
			var err error
			res.Report, err = simwork.Verify(ctx, pool, e)
			return err == nil && res.Report.OK(), err
		})
	if err != nil {
		return res, err
	}
	if !res.OK() {
		fmt.Fprintf(cfg.Out, "verified: FAILED — %s\n", strings.ReplaceAll(strings.TrimSpace(res.Report.Summary()), "\n", "; "))
		return res, nil
	}
	fmt.Fprintf(cfg.Out, "verified: ok — %d works of %d clusters hold their greatest (resourceversion, sequenceid), tombstones included; took %.1fs\n",
		res.Report.Rows, len(res.Expected.Clusters), time.Since(start).Seconds())
	return res, nil
}
