package main

import (
	"context"
	"errors"
	"os"
	"strings"

	"github.com/stbridge/stb/cmd/stb/internal/bench"
)

func benchCmd(ctx context.Context, args []string) error {
	if len(args) > 0 && args[0] == "produce" {
		return benchProduceCmd(ctx, args[1:])
	}
	c := bench.DefaultConfig()
	fs := newFlagSet("bench", "Measure the bridge against its baseline (--conflation=false) and this machine's ceilings\n(reading and decoding without writing; writing the final rows straight through the handlers),\nside by side, in named scenarios: "+strings.Join(bench.ScenarioNames(), ", ")+". It runs an embedded broker with\na data directory and uses fresh databases on the local PostgreSQL; it prints a table per scenario\nand writes the results as JSON (--out). Progress goes to stderr.\n\n'stb bench produce' is its producer process (see 'stb bench produce --help').")
	fs.Var(newListValue(&c.Scenarios, nil), "scenario", "scenarios to run, comma-separated ("+strings.Join(bench.ScenarioNames(), ", ")+"), or all; empty runs all")
	fs.IntVar(&c.Hubs, "hubs", c.Hubs, "simulated hubs (catch-up, overload, steady)")
	fs.IntVar(&c.Messages, "messages", c.Messages, "messages in the catch-up backlog (rounded up to whole rounds of every hub)")
	fs.IntVar(&c.Clusters, "clusters", c.Clusters, "managed clusters per simulated hub")
	fs.IntVar(&c.Policies, "policies", c.Policies, "policies per simulated hub (0: the simulator's default; negative: none)")
	fs.StringVar(&c.Agent, "agent", c.Agent, "simulated agents: stb; hoh (fully compliant policies left out of compliance reports); globalhub (the global-hub agent's events, a topic of one partition per hub; --scenario catch-up only); work (OCM work agents' ManifestWork statuses of ~20 KB, --messages works on --hubs clusters; --scenario catch-up only)")
	fs.BoolVar(&c.GHSharedTopic, "gh-shared-topic", c.GHSharedTopic, "with --agent globalhub: the agents publish to one shared topic of --partitions partitions, keyed by event type, as with a Kafka of one's own")
	fs.DurationVar(&c.Duration, "duration", c.Duration, "how long the producers publish in the overload and steady scenarios")
	fs.DurationVar(&c.BaselineLimit, "baseline-limit", c.BaselineLimit, "stop the baseline (--conflation=false) after this long and extrapolate its total time from its throughput; 0 runs it to the end")
	fs.DurationVar(&c.Timeout, "timeout", c.Timeout, "longest any one variant may take")
	fs.StringVar(&c.Out, "out", c.Out, "file the results are written to as JSON; empty writes none")
	fs.StringVar(&c.DatabaseURL, "database-url", c.DatabaseURL, "PostgreSQL server; every variant gets a fresh database stb_bench_<scenario>_<variant> on it")
	fs.StringVar(&c.DataDir, "data-dir", c.DataDir, "data directory of the embedded broker; empty uses a temporary one, removed at the end")
	fs.IntVar(&c.PoolSize, "db-pool-size", c.PoolSize, "database connections (and workers) of the bridge, and of the pgx ceiling")
	fs.DurationVar(&c.Linger, "linger", c.Linger, "the bridge variants' --linger (how long a unit of a partition far behind its end holds what it takes)")
	fs.DurationVar(&c.BatchWait, "batch-wait", c.BatchWait, "the bridge variants' --batch-wait (how long a worker with a small bundle waits for more)")
	fs.IntVar(&c.Partitions, "partitions", c.Partitions, "partitions of every benchmark topic")
	fs.Int64Var(&c.Seed, "seed", c.Seed, "simulation seed")
	fs.Float64Var(&c.SteadyRate, "steady-rate", c.SteadyRate, "messages per second of the steady scenario")
	fs.Float64Var(&c.OverloadFactor, "overload-factor", c.OverloadFactor, "the overload scenario publishes this many times what the database absorbs message by message")
	fs.Float64Var(&c.OverloadRate, "overload-rate", c.OverloadRate, "messages per second of the overload scenario; 0 derives it from --overload-factor and the baseline's measured throughput")
	fs.StringVar(&c.CPUProfile, "cpuprofile", c.CPUProfile, "write a CPU profile of this process (the bridge and the bench) to this file")
	fs.BoolVar(&c.KeepDatabases, "keep-databases", c.KeepDatabases, "keep the variants' databases at the end, for inspection")
	fs.IntVar(&c.Repeat, "repeat", c.Repeat, "run the scenarios this many times, each on topics and databases of its own, to see the spread of the figures")
	fs.Var((*byteSize)(&c.MaxBufferedBytes), "max-buffered-bytes", "the bridges' --max-buffered-bytes, their memory budget; peak RSS is reported against it")
	fs.IntVar(&c.OverloadProducers, "overload-producers", c.OverloadProducers, "producer processes of the overload scenario, each publishing its share of the hubs and the rate")
	fs.IntVar(&c.PoisonMessages, "poison-messages", c.PoisonMessages, "rejects in the poison-flood backlog, mixed 1:1 with valid messages")
	logLevel := fs.String("log-level", "warn", "log level of the bridges under test")
	if err := parseFlags(fs, args); err != nil {
		return err
	}
	c.Command = strings.TrimSpace("stb bench " + strings.Join(args, " "))
	logger, err := newLogger(*logLevel, "console")
	if err != nil {
		return err
	}
	defer func() { _ = logger.Sync() }()
	err = bench.Run(ctx, c, logger)
	if errors.Is(err, bench.ErrScenarioFailed) {
		return exitError{code: 1}
	}
	return err
}

// benchProduceCmd is `stb bench produce`, the producer process `stb bench`
// starts for each load it publishes, so that the producer's CPU time and
// memory are not counted as the bridge's.
func benchProduceCmd(ctx context.Context, args []string) error {
	fs := newFlagSet("bench produce", "The producer process of 'stb bench', which starts it for every load it publishes: a child\n"+
		"process, so that simulating and producing does not count in the CPU time and peak RSS the bench\n"+
		"measures of the bridge in its own process. It reads its spec, one JSON object, on stdin:\n"+
		"{\"brokers\": ..., \"sim\": {pkg/sim's Config: \"Hubs\", \"Generations\", \"Rate\", ...}, \"expected\": FILE,\n"+
		"\"ahead\", \"poison\", \"poisonMix\": optional}; it publishes the simulation, writes the expected state\n"+
		"to FILE, and prints \"ready N\" (with ahead: N messages built, sending starts), \"sent N\" and a\n"+
		"last \"done N\" on stdout. To publish simulated hubs yourself, use 'stb simulate'.")
	if err := parseFlags(fs, args); err != nil {
		return err
	}
	return bench.RunProducer(ctx, os.Stdin, os.Stdout)
}
