package main

import (
	"context"
	"fmt"

	"go.uber.org/zap"

	"github.com/stbridge/stb/internal/bridge"
	"github.com/stbridge/stb/pkg/db"
)

func runCmd(ctx context.Context, args []string) error {
	cfg := bridge.DefaultConfig()
	var log logFlags
	fs := newFlagSet("run", "Run the bridge: read status bundles from Kafka, conflate them per hub, write them to PostgreSQL.\nSIGTERM or SIGINT shuts it down gracefully within --shutdown-timeout; a second one exits at once.")
	bindRun(fs, &cfg, &log)
	dbStartTimeout := fs.Duration("db-start-timeout", bridge.DefaultDBStartTimeout, "how long a database unreachable at start is waited for, tried again with a backoff from 1s to 30s while /healthz answers 200 and /readyz 503; then the bridge exits with the error; 0 waits for ever")
	if err := parseFlags(fs, args); err != nil {
		return err
	}
	if *dbStartTimeout < 0 {
		return fmt.Errorf("--db-start-timeout must not be negative, got %v", *dbStartTimeout)
	}
	logger, err := newLogger(log.Level, log.Format)
	if err != nil {
		return err
	}
	defer func() { _ = logger.Sync() }()
	// Everything that can be checked without a side effect, before the
	// migrations: a misspelt Kafka property used to fail after them.
	if err := bridge.Preflight(cfg); err != nil {
		return err
	}
	logger.Info("starting",
		zap.String("kafka_brokers", cfg.Reader.Brokers), zap.Strings("topics", cfg.Reader.Topics),
		zap.String("group", cfg.Reader.GroupID), zap.Stringer("kafka_properties", propertyFlag(cfg.Reader.Properties)),
		zap.String("database", db.RedactURL(cfg.DatabaseURL)), zap.Int("db_pool_size", cfg.Dispatcher.Workers))
	err = bridge.WaitForDatabase(ctx, cfg.DatabaseURL, *dbStartTimeout, cfg.HTTPAddr, logger)
	var b *bridge.Bridge
	if err == nil {
		b, err = bridge.New(ctx, cfg, bridge.Deps{Logger: logger})
	}
	if err != nil {
		if ctx.Err() != nil {
			// SIGTERM while starting (a rollout that replaced the pod at
			// once): nothing was read, so nothing is lost, and the stop
			// the operator asked for is not a failure.
			logger.Info("stopped before the bridge started", zap.NamedError("while", err))
			return nil
		}
		return err
	}
	defer b.Close()
	return b.Run(ctx)
}

func migrateCmd(ctx context.Context, args []string) error {
	fs := newFlagSet("migrate", "Apply the database migrations in sql/ and exit.")
	url := fs.String("database-url", db.DefaultURL, "PostgreSQL URL")
	level := fs.String("log-level", "info", "log level")
	if err := parseFlags(fs, args); err != nil {
		return err
	}
	logger, err := newLogger(*level, "console")
	if err != nil {
		return err
	}
	from, to, err := db.Migrate(ctx, *url, logger)
	if err != nil {
		return err
	}
	logger.Info("migrated", zap.Int32("from", from), zap.Int32("to", to))
	return nil
}
