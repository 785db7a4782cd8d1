package main

import (
	"flag"
	"fmt"
	"runtime"
	"time"

	"github.com/stbridge/stb/pkg/committer"
	"github.com/stbridge/stb/pkg/transport"
)

// runConfig is everything `stb run` (and the bridge inside `stb demo`)
// takes from flags and environment.
type runConfig struct {
	KafkaBrokers    string
	KafkaGroupID    string
	KafkaTopics     []string
	KafkaProperties propertyFlag
	AutoOffsetReset string
	TypePrefix      string
	VerifySource    bool
	MaxBundleBytes  byteSize
	MaxDeltaBytes   byteSize
	// MaxBufferedBytes pauses reading while units hold more than this.
	MaxBufferedBytes  byteSize
	DependencyTimeout time.Duration
	// Conflation off writes every bundle in arrival order (the baseline).
	Conflation      bool
	DatabaseURL     string
	DBPoolSize      int
	CommitInterval  time.Duration
	JobTimeout      time.Duration
	ShutdownTimeout time.Duration
	Migrate         bool
	HTTPAddr        string
	LogLevel        string
	LogFormat       string
}

func defaultPoolSize() int {
	n := 2 * runtime.NumCPU()
	if n < 4 {
		n = 4
	}
	return n
}

const defaultDatabaseURL = "postgres://postgres@127.0.0.1:5432/postgres?sslmode=disable"

// bind registers the bridge's flags on fs.
func (c *runConfig) bind(fs *flag.FlagSet) {
	c.KafkaProperties = propertyFlag{}
	c.MaxBundleBytes = 4 << 20
	c.MaxDeltaBytes = 1 << 20
	c.MaxBufferedBytes = 512 << 20
	fs.StringVar(&c.KafkaBrokers, "kafka-brokers", "127.0.0.1:9092", "Kafka bootstrap servers, comma-separated")
	fs.StringVar(&c.KafkaGroupID, "kafka-group-id", "stb", "Kafka consumer group")
	fs.Var(newListValue(&c.KafkaTopics, []string{"status"}), "kafka-topics", "topics to read, comma-separated; an entry starting with ^ is a regular expression")
	fs.Var(c.KafkaProperties, "kafka-property", "extra librdkafka property key=value (repeatable), e.g. security.protocol=SASL_SSL")
	fs.StringVar(&c.AutoOffsetReset, "kafka-auto-offset-reset", "earliest", "where to start a partition with no stored offset: earliest or latest")
	fs.StringVar(&c.TypePrefix, "type-prefix", transport.DefaultTypePrefix, "CloudEvents type prefix; the rest of the type is the bundle type")
	fs.BoolVar(&c.VerifySource, "verify-source", true, "reject events whose source is not the Kafka message key")
	fs.Var(&c.MaxBundleBytes, "max-bundle-bytes", "largest event data accepted (at least 64KiB always is)")
	fs.Var(&c.MaxDeltaBytes, "max-delta-bytes", "waiting deltas of a hub above this size are merged into one")
	fs.Var(&c.MaxBufferedBytes, "max-buffered-bytes", "payload bytes held in conflation units above which reading pauses (resumes below 80%); 0 never pauses")
	fs.DurationVar(&c.DependencyTimeout, "dependency-timeout", 5*time.Minute, "a bundle waiting longer than this for its dependency is dead-lettered; 0 waits forever")
	fs.BoolVar(&c.Conflation, "conflation", true, "conflate bundles per hub; false writes every bundle in arrival order (a per-record baseline for benchmarks)")
	fs.StringVar(&c.DatabaseURL, "database-url", defaultDatabaseURL, "PostgreSQL URL (sslmode and other libpq parameters allowed)")
	fs.IntVar(&c.DBPoolSize, "db-pool-size", defaultPoolSize(), "database connections for workers, and so the number of workers")
	fs.DurationVar(&c.CommitInterval, "commit-interval", committer.DefaultInterval, "how often committed offsets are stored")
	fs.DurationVar(&c.JobTimeout, "job-timeout", 60*time.Second, "time limit of one bundle's transaction")
	fs.DurationVar(&c.ShutdownTimeout, "shutdown-timeout", 30*time.Second, "time allowed for a graceful shutdown, final commit included")
	fs.BoolVar(&c.Migrate, "migrate", true, "apply database migrations at start")
	fs.StringVar(&c.HTTPAddr, "http-addr", ":8080", "address of /metrics, /healthz, /readyz and /debug/units; empty disables")
	fs.StringVar(&c.LogLevel, "log-level", "info", "log level: debug, info, warn, error")
	fs.StringVar(&c.LogFormat, "log-format", "json", "log format: json or console")
}

func (c *runConfig) validate() error {
	if c.KafkaBrokers == "" {
		return fmt.Errorf("--kafka-brokers is required")
	}
	if len(c.KafkaTopics) == 0 {
		return fmt.Errorf("--kafka-topics is required")
	}
	if c.DBPoolSize < 1 {
		return fmt.Errorf("--db-pool-size must be at least 1")
	}
	if c.CommitInterval <= 0 || c.ShutdownTimeout <= 0 || c.JobTimeout <= 0 {
		return fmt.Errorf("--commit-interval, --job-timeout and --shutdown-timeout must be positive")
	}
	switch c.AutoOffsetReset {
	case "earliest", "latest":
	default:
		return fmt.Errorf("--kafka-auto-offset-reset must be earliest or latest, got %q", c.AutoOffsetReset)
	}
	return nil
}
