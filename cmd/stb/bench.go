package main

import (
	"context"
	"errors"
	"flag"
	"fmt"
	"os"
	"runtime/pprof"
	"slices"
	"strconv"
	"strings"
	"time"

	"github.com/stbridge/stb/dbsyncers"
)

// `stb bench` measures the bridge against its baseline (the same bridge
// with --conflation=false, writing every bundle) and against this machine's ceilings (reading and decoding the backlog
// without writing; writing the final rows straight through the handlers)
// in named scenarios, side by side in one invocation (DESIGN.md §15). The
// bridge runs in this process; the broker and the producers run as child
// processes, so that this process's CPU time and memory are the bridge's.

// benchConfig is what `stb bench` takes from flags and environment.
type benchConfig struct {
	Scenarios      listFlag
	Hubs           int
	Messages       int
	Clusters       int
	Policies       int
	Duration       time.Duration
	BaselineLimit  time.Duration
	Timeout        time.Duration
	Out            string
	DatabaseURL    string
	DataDir        string
	PoolSize       int
	Partitions     int
	Seed           int64
	SteadyRate     float64
	OverloadFactor float64
	OverloadRate   float64
	CPUProfile     string
	KeepDatabases  bool
	LogLevel       string
	Repeat         int
}

func (c *benchConfig) bind(fs *flag.FlagSet) {
	fs.Var(&c.Scenarios, "scenario", "scenarios to run, comma-separated ("+strings.Join(scenarioNames(), ", ")+"), or all; empty runs all")
	fs.IntVar(&c.Hubs, "hubs", 1000, "simulated hubs (catch-up, overload, steady)")
	fs.IntVar(&c.Messages, "messages", 1_000_000, "messages in the catch-up backlog (rounded up to whole rounds of every hub)")
	fs.IntVar(&c.Clusters, "clusters", 10, "managed clusters per simulated hub")
	fs.IntVar(&c.Policies, "policies", 0, "policies per simulated hub (0: the simulator's default; negative: none)")
	fs.DurationVar(&c.Duration, "duration", 60*time.Second, "how long the producers publish in the overload and steady scenarios")
	fs.DurationVar(&c.BaselineLimit, "baseline-limit", 60*time.Second, "stop the baseline (--conflation=false) after this long and extrapolate its total time from its throughput; 0 runs it to the end")
	fs.DurationVar(&c.Timeout, "timeout", 30*time.Minute, "longest any one variant may take")
	fs.StringVar(&c.Out, "out", "bench-results.json", "file the results are written to as JSON; empty writes none")
	fs.StringVar(&c.DatabaseURL, "database-url", defaultDatabaseURL, "PostgreSQL server; every variant gets a fresh database stb_bench_<scenario>_<variant> on it")
	fs.StringVar(&c.DataDir, "data-dir", "", "data directory of the embedded broker; empty uses a temporary one, removed at the end")
	fs.IntVar(&c.PoolSize, "db-pool-size", defaultPoolSize(), "database connections (and workers) of the bridge, and of the pgx ceiling")
	fs.IntVar(&c.Partitions, "partitions", 8, "partitions of every benchmark topic")
	fs.Int64Var(&c.Seed, "seed", 1, "simulation seed")
	fs.Float64Var(&c.SteadyRate, "steady-rate", 1000, "messages per second of the steady scenario")
	fs.Float64Var(&c.OverloadFactor, "overload-factor", 10, "the overload scenario publishes this many times what the database absorbs message by message")
	fs.Float64Var(&c.OverloadRate, "overload-rate", 0, "messages per second of the overload scenario; 0 derives it from --overload-factor and the baseline's measured throughput")
	fs.StringVar(&c.CPUProfile, "cpuprofile", "", "write a CPU profile of this process (the bridge and the bench) to this file")
	fs.BoolVar(&c.KeepDatabases, "keep-databases", false, "keep the variants' databases at the end, for inspection")
	fs.StringVar(&c.LogLevel, "log-level", "warn", "log level of the bridges under test")
	fs.IntVar(&c.Repeat, "repeat", 1, "run the scenarios this many times, each on topics and databases of its own, to see the spread of the figures")
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
		{"large-hub", []string{"largehub", "largehub-rotation-stb", "largehub-rotation-baseline"}, benchLargeHub},
		{"overload", []string{"overload-calibrate", "overload-stb", "overload-baseline"}, benchOverload},
		{"steady", []string{"steady-stb", "steady-baseline"}, benchSteady},
	}
}

func scenarioNames() []string {
	var names []string
	for _, s := range benchScenarios() {
		names = append(names, s.name)
	}
	return names
}

// selected returns the scenarios asked for, in their fixed order.
func (c *benchConfig) selected() ([]benchScenario, error) {
	want := map[string]bool{}
	for _, n := range c.Scenarios {
		if n == "all" {
			for _, s := range scenarioNames() {
				want[s] = true
			}
			continue
		}
		if !slices.Contains(scenarioNames(), n) {
			return nil, fmt.Errorf("--scenario: unknown scenario %q (want %s or all)", n, strings.Join(scenarioNames(), ", "))
		}
		want[n] = true
	}
	if len(want) == 0 {
		for _, s := range scenarioNames() {
			want[s] = true
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

func (c *benchConfig) validate() error {
	var errs []error
	if c.Hubs < 1 || c.Messages < 1 || c.Clusters < 0 {
		errs = append(errs, errors.New("--hubs and --messages must be positive, --clusters not negative"))
	}
	if c.Duration < 2*time.Second || c.Timeout <= 0 || c.BaselineLimit < 0 {
		errs = append(errs, errors.New("--duration must be at least 2s, --timeout positive, --baseline-limit not negative"))
	}
	if c.PoolSize < 1 || c.Partitions < 1 || c.Repeat < 1 {
		errs = append(errs, errors.New("--db-pool-size, --partitions and --repeat must be positive"))
	}
	if c.SteadyRate <= 0 || c.OverloadFactor <= 0 || c.OverloadRate < 0 {
		errs = append(errs, errors.New("--steady-rate and --overload-factor must be positive, --overload-rate not negative"))
	}
	return errors.Join(errs...)
}

func benchCmd(ctx context.Context, args []string) error {
	var c benchConfig
	fs := newFlagSet("bench", "Measure the bridge against its baseline (--conflation=false) and this machine's ceilings\n(reading and decoding without writing; writing the final rows straight through the handlers),\nside by side, in named scenarios: "+strings.Join(scenarioNames(), ", ")+". It runs an embedded broker with\na data directory and uses fresh databases on the local PostgreSQL; it prints a table per scenario\nand writes the results as JSON (--out). Progress goes to stderr.")
	c.bind(fs)
	producerSpec := fs.String("internal-producer", "", "(internal) run as the bench's producer process with this JSON spec")
	if err := parseFlags(fs, args); err != nil {
		return err
	}
	if *producerSpec != "" {
		return runInternalProducer(ctx, *producerSpec)
	}
	if err := c.validate(); err != nil {
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
	logger, err := newLogger(c.LogLevel, "console")
	if err != nil {
		return err
	}
	defer func() { _ = logger.Sync() }()

	e := &benchEnv{cfg: c, logger: logger, reg: dbsyncers.Default(), out: newBenchOutput(),
		runID: strconv.FormatInt(time.Now().Unix(), 36)}
	report := &benchReport{Started: time.Now(), Command: "stb bench " + strings.Join(args, " "), Machine: e.machine(ctx)}
	var topics []string
	for rep := 1; rep <= c.Repeat; rep++ {
		for _, s := range scenarios {
			for _, t := range s.topics {
				topics = append(topics, e.topicOf(t, rep))
			}
		}
	}
	e.broker, err = startBenchBroker(ctx, c.DataDir, topics, c.Partitions)
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
		return exitError{code: 1}
	}
	return nil
}

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
