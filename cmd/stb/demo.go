package main

import (
	"context"
	"fmt"
	"io"
	"os"
	"strconv"
	"time"

	"github.com/jackc/pgx/v5"

	"github.com/stbridge/stb/internal/bridge"
	"github.com/stbridge/stb/internal/demo"
	"github.com/stbridge/stb/pkg/db"
	"github.com/stbridge/stb/pkg/sim"
)

// demoCmd binds `stb demo`'s flags to a demo.Config and runs it; exit
// status 1 when the database did not end in the hubs' latest state.
func demoCmd(ctx context.Context, args []string) error { return runDemo(ctx, args, os.Stdout) }

// runDemo is `stb demo` writing its progress and summary to out.
func runDemo(ctx context.Context, args []string, out io.Writer) error {
	var s simFlags
	fs := newFlagSet("demo", "Run the whole pipeline on this machine: an embedded Kafka broker, a fresh database on the local\nPostgreSQL, simulated hubs publishing, the bridge, a progress line every second, and a final\nverification. Exit status 0 only when the database holds exactly the hubs' latest state.")
	s.bind(fs)
	cfg := demo.Config{Out: out}
	var keep bool
	fs.DurationVar(&cfg.Duration, "duration", demo.DefaultDuration, "how long the hubs publish (with --rate; sets the number of rounds when --generations is 0)")
	fs.DurationVar(&cfg.Timeout, "timeout", demo.DefaultTimeout, "how long to wait for the database to match after publishing")
	fs.StringVar(&cfg.DatabaseURL, "database-url", db.DefaultURL, "PostgreSQL server; the demo creates (and replaces) the database --database-name on it (never STB_DATABASE_URL: the demo reads STB_DEMO_* only)")
	fs.StringVar(&cfg.DatabaseName, "database-name", demo.DefaultDatabaseName, "database the demo creates, replacing one of that name, on the --database-url server")
	fs.BoolVar(&keep, "keep-database", false, "leave the demo's database on the server at the end, for inspection; without it the demo drops it")
	fs.StringVar(&cfg.HTTPAddr, "http-addr", demo.DefaultHTTPAddr, "address of the bridge's /metrics, /healthz and /readyz during the demo; empty disables")
	fs.StringVar(&cfg.AdminAddr, "admin-addr", bridge.DefaultAdminAddr, "address of the bridge's console (status page, /debug/units) during the demo; empty disables")
	fs.IntVar(&cfg.Partitions, "partitions", demo.DefaultPartitions, "partitions of the demo topic")
	fs.DurationVar(&cfg.Backlog, "backlog", demo.DefaultBacklog, "how long the hubs publish before the bridge starts reading, so that it reads a backlog first, as after an outage, and conflation shows (it writes what is still current, not every bundle read); 0 reads from the start (the hubs' demo: --agent stb, hoh, globalhub)")
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
	var ok bool
	if c.Demo != nil {
		ok, err = demo.RunAgent(ctx, cfg, c.Demo)
	} else {
		cfg.NewPublisher = func(brokers string) (*sim.KafkaPublisher, error) {
			return sim.NewKafkaPublisher(sim.PublisherConfig{Brokers: brokers, TypePrefix: s.prefix}, logger.Named("simulate"))
		}
		var res *demo.Result
		res, err = demo.Run(ctx, cfg)
		ok = res != nil && res.OK()
	}
	if cerr := cleanUpDemo(cfg.DatabaseURL, cfg.DatabaseName, keep, out); err == nil {
		err = cerr
	}
	return demoEnded(ok, err)
}

// cleanUpDemo drops the demo's database, or says what it leaves and how
// to drop it.
func cleanUpDemo(baseURL, name string, keep bool, out io.Writer) error {
	server := db.RedactURL(baseURL)
	if keep {
		fmt.Fprintf(out, "demo: left database %s on %s for inspection; drop it with: psql '%s' -c 'DROP DATABASE %s WITH (FORCE)'\n",
			name, server, server, pgx.Identifier{name}.Sanitize())
		return nil
	}
	// Not the demo's context: an interrupted demo cleans up too.
	ctx, cancel := context.WithTimeout(context.Background(), 30*time.Second)
	defer cancel()
	conn, err := pgx.Connect(ctx, baseURL)
	if err == nil {
		defer conn.Close(ctx)
		_, err = conn.Exec(ctx, "DROP DATABASE IF EXISTS "+pgx.Identifier{name}.Sanitize()+" WITH (FORCE)")
	}
	if err != nil {
		return fmt.Errorf("drop the demo's database %s on %s: %w (drop it by hand, or pass --keep-database)", name, server, db.RedactError(err, baseURL))
	}
	fmt.Fprintf(out, "demo: dropped database %s on %s (--keep-database keeps it)\n", name, server)
	return nil
}

// demoEnded is a demo's exit: its error, else status 1 unless verified.
func demoEnded(ok bool, err error) error {
	if err == nil && !ok {
		return exitError{code: 1}
	}
	return err
}
