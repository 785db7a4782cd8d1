// Package demo runs the whole pipeline on one machine, as `stb demo` and
// `make demo` do: a fresh database on a PostgreSQL server, the embedded
// Kafka broker (pkg/broker), simulated hubs publishing (pkg/sim), the
// bridge (internal/bridge) reading as they publish, a progress line every
// second, and a final verification (pkg/verify). cmd/stb binds its flags
// to a Config; tests run it in-process.
//
// Its shape is a component's (docs/conventions.md: config structs, goroutine owners): a Config with named
// defaults and Validate, and Run, which owns every goroutine it starts and
// waits for them before it returns.
package demo

import (
	"context"
	"errors"
	"fmt"
	"io"
	"maps"
	"math"
	"slices"
	"strings"
	"sync/atomic"
	"time"

	"go.uber.org/zap"

	"github.com/stbridge/stb/internal/humanize"
	"github.com/stbridge/stb/internal/metricview"
	"github.com/stbridge/stb/internal/profiles"
	"github.com/stbridge/stb/pkg/sim"
	"github.com/stbridge/stb/pkg/verify"
)

// Config is a demo run.
type Config struct {
	// Sim is the simulation; Generations 0 derives the rounds from Rate
	// and Duration. An empty Topic is sim.DefaultTopic, or for the
	// global-hub agents a topic per hub.
	Sim sim.Config
	// Duration is how long the hubs publish when Sim.Generations is 0.
	Duration time.Duration
	// Timeout is how long to wait for the database to match after the
	// last message was published.
	Timeout time.Duration
	// DatabaseURL is the PostgreSQL server; the demo creates (and
	// replaces) the database DatabaseName on it.
	DatabaseURL  string
	DatabaseName string
	// HTTPAddr and AdminAddr are the bridge's listeners; empty disables.
	HTTPAddr, AdminAddr string
	// Partitions of the demo topic (1 for the per-hub topics).
	Partitions int
	// Backlog is how long the hubs publish before the bridge starts
	// reading: it then reads a backlog, as after an outage, and shows
	// conflation at work (a hub's bundles still unread replace the one
	// held while the reader is far behind, --linger), before it follows
	// the hubs as they publish. 0 reads from the start.
	Backlog time.Duration
	// NewPublisher opens the simulation's Kafka producer to brokers,
	// on first use.
	NewPublisher func(brokers string) (*sim.KafkaPublisher, error)
	// Out receives the progress lines and the summary.
	Out io.Writer
	// Logger logs the bridge's and the broker's warnings.
	Logger *zap.Logger
}

// Defaults of `stb demo`.
const (
	DefaultDuration     = 20 * time.Second
	DefaultTimeout      = 3 * time.Minute
	DefaultDatabaseName = "stb_demo"
	DefaultHTTPAddr     = "127.0.0.1:8080"
	DefaultPartitions   = 8
	DefaultRate         = 5000
	DefaultBacklog      = 10 * time.Second
)

// Validate checks the configuration; it changes nothing.
func (c Config) Validate() error {
	var errs []error
	if c.Sim.Generations == 0 && c.Sim.Rate <= 0 {
		errs = append(errs, errors.New("--generations 0 needs a --rate to derive the rounds from"))
	}
	if c.Partitions < 1 {
		errs = append(errs, fmt.Errorf("--partitions must be at least 1, got %d", c.Partitions))
	}
	if c.Backlog < 0 {
		errs = append(errs, fmt.Errorf("--backlog must not be negative, got %v", c.Backlog))
	}
	if c.Timeout <= 0 {
		errs = append(errs, fmt.Errorf("--timeout must be positive, got %v", c.Timeout))
	}
	if c.DatabaseName == "" || c.NewPublisher == nil || c.Out == nil || c.Logger == nil {
		errs = append(errs, errors.New("demo: DatabaseName, NewPublisher, Out and Logger are required"))
	}
	return errors.Join(errs...)
}

// Result is what a demo run ended with.
type Result struct {
	// Expected is the simulation's expected state; nil if it never ended.
	Expected *sim.Expected
	// Report is the last verification; nil if none ran.
	Report *verify.Report
}

// OK reports whether the database held the hubs' latest state at the end.
func (r *Result) OK() bool { return r.Report != nil && r.Report.OK() }

// Run runs the demo until the database holds the hubs' latest state with
// every message committed, or until cfg.Timeout after the last message
// was published. A run that ends unverified returns a Result that is not
// OK and no error; errors are for a demo that could not run.
func Run(ctx context.Context, cfg Config) (*Result, error) {
	if err := cfg.Validate(); err != nil {
		return nil, err
	}
	s := cfg.Sim
	if s.Generations == 0 {
		perRound := s.MessagesPerRound() * float64(s.Hubs)
		s.Generations = max(1, int(s.Rate*cfg.Duration.Seconds()/perRound))
	}
	// The topics, made before the bridge subscribes to them by name: a
	// topic made later would be seen only at the next metadata refresh.
	partitions := cfg.Partitions
	topics := []string{s.Topic}
	_, agent, _ := profiles.LookupAgent(s.Agent) // sim.Run refuses an unknown one
	perHub := agent.TopicPerHub
	switch {
	case perHub && s.Topic == "":
		// A topic per hub, of one partition: the agent keys by event type,
		// and a hub's types must be read in the order sent (README, "The
		// global-hub agent's events").
		topics = topics[:0]
		for _, hub := range s.HubNames() {
			topics = append(topics, sim.GlobalHubTopicPrefix+hub)
		}
		partitions = 1
	case s.Topic == "":
		s.Topic = sim.DefaultTopic
		topics = []string{s.Topic}
	}
	say := func(format string, a ...any) { fmt.Fprintf(cfg.Out, "demo: "+format+"\n", a...) }

	// 1–3. A fresh database, the embedded broker, the bridge (reading
	// once hold is closed).
	hold := make(chan struct{})
	held := true
	release := func() {
		if held {
			close(hold)
			held = false
		}
	}
	if cfg.Backlog == 0 {
		release()
	}
	st, err := startStage(ctx, stageConfig{Config: cfg, Topics: topics, Partitions: partitions,
		Console: "units at /debug/units", Hold: hold}, say)
	if err != nil {
		return nil, err
	}
	defer st.close()
	defer release()
	b, pool, brk := st.bridge, st.pool, st.broker

	// 4. The hubs publish while the bridge reads.
	say("%d hubs × %d clusters, %d rounds at %.0f msg/s", s.Hubs, s.Clusters, s.Generations, s.Rate)
	if cfg.Backlog > 0 {
		say("the bridge starts reading after %s (--backlog): it reads a backlog first, as after an outage", cfg.Backlog)
	}
	var sent atomic.Int64
	lat := startLatency(&sent, func() int64 { return b.Stats().Committed() })
	defer lat.stop()
	type simResult struct {
		exp *sim.Expected
		err error
	}
	simDone := make(chan simResult, 1)
	simCtx, stopSim := context.WithCancel(ctx)
	defer func() {
		stopSim()
		if simDone != nil {
			<-simDone
		}
	}()
	pub := &lazyPublisher{open: func() (*sim.KafkaPublisher, error) { return cfg.NewPublisher(brk.Addr()) }}
	go func() {
		exp, err := sim.Run(simCtx, s, pub, func(n int) { sent.Store(int64(n)) })
		simDone <- simResult{exp, err}
	}()

	// 5. Progress every second, then the verification.
	start := time.Now()
	tick := time.NewTicker(time.Second)
	defer tick.Stop()
	res := &Result{}
	var (
		lastWrit  float64
		published int64
		deadline  time.Time
	)
	for {
		select {
		case <-ctx.Done():
			return res, errors.New("interrupted")
		case r := <-simDone:
			simDone = nil
			if r.err != nil {
				return res, fmt.Errorf("simulate: %w", r.err)
			}
			res.Expected = r.exp
			published = int64(r.exp.Messages)
			deadline = time.Now().Add(cfg.Timeout)
			lat.published(published)
			say("all %d messages published after %.1fs; waiting for the database to catch up", r.exp.Messages, time.Since(start).Seconds())
			if held {
				say("the bridge starts reading a backlog of %d messages", published)
				lat.startAt(published)
				release()
			}
			continue
		case <-tick.C:
		}
		if held && time.Since(start) >= cfg.Backlog {
			n := sent.Load()
			say("the bridge starts reading a backlog of %d messages", n)
			lat.startAt(n)
			release()
		}
		m, st := metricview.Gather(b.Gatherer()), b.Stats()
		written := m.Sum("stb_dispatcher_bundles_total", map[string]string{"result": "applied"})
		committed := st.Committed()
		if res.Expected == nil {
			published = sent.Load()
		}
		fmt.Fprintf(cfg.Out, "[%4.0fs] sent %8d | read %8d | conflated %8.0f | written %7.0f (%5.0f/s) | committed lag %7d | buffered %s | dead letters %.0f\n",
			time.Since(start).Seconds(), published, st.Read,
			m.Sum("stb_conflation_bundles_total", map[string]string{"outcome": "conflated"}),
			written, written-lastWrit, max(0, published-committed), humanize.Bytes(st.HeldBytes),
			m.Sum("stb_transport_rejected_total", nil)+m.Sum("stb_dispatcher_dead_letters_total", nil))
		lastWrit = written
		if res.Expected == nil {
			continue
		}
		if res.Report, err = verify.Verify(ctx, pool, res.Expected); err != nil {
			return res, err
		}
		if (res.Report.OK() && committed >= published) || time.Now().After(deadline) {
			break
		}
	}

	lat.stop()
	m := metricview.Gather(b.Gatherer())
	stats := b.Stats()
	written := m.Sum("stb_dispatcher_bundles_total", map[string]string{"result": "applied"})
	say("summary: %d messages read, %d bundles accepted; wrote %.0f of the %d bundles read (%s), %.0f conflated, %.0f stale",
		stats.Read, stats.Accepted, written, stats.Accepted, percent(written, float64(stats.Accepted)),
		m.Sum("stb_conflation_bundles_total", map[string]string{"outcome": "conflated"}),
		m.Sum("stb_conflation_bundles_total", map[string]string{"outcome": "stale"}))
	say("published per type: %s", perType(res.Expected.MessagesByType))
	if line, ok := writtenPerType(m, res.Expected.MessagesByType, written); ok {
		say("written of published, per type: %s", line)
	}
	p50, p99, n := lat.quantiles()
	if n > 0 {
		say("latency of the %d messages published while the bridge read (published → offset committed, on this machine's clock, the 1s commit interval included): p50 %s, p99 %s",
			n, humanize.Seconds(p50), humanize.Seconds(p99))
	}
	if gh := res.Expected.GlobalHub; gh != nil && gh.SkewedRestarts > 0 {
		say("freshness by event time (stb_bundle_freshness_seconds) not shown: %d of %d agent restarts set their node's clock back (--gh-clock-skew), so their events' times are behind the real ones",
			gh.SkewedRestarts, gh.Restarts)
	} else {
		say("freshness of the bundles written (event time → database commit, stb_bundle_freshness_seconds; the backlog's included): p50 %s, p99 %s",
			humanize.Seconds(m.Quantile("stb_bundle_freshness_seconds", 0.5)), humanize.Seconds(m.Quantile("stb_bundle_freshness_seconds", 0.99)))
	}
	say("dead letters %.0f; took %.1fs",
		m.Sum("stb_transport_rejected_total", nil)+m.Sum("stb_dispatcher_dead_letters_total", nil), time.Since(start).Seconds())
	if !res.OK() {
		fmt.Fprintf(cfg.Out, "verified: FAILED — the database does not hold the hubs' latest state: %s\n",
			strings.ReplaceAll(res.Report.Summary(), "\n", "; "))
		return res, nil
	}
	fmt.Fprintf(cfg.Out, "verified: ok — %s match the hubs' latest state\n", verifiedWhat(res.Report, res.Expected))
	return res, nil
}

// verifiedWhat says what the verification compared, in the tables of the
// agent that ran: the global hub's own tables for its agents (STB's
// bundle_versions hold none of theirs), STB's for STB's.
func verifiedWhat(r *verify.Report, exp *sim.Expected) string {
	parts := []string{fmt.Sprintf("%d hubs", r.Hubs)}
	add := func(n int, what string) {
		if n > 0 {
			parts = append(parts, fmt.Sprintf("%d %s", n, what))
		}
	}
	if exp.GlobalHubAgent() {
		add(r.Clusters, "managed clusters (status.managed_clusters)")
		add(r.ComplianceRows, "compliance rows (local_status.compliance)")
		add(r.LocalPolicies, "local policies (local_spec.policies)")
		add(r.Events, "policy events (event.local_policies, event.local_root_policies)")
		add(r.ClusterEvents, "cluster events (event.managed_clusters)")
		add(r.AlertCounts, "alert counts (security.alert_counts)")
		add(r.Migrations, "migrations (stb.cluster_migrations)")
	} else {
		add(r.Versions, "bundle versions (stb.bundle_versions)")
		add(r.Clusters, "managed clusters (stb.managed_clusters)")
		add(r.ComplianceRows, "compliance rows (stb.compliance)")
		add(r.Events, "policy events (stb.policy_events)")
	}
	return strings.Join(parts, ", ")
}

// writtenPerType is "type written/published (share)" for every type
// published, in a stable order; false when the bridge's types are not the
// ones published (the global-hub agents' events become other bundle
// types), where it would mislead.
func writtenPerType(m metricview.View, published map[string]int, written float64) (string, bool) {
	var parts []string
	var sum float64
	for _, k := range slices.Sorted(maps.Keys(published)) {
		w := m.Sum("stb_dispatcher_bundles_total", map[string]string{"type": k, "result": "applied"})
		sum += w
		parts = append(parts, fmt.Sprintf("%s %.0f/%d (%s)", k, w, published[k], percent(w, float64(published[k]))))
	}
	return strings.Join(parts, ", "), sum == written && written > 0
}

// percent is part of whole as a percentage.
func percent(part, whole float64) string {
	return fmt.Sprintf("%.1f %%", 100*part/math.Max(whole, 1))
}

// lazyPublisher opens the Kafka producer on first use and closes it after
// the final flush.
type lazyPublisher struct {
	open func() (*sim.KafkaPublisher, error)
	p    *sim.KafkaPublisher
	err  error
}

func (l *lazyPublisher) publisher() (*sim.KafkaPublisher, error) {
	if l.p == nil && l.err == nil {
		l.p, l.err = l.open()
	}
	return l.p, l.err
}

func (l *lazyPublisher) Publish(ctx context.Context, m sim.Message) error {
	p, err := l.publisher()
	if err != nil {
		return err
	}
	return p.Publish(ctx, m)
}

// PublishGH sends a global-hub agent's message with all it carries.
func (l *lazyPublisher) PublishGH(ctx context.Context, m sim.GHMessage) error {
	p, err := l.publisher()
	if err != nil {
		return err
	}
	return p.PublishGH(ctx, m)
}

func (l *lazyPublisher) Flush(ctx context.Context) error {
	if l.p == nil {
		return l.err
	}
	defer l.p.Close()
	return l.p.Flush(ctx)
}

// perType formats per-type counts in a stable order.
func perType(m map[string]int) string {
	parts := make([]string, 0, len(m))
	for _, k := range slices.Sorted(maps.Keys(m)) {
		parts = append(parts, fmt.Sprintf("%s %d", k, m[k]))
	}
	return strings.Join(parts, ", ")
}
