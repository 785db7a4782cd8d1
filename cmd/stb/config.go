package main

import (
	"flag"

	"github.com/stbridge/stb/internal/bridge"
)

// logFlags are the logging flags every long-running command takes.
type logFlags struct {
	Level, Format string
}

// bindRun registers the bridge's flags on fs; what cfg holds (normally
// bridge.DefaultConfig()) are the defaults.
func bindRun(fs *flag.FlagSet, c *bridge.Config, log *logFlags) {
	if c.KafkaProperties == nil {
		c.KafkaProperties = map[string]string{}
	}
	fs.StringVar(&c.KafkaBrokers, "kafka-brokers", c.KafkaBrokers, "Kafka bootstrap servers, comma-separated")
	fs.StringVar(&c.KafkaGroupID, "kafka-group-id", c.KafkaGroupID, "Kafka consumer group")
	fs.Var(newListValue(&c.KafkaTopics, c.KafkaTopics), "kafka-topics", "topics to read, comma-separated; an entry starting with ^ is a regular expression")
	fs.Var(propertyFlag(c.KafkaProperties), "kafka-property", "extra librdkafka property key=value (repeatable), e.g. security.protocol=SASL_SSL")
	fs.StringVar(&c.AutoOffsetReset, "kafka-auto-offset-reset", c.AutoOffsetReset, "where to start a partition with no stored offset: earliest or latest")
	fs.StringVar(&c.TypePrefix, "type-prefix", c.TypePrefix, "CloudEvents type prefix; the rest of the type is the bundle type")
	fs.BoolVar(&c.VerifySource, "verify-source", c.VerifySource, "reject events whose source is not the Kafka message key")
	fs.Var(newListValue(&c.Profiles, c.Profiles), "profiles", "wire formats read, comma-separated: stb (STB's own), globalhub (the multicluster global-hub agent's events)")
	fs.Var((*byteSize)(&c.MaxBundleBytes), "max-bundle-bytes", "largest event data accepted (at least 64KiB always is)")
	fs.Var((*byteSize)(&c.MaxDeltaBytes), "max-delta-bytes", "waiting deltas of a hub above this size are merged into one")
	fs.Var((*byteSize)(&c.MaxBufferedBytes), "max-buffered-bytes", "payload bytes held in conflation units above which reading pauses (resumes below 80%); 0 never pauses")
	fs.DurationVar(&c.DependencyTimeout, "dependency-timeout", c.DependencyTimeout, "a bundle waiting longer than this for its dependency is dead-lettered; 0 waits forever")
	fs.DurationVar(&c.UnitIdleTimeout, "unit-idle-timeout", c.UnitIdleTimeout, "a hub's conflation unit idle this long with nothing held or in flight leaves memory (its versions stay); 0 keeps units")
	fs.DurationVar(&c.HubInactiveAfter, "hub-inactive-after", c.HubInactiveAfter, "a hub with no heartbeat received for this long is marked inactive in status.hubs; 0 never")
	fs.DurationVar(&c.HubDeleteAfter, "hub-delete-after", c.HubDeleteAfter, "delete a hub (as stb hub delete does) once it has been inactive this long; 0 never")
	fs.StringVar(&c.ResyncTopic, "resync-topic", c.ResyncTopic, "topic to ask hubs for a complete bundle again when one of theirs waits for a version never read (README \"Resync requests\"); empty sends none")
	fs.DurationVar(&c.ResyncAfter, "resync-after", c.ResyncAfter, "how long a bundle waits for a missing dependency before a resync is requested")
	fs.DurationVar(&c.ResyncInterval, "resync-interval", c.ResyncInterval, "least time between two resync requests for one hub and bundle type")
	fs.BoolVar(&c.Conflation, "conflation", c.Conflation, "conflate bundles per hub; false writes every bundle in arrival order (a per-record baseline for benchmarks)")
	fs.StringVar(&c.DatabaseURL, "database-url", c.DatabaseURL, "PostgreSQL URL (sslmode and other libpq parameters allowed)")
	fs.IntVar(&c.DBPoolSize, "db-pool-size", c.DBPoolSize, "database connections for workers, and so the number of workers")
	fs.DurationVar(&c.CommitInterval, "commit-interval", c.CommitInterval, "how often committed offsets are stored")
	fs.DurationVar(&c.JobTimeout, "job-timeout", c.JobTimeout, "time limit of one bundle's transaction")
	fs.DurationVar(&c.BatchWait, "batch-wait", c.BatchWait, "how long a worker with a small bundle waits for more to write in the same transaction when no other hub is ready (0: never); adds at most this to freshness")
	fs.DurationVar(&c.ShutdownTimeout, "shutdown-timeout", c.ShutdownTimeout, "time allowed for a graceful shutdown, final commit included; jobs still running then are aborted and replayed after a restart")
	fs.BoolVar(&c.Migrate, "migrate", c.Migrate, "apply database migrations at start")
	fs.StringVar(&c.HTTPAddr, "http-addr", c.HTTPAddr, "address of /metrics, /healthz and /readyz, and nothing else; empty disables")
	fs.StringVar(&c.AdminAddr, "admin-addr", c.AdminAddr, "address of the operator's console (status page, /debug/units, pprof); keep it off the network or set --admin-token-file; empty disables")
	fs.StringVar(&c.AdminTokenFile, "admin-token-file", c.AdminTokenFile, "file holding a bearer token every admin request must carry (Authorization: Bearer <token>)")
	if log != nil {
		fs.StringVar(&log.Level, "log-level", "info", "log level: debug, info, warn, error")
		fs.StringVar(&log.Format, "log-format", "json", "log format: json or console")
	}
}
