package bench

import (
	"context"
	"errors"
	"fmt"
	"os"
	"runtime/pprof"
	"slices"
	"strconv"
	"strings"
	"time"

	"github.com/stbridge/stb/dbsyncers"
	"github.com/stbridge/stb/dispatcher"
	"github.com/stbridge/stb/internal/bridge"
	"github.com/stbridge/stb/internal/profiles"
	"github.com/stbridge/stb/pkg/db"
	"github.com/stbridge/stb/pkg/sim"
	"go.uber.org/zap"
)

// Config is what `stb bench` takes from flags and environment. Start from
// DefaultConfig.
type Config struct {
	// Scenarios to run, in their fixed order; empty or "all" runs all.
	Scenarios []string
	Hubs      int
	Messages  int
	Clusters  int
	Policies  int
	// Agent is the simulated agents' kind (sim.Config.Agent): stb, hoh or
	// globalhub. The global-hub agents publish each to a topic of its own
	// (gh-status.<hub>, one partition: their event types of one hub are
	// ordered only within a partition), in the catch-up scenario only.
	Agent string
	// GHSharedTopic makes the global-hub agents publish to one shared
	// topic of Partitions partitions (a Kafka of one's own: gh-status),
	// keyed by event type, instead of a topic of one partition per hub.
	GHSharedTopic bool
	Duration      time.Duration
	BaselineLimit time.Duration
	Timeout       time.Duration
	Out           string
	DatabaseURL   string
	DataDir       string
	PoolSize      int
	// BatchWait is the bridge variants' --batch-wait.
	BatchWait time.Duration
	// Linger is the bridge variants' --linger.
	Linger         time.Duration
	Partitions     int
	Seed           int64
	SteadyRate     float64
	OverloadFactor float64
	OverloadRate   float64
	CPUProfile     string
	KeepDatabases  bool
	Repeat         int
	// MaxBufferedBytes is the bridges' --max-buffered-bytes, their memory
	// budget; peak RSS is reported against it.
	MaxBufferedBytes int64
	// OverloadProducers is the number of producer processes of the
	// overload scenario, each publishing its share of the hubs and rate.
	OverloadProducers int
	// PoisonMessages is the number of rejects in the poison-flood
	// backlog, mixed 1:1 with as many valid messages.
	PoisonMessages int
	// Command is the command line, as the report records it.
	Command string
}

// DefaultConfig returns the configuration of `stb bench` without flags.
func DefaultConfig() Config {
	return Config{
		Hubs:           1000,
		Messages:       1_000_000,
		Clusters:       10,
		Duration:       60 * time.Second,
		BaselineLimit:  60 * time.Second,
		Timeout:        30 * time.Minute,
		Out:            "bench-results.json",
		DatabaseURL:    db.DefaultURL,
		PoolSize:       bridge.DefaultPoolSize(),
		BatchWait:      dispatcher.DefaultBatchWait,
		Linger:         bridge.DefaultLinger,
		Partitions:     8,
		Seed:           1,
		SteadyRate:     1000,
		OverloadFactor: 10,
		Repeat:         1,
		PoisonMessages: 100_000,

		OverloadProducers: 2,

		MaxBufferedBytes: bridge.DefaultMaxBufferedBytes,
	}
}

// benchScenario is one named scenario: the topics it needs on the broker
// and how it runs.
type benchScenario struct {
	name   string
	topics []string // suffixes, see benchEnv.topic
	run    func(ctx context.Context, e *benchEnv, res *scenarioResult) error
}

func benchScenarios() []benchScenario {
	return []benchScenario{
		{"catch-up", []string{"catchup", "catchup-sample"}, benchCatchUp},
		{"catch-up-hubs", []string{"catchup-hubs"}, benchCatchUpManyHubs},
		{"large-hub", []string{"largehub", "largehub-rotation-stb", "largehub-rotation-baseline"}, benchLargeHub},
		{"overload", []string{"overload-calibrate", "overload-stb", "overload-baseline"}, benchOverload},
		{"steady", []string{"steady-stb", "steady-baseline"}, benchSteady},
		{"poison-flood", []string{"poison", "poison-mixed", "poison-clean"}, benchPoisonFlood},
		{scaleScenario, []string{"scale"}, benchScale},
	}
}

// scaleScenario is the agent's own published scale test
// (profile.Bench.Scale); only named, never in "all".
const scaleScenario = "scale"

// ScenarioNames lists the scenarios in the order they run.
func ScenarioNames() []string {
	var names []string
	for _, s := range benchScenarios() {
		names = append(names, s.name)
	}
	return names
}

// selected returns the scenarios asked for, in their fixed order.
func (c *Config) selected() ([]benchScenario, error) {
	want := map[string]bool{}
	for _, n := range c.Scenarios {
		if n == "all" {
			for _, s := range ScenarioNames() {
				want[s] = s != scaleScenario
			}
			continue
		}
		if !slices.Contains(ScenarioNames(), n) {
			return nil, fmt.Errorf("--scenario: unknown scenario %q (want %s or all)", n, strings.Join(ScenarioNames(), ", "))
		}
		want[n] = true
	}
	if len(want) == 0 {
		for _, s := range ScenarioNames() {
			want[s] = s != scaleScenario
		}
	}
	var out []benchScenario
	for _, s := range benchScenarios() {
		if want[s.name] {
			out = append(out, s)
		}
	}
	return out, nil
}

// agent returns the simulated agent c.Agent names (STB's when empty).
func (c Config) agent() (profiles.Agent, error) {
	name := c.Agent
	if name == "" {
		name = sim.AgentSTB
	}
	_, a, err := profiles.LookupAgent(name)
	return a, err
}

// Validate checks the configuration; it changes nothing.
func (c Config) Validate() error {
	var errs []error
	if c.Hubs < 1 || c.Messages < 1 || c.Clusters < 0 {
		errs = append(errs, errors.New("--hubs and --messages must be positive, --clusters not negative"))
	}
	if c.Duration < 2*time.Second || c.Timeout <= 0 || c.BaselineLimit < 0 {
		errs = append(errs, errors.New("--duration must be at least 2s, --timeout positive, --baseline-limit not negative"))
	}
	if c.OverloadProducers < 1 {
		errs = append(errs, errors.New("--overload-producers must be at least 1"))
	}
	if a, err := c.agent(); err != nil {
		errs = append(errs, fmt.Errorf("--agent: %w", err))
	} else {
		for _, s := range c.Scenarios {
			if s == scaleScenario && a.Bench.Scale == nil {
				errs = append(errs, fmt.Errorf("--agent %s has no scale test: --scenario scale is a global-hub agent's (--agent globalhub)", a.Name))
			}
		}
		if a.Bench.CatchUpOnly {
			for _, s := range c.Scenarios {
				if s != "catch-up" && !(s == scaleScenario && a.Bench.Scale != nil) {
					errs = append(errs, fmt.Errorf("--agent %s: scenario %q is STB's wire format only; --scenario catch-up measures the agent", a.Name, s))
				}
			}
			if len(c.Scenarios) == 0 {
				errs = append(errs, fmt.Errorf("--agent %s needs --scenario catch-up (the other scenarios are STB's wire format only)", a.Name))
			}
		}
		if c.GHSharedTopic && !a.TopicPerHub {
			errs = append(errs, errors.New("--gh-shared-topic needs --agent globalhub"))
		}
	}
	if c.MaxBufferedBytes < 0 {
		errs = append(errs, errors.New("--max-buffered-bytes must not be negative"))
	}
	if c.Linger < 0 {
		errs = append(errs, errors.New("--linger must not be negative"))
	}
	if c.BatchWait < 0 {
		errs = append(errs, errors.New("--batch-wait must not be negative"))
	}
	if c.PoolSize < 1 || c.Partitions < 1 || c.Repeat < 1 || c.PoisonMessages < 1 {
		errs = append(errs, errors.New("--db-pool-size, --partitions, --repeat and --poison-messages must be positive"))
	}
	if c.SteadyRate <= 0 || c.OverloadFactor <= 0 || c.OverloadRate < 0 {
		errs = append(errs, errors.New("--steady-rate and --overload-factor must be positive, --overload-rate not negative"))
	}
	return errors.Join(errs...)
}

// Run runs the scenarios of cfg, prints a table per scenario, and writes
// the results as JSON to cfg.Out; the bridges under test log to logger.
// It fails when a scenario did.
func Run(ctx context.Context, c Config, logger *zap.Logger) error {
	if err := c.Validate(); err != nil {
		return err
	}
	scenarios, err := c.selected()
	if err != nil {
		return err
	}
	if c.CPUProfile != "" {
		f, err := os.Create(c.CPUProfile)
		if err != nil {
			return err
		}
		defer f.Close()
		if err := pprof.StartCPUProfile(f); err != nil {
			return err
		}
		defer pprof.StopCPUProfile()
	}

	e := &benchEnv{cfg: c, logger: logger, reg: dbsyncers.Default(), out: newBenchOutput(),
		runID: strconv.FormatInt(time.Now().Unix(), 36)}
	if e.produceCmd, err = produceCommand(); err != nil {
		return err
	}
	partitions := c.Partitions
	if e.agent, err = c.agent(); err != nil {
		return err
	}
	if p := e.agent.Bench.Profiles; p != nil {
		set, err := profiles.Parse(p)
		if err != nil {
			return err
		}
		if e.reg, err = set.Registry(); err != nil {
			return err
		}
	}
	if e.agent.TopicPerHub && !c.GHSharedTopic {
		// The agents' topics are made when they first publish, with the
		// broker's default number of partitions: one, as the agent's
		// order of types needs. The shared topic is the scenario's own.
		partitions = 1
	}
	report := &benchReport{Started: time.Now(), Command: c.Command, Machine: e.machine(ctx)}
	var topics []string
	for rep := 1; rep <= c.Repeat; rep++ {
		for _, s := range scenarios {
			for _, t := range s.topics {
				topics = append(topics, e.topicOf(t, rep))
			}
		}
	}
	e.broker, err = startBenchBroker(ctx, c.DataDir, topics, partitions)
	if err != nil {
		return err
	}
	defer e.broker.close()
	e.brokers = e.broker.addr
	e.out.say("broker %s (kfake in a child process, data in %s); database server %s; %d CPUs, pool %d",
		e.brokers, e.broker.dir, postgresName(report.Machine.Postgres), report.Machine.CPUs, c.PoolSize)
	defer func() {
		if !c.KeepDatabases {
			e.dropDatabases(context.WithoutCancel(ctx))
		}
	}()

	failed := false
	for e.rep = 1; e.rep <= c.Repeat; e.rep++ {
		for _, s := range scenarios {
			if err := e.runScenario(ctx, s, report); err != nil {
				if ctx.Err() != nil {
					return ctx.Err()
				}
				failed = true
			}
		}
	}
	report.printSummary(os.Stdout)
	if c.Out != "" {
		fmt.Printf("\nresults written to %s\n", c.Out)
	}
	if failed {
		return ErrScenarioFailed
	}
	return nil
}

// ErrScenarioFailed is returned by Run when a scenario failed; its table
// says why.
var ErrScenarioFailed = errors.New("a scenario failed")

// runScenario runs one scenario, prints its table and writes the report
// so far.
func (e *benchEnv) runScenario(ctx context.Context, s benchScenario, report *benchReport) error {
	c := e.cfg
	name := s.name
	if c.Repeat > 1 {
		name = fmt.Sprintf("%s #%d", s.name, e.rep)
	}
	res := &scenarioResult{Name: name, Params: map[string]any{}}
	report.Scenarios = append(report.Scenarios, res)
	start, loadBefore := time.Now(), loadAverage()
	e.out.say("scenario %s (load average %.1f)", name, loadBefore)
	err := s.run(ctx, e, res)
	if err != nil {
		e.out.done()
		res.Error = err.Error()
	}
	res.Params["took"] = time.Since(start).Round(time.Second).String()
	res.Params["load"] = fmt.Sprintf("%.1f → %.1f", loadBefore, loadAverage())
	res.Params["broker rss"] = mib(float64(rssOf(strconv.Itoa(e.broker.pid()))))
	res.print(os.Stdout)
	if c.Out != "" {
		if werr := report.writeJSON(c.Out); werr != nil && err == nil {
			err = werr
		}
	}
	return err
}
