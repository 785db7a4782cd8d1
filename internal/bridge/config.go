package bridge

import (
	"errors"
	"fmt"
	"runtime"
	"time"

	"github.com/stbridge/stb/dbsyncers"
	"github.com/stbridge/stb/dispatcher"
	"github.com/stbridge/stb/pkg/committer"
	"github.com/stbridge/stb/pkg/transport"
)

// Config is everything the bridge is built from. cmd/stb fills it from
// flags and environment, starting from DefaultConfig; the demo and the
// bench start from DefaultConfig and change a few fields.
type Config struct {
	// KafkaBrokers are the bootstrap servers, comma-separated.
	KafkaBrokers string
	// KafkaGroupID is the consumer group the replicas share.
	KafkaGroupID string
	// KafkaTopics are read; an entry starting with ^ is a pattern.
	KafkaTopics []string
	// KafkaProperties are extra librdkafka properties (secrets allowed:
	// they are never logged).
	KafkaProperties map[string]string
	// AutoOffsetReset is where a partition without a stored offset starts:
	// earliest or latest.
	AutoOffsetReset string
	// TypePrefix is the CloudEvents type prefix; the rest is the bundle type.
	TypePrefix string
	// VerifySource rejects events whose source is not the message key.
	VerifySource bool
	// Profiles are the wire formats read: "stb" (STB's own, TypePrefix)
	// and "globalhub" (the multicluster global-hub agent's events, told
	// apart by their own type prefix; README "Wire format"). Both by
	// default: the prefixes cannot be confused, and the global-hub events
	// only come from the topics subscribed.
	Profiles []string
	// MaxBundleBytes is the largest event data accepted (64 KiB always is).
	MaxBundleBytes int64
	// MaxDeltaBytes: a hub's waiting deltas above it are merged into one.
	MaxDeltaBytes int64
	// MaxBufferedBytes pauses reading while units hold more; 0 never does.
	MaxBufferedBytes int64
	// DependencyTimeout dead-letters a bundle that waited longer for its
	// dependency; 0 waits forever.
	DependencyTimeout time.Duration
	// UnitIdleTimeout evicts a hub's conflation unit that held nothing and
	// had nothing in flight for that long; its versions stay, compactly.
	// 0 keeps units for ever.
	UnitIdleTimeout time.Duration
	// HubInactiveAfter marks a hub inactive in status.hubs when no
	// heartbeat of it was received for that long; 0 never does.
	HubInactiveAfter time.Duration
	// HubDeleteAfter deletes a hub (stb hub delete) that has been inactive
	// for that long; 0, the default, never does.
	HubDeleteAfter time.Duration
	// ResyncTopic, when not empty, is where resync requests go: a bundle
	// that waited ResyncAfter for a version of its dependency that was
	// never read asks its hub for a complete bundle of that type again,
	// at most once per ResyncInterval per hub and type.
	ResyncTopic    string
	ResyncAfter    time.Duration
	ResyncInterval time.Duration
	// Conflation off writes every bundle in arrival order (the baseline).
	Conflation bool
	// DatabaseURL is the PostgreSQL URL.
	DatabaseURL string
	// DBPoolSize is the workers' connections, and so the number of workers.
	DBPoolSize int
	// CommitInterval is how often committed offsets are stored.
	CommitInterval time.Duration
	// JobTimeout bounds one bundle's transaction.
	JobTimeout time.Duration
	// BatchWait is how long a worker waits for more small jobs to share
	// its transaction when no other unit is ready (dispatcher.Config).
	BatchWait time.Duration
	// ShutdownTimeout bounds a graceful shutdown, final commit included:
	// Run returns within it (plus closing the clients).
	ShutdownTimeout time.Duration
	// Migrate applies the database migrations in New.
	Migrate bool
	// HTTPAddr serves only what Kubernetes and Prometheus need: /metrics,
	// /healthz and /readyz. Empty disables.
	HTTPAddr string
	// AdminAddr serves the operator's console: the status page,
	// /debug/units and pprof (whose /cmdline shows the command line).
	// Loopback by default; empty disables.
	AdminAddr string
	// AdminTokenFile, when not empty, names a file holding a token that
	// every admin request must carry as "Authorization: Bearer <token>"
	// (a Kubernetes Secret mounted as a file; white space around it is
	// ignored). New reads it once.
	AdminTokenFile string
}

// Defaults that are the bridge's own; the others come from the packages
// that own them (dispatcher.DefaultJobTimeout, committer.DefaultInterval).
const (
	DefaultDatabaseURL       = "postgres://postgres@127.0.0.1:5432/postgres?sslmode=disable"
	DefaultMaxBundleBytes    = 4 << 20
	DefaultMaxDeltaBytes     = 1 << 20
	DefaultMaxBufferedBytes  = 512 << 20
	DefaultDependencyTimeout = 5 * time.Minute
	DefaultUnitIdleTimeout   = 10 * time.Minute
	DefaultHubInactiveAfter  = 5 * time.Minute
	DefaultResyncAfter       = 10 * time.Second
	DefaultResyncInterval    = time.Minute
	DefaultShutdownTimeout   = 30 * time.Second
	DefaultAdminAddr         = "127.0.0.1:8081"
)

// DefaultPoolSize is 2 × CPUs, at least 4 (DESIGN.md §6).
func DefaultPoolSize() int { return max(4, 2*runtime.NumCPU()) }

// DefaultConfig returns the configuration of `stb run` without flags.
func DefaultConfig() Config {
	return Config{
		KafkaBrokers:      "127.0.0.1:9092",
		KafkaGroupID:      "stb",
		KafkaTopics:       []string{"status"},
		KafkaProperties:   map[string]string{},
		AutoOffsetReset:   "earliest",
		TypePrefix:        transport.DefaultTypePrefix,
		VerifySource:      true,
		Profiles:          []string{ProfileSTB, ProfileGlobalHub},
		MaxBundleBytes:    DefaultMaxBundleBytes,
		MaxDeltaBytes:     DefaultMaxDeltaBytes,
		MaxBufferedBytes:  DefaultMaxBufferedBytes,
		DependencyTimeout: DefaultDependencyTimeout,
		UnitIdleTimeout:   DefaultUnitIdleTimeout,
		HubInactiveAfter:  DefaultHubInactiveAfter,
		ResyncAfter:       DefaultResyncAfter,
		ResyncInterval:    DefaultResyncInterval,
		Conflation:        true,
		DatabaseURL:       DefaultDatabaseURL,
		DBPoolSize:        DefaultPoolSize(),
		CommitInterval:    committer.DefaultInterval,
		JobTimeout:        dispatcher.DefaultJobTimeout,
		BatchWait:         dispatcher.DefaultBatchWait,
		ShutdownTimeout:   DefaultShutdownTimeout,
		Migrate:           true,
		HTTPAddr:          ":8080",
		AdminAddr:         DefaultAdminAddr,
	}
}

// Validate checks the configuration without changing it or touching
// anything outside it. The components check their own parts again in New.
func (c Config) Validate() error {
	var errs []error
	if c.KafkaBrokers == "" {
		errs = append(errs, errors.New("--kafka-brokers is required"))
	}
	if len(c.KafkaTopics) == 0 {
		errs = append(errs, errors.New("--kafka-topics is required"))
	}
	if c.DatabaseURL == "" {
		errs = append(errs, errors.New("--database-url is required"))
	}
	if c.DBPoolSize < 1 {
		errs = append(errs, errors.New("--db-pool-size must be at least 1"))
	}
	if c.CommitInterval <= 0 || c.ShutdownTimeout <= 0 || c.JobTimeout <= 0 {
		errs = append(errs, errors.New("--commit-interval, --job-timeout and --shutdown-timeout must be positive"))
	}
	if c.BatchWait < 0 || c.BatchWait > time.Second {
		errs = append(errs, fmt.Errorf("--batch-wait must be between 0 and 1s, got %v", c.BatchWait))
	}
	if c.MaxBundleBytes < 0 || c.MaxDeltaBytes < 0 || c.MaxBufferedBytes < 0 || c.DependencyTimeout < 0 {
		errs = append(errs, errors.New("--max-bundle-bytes, --max-delta-bytes, --max-buffered-bytes and --dependency-timeout must not be negative"))
	}
	if c.UnitIdleTimeout < 0 || c.HubInactiveAfter < 0 || c.HubDeleteAfter < 0 {
		errs = append(errs, errors.New("--unit-idle-timeout, --hub-inactive-after and --hub-delete-after must not be negative"))
	}
	if c.ResyncTopic != "" && (c.ResyncAfter <= 0 || c.ResyncInterval <= 0) {
		errs = append(errs, errors.New("--resync-after and --resync-interval must be positive with --resync-topic"))
	}
	if c.HubDeleteAfter > 0 && c.HubInactiveAfter == 0 {
		errs = append(errs, errors.New("--hub-delete-after needs --hub-inactive-after: only inactive hubs are deleted"))
	}
	if _, _, err := c.profiles(); err != nil {
		errs = append(errs, err)
	}
	if c.AdminAddr != "" && c.AdminAddr == c.HTTPAddr {
		errs = append(errs, errors.New("--admin-addr must differ from --http-addr: the console must not be served where probes and scrapers reach"))
	}
	switch c.AutoOffsetReset {
	case "earliest", "latest":
	default:
		errs = append(errs, fmt.Errorf("--kafka-auto-offset-reset must be earliest or latest, got %q", c.AutoOffsetReset))
	}
	return errors.Join(errs...)
}

// The wire profiles of Config.Profiles.
const (
	ProfileSTB       = "stb"
	ProfileGlobalHub = "globalhub"
)

// Registry returns the bundle types of the wire profiles c turns on, and
// the global-hub profile's state when it is on (nil otherwise): what
// decodes and writes bundles, for the bridge and for a replay of dead
// letters alike.
func (c Config) Registry() (*dbsyncers.Registry, *transport.GlobalHub, error) {
	stb, globalHub, err := c.profiles()
	if err != nil {
		return nil, nil, err
	}
	reg, err := dbsyncers.ForProfiles(stb, globalHub)
	if err != nil {
		return nil, nil, err
	}
	var gh *transport.GlobalHub
	if globalHub {
		gh = transport.NewGlobalHub()
	}
	return reg, gh, nil
}

// profiles reports which wire profiles c turns on.
func (c Config) profiles() (stb, globalHub bool, err error) {
	for _, p := range c.Profiles {
		switch p {
		case ProfileSTB:
			stb = true
		case ProfileGlobalHub:
			globalHub = true
		default:
			return false, false, fmt.Errorf("--profiles: unknown profile %q (want %s, %s or both)", p, ProfileSTB, ProfileGlobalHub)
		}
	}
	if !stb && !globalHub {
		return false, false, fmt.Errorf("--profiles: want %s, %s or both", ProfileSTB, ProfileGlobalHub)
	}
	return stb, globalHub, nil
}
