package work

import (
	"context"
	"fmt"
	"strings"
	"time"

	"github.com/confluentinc/confluent-kafka-go/v2/kafka"

	"github.com/stbridge/stb/internal/profiles/globalhub"
	"github.com/stbridge/stb/internal/profiles/profile"
	"github.com/stbridge/stb/internal/profiles/stb"
	simwork "github.com/stbridge/stb/pkg/sim/work"
	"github.com/stbridge/stb/pkg/transport"
)

// Demo is `stb demo --agent work`: simulated work agents (pkg/sim/work)
// instead of hubs, a bridge with the work profile on, and the family's
// verification, until the table holds the agents' final state with every
// message committed, or until the demo's timeout after the last message
// was published. ok reports whether the database held the fence's final
// state.
func Demo(ctx context.Context, run profile.DemoRun, s simwork.Config) (ok bool, _ error) {
	if s.Topic == "" {
		s.Topic = simwork.DefaultTopic
	}
	// 1–3. A fresh database, the embedded broker, the bridge with the
	// work profile on.
	st, err := run.Start(ctx, []string{s.Topic}, 0, []string{stb.Name, globalhub.Name, Name}, "the family's rows at /work")
	if err != nil {
		return false, err
	}
	defer st.Close()

	// 4. The agents publish while the bridge reads.
	pub, err := transport.NewPublisher(transport.PublisherConfig{Brokers: st.Brokers()}, run.Logger.Named("simulate"))
	if err != nil {
		return false, err
	}
	defer pub.Close()
	run.Say("%d clusters × %d works, %d rounds", s.Clusters, s.Resources, s.Rounds)
	start := time.Now()
	var (
		exp *simwork.Expected
		rep *simwork.Report
	)
	ok, err = st.Follow(ctx,
		func(ctx context.Context, sent func(int)) (int, error) {
			e, err := simwork.Run(ctx, s, func(ctx context.Context, m *kafka.Message) error { return pub.PublishMessage(ctx, m) }, sent)
			if err == nil {
				err = pub.Flush(ctx)
			}
			if err != nil {
				return 0, err
			}
			exp = e
			return e.Messages, nil
		},
		func(after time.Duration) {
			run.Say("all %d messages published after %.1fs (%d restarts, %d duplicates, %d late copies, %d deletes); waiting for the database",
				exp.Messages, after.Seconds(), exp.Restarts, exp.Duplicates, exp.LateCopies, exp.Deletes)
		},
		func(ctx context.Context) (bool, error) {
			var err error
			rep, err = simwork.Verify(ctx, st.Pool(), exp)
			return err == nil && rep.OK(), err
		})
	if err != nil {
		return false, err
	}
	if !ok {
		fmt.Fprintf(run.Out, "verified: FAILED — %s\n", strings.ReplaceAll(strings.TrimSpace(rep.Summary()), "\n", "; "))
		return false, nil
	}
	fmt.Fprintf(run.Out, "verified: ok — %d works of %d clusters hold their greatest (resourceversion, sequenceid), tombstones included; took %.1fs\n",
		rep.Rows, len(exp.Clusters), time.Since(start).Seconds())
	return true, nil
}
