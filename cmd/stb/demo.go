package main

import (
	"context"
	"errors"
	"fmt"
	"math"
	"os"
	"sort"
	"strings"
	"sync/atomic"
	"time"

	"go.uber.org/zap"

	"github.com/stbridge/stb/cmd/stb/internal/humanize"
	"github.com/stbridge/stb/cmd/stb/internal/metricview"
	"github.com/stbridge/stb/internal/bridge"
	"github.com/stbridge/stb/pkg/broker"
	"github.com/stbridge/stb/pkg/db"
	"github.com/stbridge/stb/pkg/sim"
	"github.com/stbridge/stb/pkg/verify"
)

func demoCmd(ctx context.Context, args []string) error {
	var s simFlags
	fs := newFlagSet("demo", "Run the whole pipeline on this machine: an embedded Kafka broker, a fresh database on the local\nPostgreSQL, simulated hubs publishing, the bridge, a progress line every second, and a final\nverification. Exit status 0 only when the database holds exactly the hubs' latest state.")
	s.bind(fs)
	duration := fs.Duration("duration", 20*time.Second, "how long the hubs publish (with --rate; sets the number of rounds when --generations is 0)")
	timeout := fs.Duration("timeout", 3*time.Minute, "how long to wait for the database to match after publishing")
	baseURL := fs.String("database-url", db.DefaultURL, "PostgreSQL server; the demo creates (and replaces) the database stb_demo on it")
	httpAddr := fs.String("http-addr", "127.0.0.1:8080", "address of the bridge's /metrics, /healthz and /readyz during the demo; empty disables")
	adminAddr := fs.String("admin-addr", bridge.DefaultAdminAddr, "address of the bridge's console (status page, /debug/units) during the demo; empty disables")
	partitions := fs.Int("partitions", 8, "partitions of the demo topic")
	if err := fs.Set("rate", "5000"); err != nil {
		return err
	}
	fs.Lookup("rate").DefValue = "5000"
	if err := fs.Set("generations", "0"); err != nil {
		return err
	}
	fs.Lookup("generations").DefValue = "0"
	if err := parseFlags(fs, args); err != nil {
		return err
	}
	if s.cfg.Generations == 0 {
		if s.cfg.Rate <= 0 {
			return errors.New("--generations 0 needs a --rate to derive the rounds from")
		}
		perRound := s.cfg.MessagesPerRound() * float64(s.cfg.Hubs)
		s.cfg.Generations = max(1, int(s.cfg.Rate*duration.Seconds()/perRound))
	}
	// The topics, made before the bridge subscribes to them by name: a
	// topic made later would be seen only at the next metadata refresh.
	topics := []string{s.cfg.Topic}
	switch {
	case s.cfg.Agent == sim.AgentGlobalHub && s.cfg.Topic == "":
		// A topic per hub, of one partition: the agent keys by event type,
		// and a hub's types must be read in the order sent (README, "The
		// global-hub agent's events").
		topics = topics[:0]
		for _, hub := range s.cfg.HubNames() {
			topics = append(topics, sim.GlobalHubTopicPrefix+hub)
		}
		*partitions = 1
	case s.cfg.Topic == "":
		s.cfg.Topic = sim.DefaultTopic
		topics = []string{s.cfg.Topic}
	}
	logger, err := newLogger("warn", "console")
	if err != nil {
		return err
	}
	defer func() { _ = logger.Sync() }()
	say := func(format string, a ...any) { fmt.Printf("demo: "+format+"\n", a...) }

	// 1. A fresh database.
	demoURL, err := db.Recreate(ctx, *baseURL, "stb_demo")
	if err != nil {
		return fmt.Errorf("database: %w (is PostgreSQL running? `make demo` starts it)", err)
	}
	say("database %s", db.RedactURL(demoURL))

	// 2. The embedded broker, its log in a temporary directory.
	dir, err := os.MkdirTemp("", "stb-demo-kafka-")
	if err != nil {
		return err
	}
	defer os.RemoveAll(dir)
	brk, err := broker.Start(broker.Config{DataDir: dir, Topics: topics, Partitions: int32(*partitions)}, logger)
	if err != nil {
		return err
	}
	defer brk.Close()
	what := fmt.Sprintf("topic %s", topics[0])
	if len(topics) > 1 {
		what = fmt.Sprintf("%d topics", len(topics))
	}
	say("kafka broker %s (kfake, %s of %d partitions, data in %s)", brk.Addr(), what, *partitions, dir)

	// 3. The bridge.
	cfg := bridge.DefaultConfig()
	cfg.Reader.Brokers, cfg.Reader.Topics, cfg.DatabaseURL = brk.Addr(), topics, demoURL
	cfg.HTTPAddr, cfg.AdminAddr, cfg.Committer.Interval, cfg.Reader.GroupID = *httpAddr, *adminAddr, time.Second, "stb-demo"
	b, err := bridge.New(ctx, cfg, bridge.Deps{Logger: logger})
	if err != nil {
		return err
	}
	defer b.Close()
	pool, err := db.Connect(ctx, demoURL, 2)
	if err != nil {
		return err
	}
	defer pool.Close()
	bctx, stopBridge := context.WithCancel(context.Background())
	bridgeDone := make(chan error, 1)
	go func() { bridgeDone <- b.Run(bctx) }()
	defer func() {
		stopBridge()
		<-bridgeDone
	}()
	if a := b.AdminAddr(); a != "" {
		say("console http://%s/  (units at /debug/units)", a)
	}
	if *httpAddr != "" {
		say("metrics http://%s/metrics", b.HTTPAddr())
	}

	// 4. The hubs publish while the bridge reads.
	say("%d hubs × %d clusters, %d rounds at %.0f msg/s", s.cfg.Hubs, s.cfg.Clusters, s.cfg.Generations, s.cfg.Rate)
	s.brokers = brk.Addr()
	var sent atomic.Int64
	type simResult struct {
		exp *sim.Expected
		err error
	}
	simDone := make(chan simResult, 1)
	go func() {
		exp, err := sim.Run(ctx, s.cfg, &lazyPublisher{s: s, logger: logger}, func(n int) { sent.Store(int64(n)) })
		simDone <- simResult{exp, err}
	}()

	start := time.Now()
	tick := time.NewTicker(time.Second)
	defer tick.Stop()
	var (
		exp        *sim.Expected
		rep        *verify.Report
		lastWrit   float64
		published  int64
		deadline   time.Time
		simRunning = true
	)
	for {
		select {
		case <-ctx.Done():
			return errors.New("interrupted")
		case r := <-simDone:
			if r.err != nil {
				return fmt.Errorf("simulate: %w", r.err)
			}
			exp, simRunning = r.exp, false
			published = int64(exp.Messages)
			deadline = time.Now().Add(*timeout)
			say("all %d messages published after %.1fs; waiting for the database to catch up", exp.Messages, time.Since(start).Seconds())
			continue
		case <-tick.C:
		}
		m, st := metricview.Gather(b.Gatherer()), b.Stats()
		written := m.Sum("stb_dispatcher_bundles_total", map[string]string{"result": "applied"})
		committed := st.Committed()
		if simRunning {
			published = sent.Load()
		}
		fmt.Printf("[%4.0fs] sent %8d | read %8d | conflated %8.0f | written %7.0f (%5.0f/s) | committed lag %7d | buffered %s | dead letters %.0f\n",
			time.Since(start).Seconds(), published, st.Read,
			m.Sum("stb_conflation_bundles_total", map[string]string{"outcome": "conflated"}),
			written, written-lastWrit, max(0, published-committed), humanize.Bytes(st.HeldBytes),
			m.Sum("stb_transport_rejected_total", nil)+m.Sum("stb_dispatcher_dead_letters_total", nil))
		lastWrit = written
		if simRunning {
			continue
		}
		rep, err = verify.Verify(ctx, pool, exp)
		if err != nil {
			return err
		}
		if rep.OK() && committed >= published {
			break
		}
		if time.Now().After(deadline) {
			break
		}
	}

	m := metricview.Gather(b.Gatherer())
	read := float64(b.Stats().Read)
	written := m.Sum("stb_dispatcher_bundles_total", map[string]string{"result": "applied"})
	say("summary: %d messages read, %.0f bundles written (conflation ratio %.1f:1), %.0f conflated, %.0f stale",
		int64(read), written, read/math.Max(written, 1),
		m.Sum("stb_conflation_bundles_total", map[string]string{"outcome": "conflated"}),
		m.Sum("stb_conflation_bundles_total", map[string]string{"outcome": "stale"}))
	if exp != nil {
		say("published per type: %s", perType(exp.MessagesByType))
	}
	say("freshness (event time → commit): p50 %s, p99 %s; dead letters %.0f; took %.1fs",
		humanize.Seconds(m.Quantile("stb_bundle_freshness_seconds", 0.5)), humanize.Seconds(m.Quantile("stb_bundle_freshness_seconds", 0.99)),
		m.Sum("stb_transport_rejected_total", nil)+m.Sum("stb_dispatcher_dead_letters_total", nil), time.Since(start).Seconds())
	if rep == nil || !rep.OK() {
		summary := "no verification ran"
		if rep != nil {
			summary = strings.ReplaceAll(rep.Summary(), "\n", "; ")
		}
		fmt.Printf("verified: FAILED — the database does not hold the hubs' latest state: %s\n", summary)
		return exitError{code: 1}
	}
	fmt.Printf("verified: ok — %d hubs, %d bundle versions and %d managed clusters match the hubs' latest state\n",
		rep.Hubs, rep.Versions, rep.Clusters)
	return nil
}

// lazyPublisher opens the Kafka producer on first use and closes it after
// the final flush.
type lazyPublisher struct {
	s      simFlags
	logger *zap.Logger
	p      *sim.KafkaPublisher
	err    error
}

func (l *lazyPublisher) Publish(ctx context.Context, m sim.Message) error {
	if l.p == nil && l.err == nil {
		pub, err := newKafkaPublisher(l.s, l.logger)
		l.p, l.err = pub, err
	}
	if l.err != nil {
		return l.err
	}
	return l.p.Publish(ctx, m)
}

// PublishGH sends a global-hub agent's message with all it carries.
func (l *lazyPublisher) PublishGH(ctx context.Context, m sim.GHMessage) error {
	if l.p == nil && l.err == nil {
		pub, err := newKafkaPublisher(l.s, l.logger)
		l.p, l.err = pub, err
	}
	if l.err != nil {
		return l.err
	}
	return l.p.PublishGH(ctx, m)
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
	keys := make([]string, 0, len(m))
	for k := range m {
		keys = append(keys, k)
	}
	sort.Strings(keys)
	parts := make([]string, len(keys))
	for i, k := range keys {
		parts[i] = fmt.Sprintf("%s %d", k, m[k])
	}
	return strings.Join(parts, ", ")
}
