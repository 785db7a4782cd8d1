package main

import (
	"context"
	"os"
	"strconv"

	"github.com/stbridge/stb/internal/bridge"
	"github.com/stbridge/stb/internal/demo"
	"github.com/stbridge/stb/pkg/db"
	"github.com/stbridge/stb/pkg/sim"
)

// demoCmd binds `stb demo`'s flags to a demo.Config and runs it; exit
// status 1 when the database did not end in the hubs' latest state.
func demoCmd(ctx context.Context, args []string) error {
	var s simFlags
	fs := newFlagSet("demo", "Run the whole pipeline on this machine: an embedded Kafka broker, a fresh database on the local\nPostgreSQL, simulated hubs publishing, the bridge, a progress line every second, and a final\nverification. Exit status 0 only when the database holds exactly the hubs' latest state.")
	s.bind(fs)
	cfg := demo.Config{DatabaseName: demo.DefaultDatabaseName, Out: os.Stdout}
	fs.DurationVar(&cfg.Duration, "duration", demo.DefaultDuration, "how long the hubs publish (with --rate; sets the number of rounds when --generations is 0)")
	fs.DurationVar(&cfg.Timeout, "timeout", demo.DefaultTimeout, "how long to wait for the database to match after publishing")
	fs.StringVar(&cfg.DatabaseURL, "database-url", db.DefaultURL, "PostgreSQL server; the demo creates (and replaces) the database "+demo.DefaultDatabaseName+" on it")
	fs.StringVar(&cfg.HTTPAddr, "http-addr", demo.DefaultHTTPAddr, "address of the bridge's /metrics, /healthz and /readyz during the demo; empty disables")
	fs.StringVar(&cfg.AdminAddr, "admin-addr", bridge.DefaultAdminAddr, "address of the bridge's console (status page, /debug/units) during the demo; empty disables")
	fs.IntVar(&cfg.Partitions, "partitions", demo.DefaultPartitions, "partitions of the demo topic")
	for name, def := range map[string]string{"rate": strconv.Itoa(demo.DefaultRate), "generations": "0"} {
		if err := fs.Set(name, def); err != nil {
			return err
		}
		fs.Lookup(name).DefValue = def
	}
	if err := parseFlags(fs, args); err != nil {
		return err
	}
	logger, err := newLogger("warn", "console")
	if err != nil {
		return err
	}
	defer func() { _ = logger.Sync() }()
	c, err := s.commands()
	if err != nil {
		return err
	}
	cfg.Sim, cfg.Logger = s.cfg, logger
	if c.Demo != nil {
		return demoEnded(demo.RunAgent(ctx, cfg, c.Demo))
	}
	cfg.NewPublisher = func(brokers string) (*sim.KafkaPublisher, error) {
		return sim.NewKafkaPublisher(sim.PublisherConfig{Brokers: brokers, TypePrefix: s.prefix}, logger.Named("simulate"))
	}
	res, err := demo.Run(ctx, cfg)
	return demoEnded(res != nil && res.OK(), err)
}

// demoEnded is a demo's exit: its error, else status 1 unless verified.
func demoEnded(ok bool, err error) error {
	if err == nil && !ok {
		return exitError{code: 1}
	}
	return err
}
