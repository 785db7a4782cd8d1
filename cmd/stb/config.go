package main

import (
	"flag"

	"github.com/stbridge/stb/internal/bridge"
	"github.com/stbridge/stb/internal/profiles"
)

// logFlags are the logging flags every long-running command takes.
type logFlags struct {
	Level, Format string
}

// bindRun registers the bridge's flags on fs; what cfg holds (normally
// bridge.DefaultConfig()) are the defaults.
func bindRun(fs *flag.FlagSet, c *bridge.Config, log *logFlags) {
	if c.Reader.Properties == nil {
		c.Reader.Properties = map[string]string{}
	}
	fs.StringVar(&c.Reader.Brokers, "kafka-brokers", c.Reader.Brokers, "Kafka bootstrap servers, comma-separated")
	fs.StringVar(&c.Reader.GroupID, "kafka-group-id", c.Reader.GroupID, "Kafka consumer group")
	fs.Var(newListValue(&c.Reader.Topics, c.Reader.Topics), "kafka-topics", "topics to read, comma-separated; an entry starting with ^ is a regular expression")
	fs.Var(propertyFlag(c.Reader.Properties), "kafka-property", "extra librdkafka property key=value (repeatable), e.g. security.protocol=SASL_SSL")
	fs.StringVar(&c.Reader.AutoOffsetReset, "kafka-auto-offset-reset", c.Reader.AutoOffsetReset, "where to start a partition with no stored offset: earliest or latest")
	fs.StringVar(&c.Reader.TypePrefix, "type-prefix", c.Reader.TypePrefix, "CloudEvents type prefix; the rest of the type is the bundle type")
	fs.BoolVar(&c.Reader.VerifySource, "verify-source", c.Reader.VerifySource, "reject events whose source is not the Kafka message key")
	fs.Var(newListValue(&c.Profiles, c.Profiles), "profiles", "wire formats read, comma-separated: "+profiles.Usage())
	fs.Var((*intByteSize)(&c.Reader.MaxBundleBytes), "max-bundle-bytes", "largest event data accepted (at least 64KiB always is)")
	fs.Var((*intByteSize)(&c.Conflation.MaxDeltaBytes), "max-delta-bytes", "waiting deltas of a hub above this size are merged into one")
	fs.Var((*byteSize)(&c.Reader.MaxBufferedBytes), "max-buffered-bytes", "memory held by buffered bundles (data, the message's key and headers, the bundle itself) above which reading pauses (resumes below 80%); 0 never pauses")
	fs.DurationVar(&c.Reader.ChunkTimeout, "chunk-timeout", c.Reader.ChunkTimeout, "a global-hub event sent in chunks that is not whole this long after its first chunk is dead-lettered (chunk_timeout) and its partition's position moves past it; 0 means the default")
	fs.DurationVar(&c.Conflation.DependencyTimeout, "dependency-timeout", c.Conflation.DependencyTimeout, "a bundle waiting longer than this for its dependency is dead-lettered; 0 waits forever")
	fs.DurationVar(&c.Conflation.Linger, "linger", c.Conflation.Linger, "while the reader is far behind a partition's end (a catch-up), a hub's unit holds the states it takes at most this long before writing them, so that newer bundles still unread replace them, and no longer than the reader takes to read what the partition held then; events and a partition at its end never wait; 0 writes at once")
	fs.DurationVar(&c.Conflation.IdleTimeout, "unit-idle-timeout", c.Conflation.IdleTimeout, "a hub's conflation unit idle this long with nothing held or in flight leaves memory (its versions stay); 0 keeps units")
	fs.DurationVar(&c.Hubs.InactiveAfter, "hub-inactive-after", c.Hubs.InactiveAfter, "a hub with no heartbeat received for this long is marked inactive in stb.hubs; 0 never")
	fs.DurationVar(&c.Hubs.DeleteAfter, "hub-delete-after", c.Hubs.DeleteAfter, "delete a hub (as stb hub delete does) once it has been inactive this long; 0 never")
	fs.StringVar(&c.ResyncTopic, "resync-topic", c.ResyncTopic, "topic to ask hubs for a complete bundle again when one of theirs waits for a version never read (README \"Resync requests\"); empty sends none")
	fs.DurationVar(&c.Conflation.ResyncAfter, "resync-after", c.Conflation.ResyncAfter, "how long a bundle waits for a missing dependency before a resync is requested")
	fs.DurationVar(&c.Conflation.ResyncInterval, "resync-interval", c.Conflation.ResyncInterval, "least time between two resync requests for one hub and bundle type")
	fs.Var(negatedBool{&c.Conflation.NoConflation}, "conflation", "conflate bundles per hub; false writes every bundle in arrival order (a per-record baseline for benchmarks)")
	fs.StringVar(&c.DatabaseURL, "database-url", c.DatabaseURL, "PostgreSQL URL (sslmode and other libpq parameters allowed)")
	fs.IntVar(&c.Dispatcher.Workers, "db-pool-size", c.Dispatcher.Workers, "database connections for workers, and so the number of workers")
	fs.DurationVar(&c.Committer.Interval, "commit-interval", c.Committer.Interval, "how often committed offsets are stored")
	fs.DurationVar(&c.Dispatcher.JobTimeout, "job-timeout", c.Dispatcher.JobTimeout, "time limit of one bundle's transaction")
	fs.IntVar(&c.Dispatcher.MaxUnclassifiedAttempts, "max-unclassified-attempts", c.Dispatcher.MaxUnclassifiedAttempts, "times a bundle whose write fails with an error that is neither a database error, a timeout nor a lost connection (an encode error, a bug) is tried before it is dead-lettered permanent_error; known transient failures are retried for ever")
	fs.DurationVar(&c.Dispatcher.BatchWait, "batch-wait", c.Dispatcher.BatchWait, "how long a worker with a small bundle waits for more to write in the same transaction when no other hub is ready (0: never); adds at most this to freshness")
	fs.DurationVar(&c.ShutdownTimeout, "shutdown-timeout", c.ShutdownTimeout, "time allowed for a graceful shutdown, final commit included; jobs still running then are aborted and replayed after a restart")
	fs.BoolVar(&c.Migrate, "migrate", c.Migrate, "apply database migrations at start")
	fs.StringVar(&c.HTTPAddr, "http-addr", c.HTTPAddr, "address of /metrics, /healthz and /readyz, and nothing else; empty disables")
	fs.BoolVar(&c.AdminNoAuth, "admin-no-auth", c.AdminNoAuth, "let --admin-addr listen beyond the loopback without --admin-token-file (only behind a proxy that authenticates)")
	fs.StringVar(&c.AdminAddr, "admin-addr", c.AdminAddr, "address of the operator's console (status page, /debug/units, pprof); keep it off the network or set --admin-token-file; empty disables")
	fs.StringVar(&c.AdminTokenFile, "admin-token-file", c.AdminTokenFile, "file holding a bearer token every admin request must carry (Authorization: Bearer <token>)")
	if c.Startup == nil {
		c.Startup = map[string]string{}
	}
	for _, st := range profiles.StartupSteps() {
		fs.Func(st.Flag, st.Help, func(v string) error { c.Startup[st.Flag] = v; return nil })
	}
	if log != nil {
		fs.StringVar(&log.Level, "log-level", "info", "log level: debug, info, warn, error")
		fs.StringVar(&log.Format, "log-format", "json", "log format: json or console")
	}
}
