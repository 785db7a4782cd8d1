package bench

import (
	"context"
	"fmt"
	"math"
	"os"
	"regexp"
	"runtime"
	"slices"
	"strconv"
	"strings"
	"time"

	"github.com/confluentinc/confluent-kafka-go/v2/kafka"
	"github.com/jackc/pgx/v5"
	"go.uber.org/zap"

	"github.com/stbridge/stb/dbsyncers"
	"github.com/stbridge/stb/internal/profiles"
	"github.com/stbridge/stb/pkg/bundle"
	"github.com/stbridge/stb/pkg/db"
	"github.com/stbridge/stb/pkg/sim"
	"github.com/stbridge/stb/pkg/transport"
)

// benchEnv is what the scenarios of one invocation share.
type benchEnv struct {
	cfg Config
	// agent is the simulated agent cfg.Agent names (Run sets it; STB's
	// when zero).
	agent   profiles.Agent
	brokers string
	broker  *benchBroker
	logger  *zap.Logger
	reg     *dbsyncers.Registry
	out     *benchOutput
	// runID makes the topics and consumer groups of this invocation new,
	// even on a data directory that holds earlier runs; rep numbers the
	// repetition (--repeat), which gets topics and groups of its own.
	runID string
	rep   int
	// produceCmd is the command line of the producer processes
	// (produceCommand).
	produceCmd []string
	dbs        []string
	// baselineRate is the messages per second the baseline finished in
	// catch-up, if it ran: what the database absorbs message by message.
	baselineRate float64
	// baselineWindow is the baseline's time extrapolated from a window
	// over the whole catch-up backlog, if it ran.
	baselineWindow time.Duration
}

// topic names a topic of the current repetition.
func (e *benchEnv) topic(suffix string) string { return e.topicOf(suffix, e.rep) }

func (e *benchEnv) topicOf(suffix string, rep int) string {
	return fmt.Sprintf("bench-%s-%s-%d", suffix, e.runID, rep)
}

// group names a fresh consumer group of the current repetition.
func (e *benchEnv) group(name string) string { return fmt.Sprintf("%s-%s-%d", name, e.runID, e.rep) }

// freshDB drops and creates database name and returns its URL.
func (e *benchEnv) freshDB(ctx context.Context, name string) (string, error) {
	url, err := db.Recreate(ctx, e.cfg.DatabaseURL, name)
	if err != nil {
		return "", fmt.Errorf("database %s: %w (is PostgreSQL running? `make postgres` starts it)", name, err)
	}
	if !slices.Contains(e.dbs, name) {
		e.dbs = append(e.dbs, name)
	}
	return url, nil
}

func (e *benchEnv) dropDatabases(ctx context.Context) {
	conn, err := pgx.Connect(ctx, e.cfg.DatabaseURL)
	if err != nil {
		return
	}
	defer conn.Close(ctx)
	for _, name := range e.dbs {
		_, _ = conn.Exec(ctx, "DROP DATABASE IF EXISTS "+pgx.Identifier{name}.Sanitize()+" WITH (FORCE)")
	}
}

// rules are the decoding rules of a bridge with default flags and the
// given --max-bundle-bytes (0: the default).
func (e *benchEnv) rules(maxBundleBytes int64) transport.Rules {
	if maxBundleBytes == 0 {
		maxBundleBytes = transport.DefaultMaxBundleBytes
	}
	return transport.Rules{TypePrefix: transport.DefaultTypePrefix, VerifySource: true,
		MaxBundleBytes: int(maxBundleBytes), Decoder: e.reg}
}

// decoder is how the read+decode ceiling decodes: the bridge's rules and
// the decoding of the agents' wire profile.
type decoder struct {
	rules  transport.Rules
	decode func(*kafka.Message, transport.Rules, time.Time) (*bundle.Bundle, *transport.Reject)
}

// decoder returns the decoding of a bridge with default flags and the
// given --max-bundle-bytes, for the simulated agents' profile: the
// global-hub agent's events go through the global-hub profile, with runs
// of its own.
func (e *benchEnv) decoder(maxBundleBytes int64) decoder {
	d := decoder{rules: e.rules(maxBundleBytes), decode: transport.Decode}
	if dec := e.agent.Bench.Decoder; dec != nil {
		d.decode = dec()
	}
	return d
}

// simTopic points a simulation at topic. STB's agents and the hub-of-hubs
// ones publish to it; the global-hub agents each to a topic of their own,
// gh-status.<hub>, as they do in a real deployment, so their hubs' names
// start with topic: the scenario's topics are then told apart by name.
func (e *benchEnv) simTopic(cfg *sim.Config, topic string) {
	if e.agent.TopicPerHub && !e.cfg.GHSharedTopic {
		cfg.Topic, cfg.HubPrefix = "", topic+"-hub-"
		return
	}
	cfg.Topic = topic
}

// readTopic is what a consumer subscribes to for the simulation simTopic
// pointed at topic: topic, or the pattern of the global-hub agents' topics.
func (e *benchEnv) readTopic(topic string) string {
	if e.agent.TopicPerHub && !e.cfg.GHSharedTopic {
		return "^" + regexp.QuoteMeta(sim.GlobalHubTopicPrefix+topic+"-hub-") + ".*"
	}
	return topic
}

// roundsMargin makes up for MessagesPerRound being an estimate, so that
// a backlog has at least the messages asked for.
const roundsMargin = 1.03

// simConfig is the simulation of the scenarios with many hubs, with
// rounds for about messages messages (at least one round).
func (e *benchEnv) simConfig(topic string, messages float64) sim.Config {
	cfg := sim.Config{Hubs: e.cfg.Hubs, Clusters: e.cfg.Clusters, Policies: e.cfg.Policies, Seed: e.cfg.Seed, Agent: e.cfg.Agent}
	e.simTopic(&cfg, topic)
	perRound := cfg.MessagesPerRound() * float64(cfg.Hubs)
	cfg.Generations = max(1, int(math.Ceil(messages/perRound)))
	return cfg
}

// backlogConfig is simConfig for a backlog of at least messages.
func (e *benchEnv) backlogConfig(topic string, messages float64) sim.Config {
	return e.simConfig(topic, messages*roundsMargin)
}

// produce publishes a simulation from a producer process and waits for it.
func (e *benchEnv) produce(ctx context.Context, label string, cfg sim.Config) (*sim.Expected, time.Duration, error) {
	return e.produceSpec(ctx, label, produceSpec{Brokers: e.brokers, Sim: cfg})
}

// produceSpec runs a producer process doing spec and waits for it.
func (e *benchEnv) produceSpec(ctx context.Context, label string, spec produceSpec) (*sim.Expected, time.Duration, error) {
	p, err := startProducer(e.produceCmd, spec)
	if err != nil {
		return nil, 0, err
	}
	tick := time.NewTicker(time.Second)
	defer tick.Stop()
	for running := true; running; {
		select {
		case <-ctx.Done():
			p.stop()
			return nil, 0, ctx.Err()
		case <-p.done():
			running = false
		case <-tick.C:
			el := time.Since(p.started)
			e.out.progress("%s [%5.1fs] producing: sent %s (%s/s)", label, el.Seconds(), thousands(p.Sent()), perSecond(float64(p.Sent()), el))
		}
	}
	e.out.done()
	took := time.Since(p.started)
	exp, err := p.wait(ctx)
	return exp, took, err
}

// machine describes where the bench runs.
func (e *benchEnv) machine(ctx context.Context) machineInfo {
	m := machineInfo{CPUs: runtime.NumCPU(), GoVersion: runtime.Version(), PoolSize: e.cfg.PoolSize}
	if data, err := os.ReadFile("/proc/meminfo"); err == nil {
		for _, line := range strings.Split(string(data), "\n") {
			if v, ok := strings.CutPrefix(line, "MemTotal:"); ok {
				if f := strings.Fields(v); len(f) == 2 {
					kb, _ := strconv.ParseInt(f[0], 10, 64)
					m.MemTotal = kb << 10
				}
			}
		}
	}
	if conn, err := pgx.Connect(ctx, e.cfg.DatabaseURL); err == nil {
		_ = conn.QueryRow(ctx, "SELECT version()").Scan(&m.Postgres)
		_ = conn.Close(ctx)
	}
	return m
}

// postgresName shortens version() to "PostgreSQL 15.2".
func postgresName(version string) string {
	f := strings.Fields(version)
	if len(f) < 2 {
		return version
	}
	return f[0] + " " + f[1]
}
