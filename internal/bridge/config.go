package bridge

import (
	"errors"
	"fmt"
	"net"
	"runtime"
	"time"

	"github.com/stbridge/stb/dbsyncers"
	"github.com/stbridge/stb/dispatcher"
	"github.com/stbridge/stb/internal/hubs"
	"github.com/stbridge/stb/internal/profiles"
	"github.com/stbridge/stb/pkg/committer"
	"github.com/stbridge/stb/pkg/db"
	"github.com/stbridge/stb/pkg/transport"
)

// Config is everything the bridge is built from. It holds each
// component's own Config, as pgxpool.Config holds the connection's, so
// that every option has one definition and one default: the component's.
// cmd/stb fills it from flags and environment, starting from
// DefaultConfig; the demo, the bench and the tests start from
// DefaultConfig and change a few fields.
type Config struct {
	// Reader is the transport reader's: brokers, consumer group, topics
	// (an entry starting with ^ is a pattern), extra librdkafka
	// properties (secrets allowed: they are never logged), where a
	// partition without a stored offset starts, the type prefix, the
	// source check, the largest bundle and the backpressure threshold.
	Reader transport.Config
	// Conflation is the conflation manager's options: delta merging,
	// dependency timeout, idle units' eviction, resync waits, and
	// NoConflation (the per-record baseline). What the manager is wired
	// to (types, mergers, callbacks, metrics) New adds.
	Conflation ConflationOptions
	// Dispatcher is the dispatcher's. Workers is also the size of the
	// workers' connection pool (--db-pool-size). With NoConflation the
	// bridge writes one bundle per transaction whatever BatchJobs says.
	Dispatcher dispatcher.Config
	// Committer is the offset committer's: how often offsets are stored.
	Committer committer.Config
	// Hubs is the hub lifecycle's: when hubs become inactive and are
	// deleted.
	Hubs hubs.Config
	// Profiles are the wire formats read (profiles.Parse): "stb"
	// and "globalhub", both by default: the prefixes cannot be confused,
	// and the global-hub events only come from the topics subscribed.
	Profiles []string
	// Startup turns on the profiles' start-up steps
	// (profile.Profile.Startup), by the step's flag: e.g.
	// {"work-resync-topic": "status.resync"} asks every work agent for
	// its differing statuses at start-up. A step of a profile that is not
	// on is refused by Validate. Run runs the steps before it reads; a
	// failing one is logged, not fatal.
	Startup map[string]string
	// ResyncTopic, when not empty, is where resync requests go: a bundle
	// that waited Conflation.ResyncAfter for a version of its dependency
	// that was never read asks its hub for a complete bundle of that type
	// again, at most once per Conflation.ResyncInterval per hub and type.
	ResyncTopic string
	// DatabaseURL is the PostgreSQL URL.
	DatabaseURL string
	// ShutdownTimeout bounds a graceful shutdown, final commit included:
	// Run returns within it (plus closing the clients).
	ShutdownTimeout time.Duration
	// Migrate applies the database migrations in New.
	Migrate bool
	// HTTPAddr serves only what Kubernetes and Prometheus need: /metrics,
	// /healthz and /readyz. Empty disables.
	HTTPAddr string
	// AdminAddr serves the operator's console (package console).
	// Loopback by default; empty disables.
	AdminAddr string
	// AdminNoAuth lets AdminAddr listen beyond the loopback without
	// AdminTokenFile (an authenticating proxy in front of it); without it
	// Validate refuses that, since the console deletes hubs and serves
	// pprof.
	AdminNoAuth bool
	// AdminTokenFile, when not empty, names a file holding a token that
	// every admin request must carry as "Authorization: Bearer <token>"
	// (a Kubernetes Secret mounted as a file; white space around it is
	// ignored). New reads it once.
	AdminTokenFile string
}

// Defaults that are the bridge's own choices for a production service;
// the others come from the packages that own them (transport.DefaultConfig,
// dispatcher.DefaultConfig, committer.DefaultConfig, hubs.DefaultConfig).
// Where a component's zero means "off", the bridge turns it on here.
const (
	DefaultMaxDeltaBytes     = 1 << 20
	DefaultMaxBufferedBytes  = 512 << 20
	DefaultDependencyTimeout = 5 * time.Minute
	// DefaultLinger is the longest a unit of a partition far behind its
	// end holds what it takes before writing it (--linger): a catch-up of
	// 1,000 hubs × 240 rounds then writes each hub's state about 1.5 times
	// per type (4 with 1 s). A unit stops waiting once the reader has read
	// what the partition held when its newest bundle was read, so under
	// live load it waits far less (BENCHMARKS.md, issue 32).
	DefaultLinger          = 5 * time.Second
	DefaultUnitIdleTimeout = 10 * time.Minute
	DefaultResyncAfter     = 10 * time.Second
	DefaultResyncInterval  = time.Minute
	DefaultShutdownTimeout = 30 * time.Second
	DefaultAdminAddr       = "127.0.0.1:8081"
)

// DefaultPoolSize is 2 × CPUs, at least 4 (docs/design.md, Dispatcher and workers).
func DefaultPoolSize() int { return max(4, 2*runtime.NumCPU()) }

// DefaultConfig returns the configuration of `stb run` without flags.
func DefaultConfig() Config {
	reader := transport.DefaultConfig()
	reader.Brokers = "127.0.0.1:9092"
	reader.Topics = []string{"status"}
	reader.Properties = map[string]string{}
	reader.MaxBufferedBytes = DefaultMaxBufferedBytes
	return Config{
		Reader: reader,
		Conflation: ConflationOptions{
			MaxDeltaBytes:     DefaultMaxDeltaBytes,
			DependencyTimeout: DefaultDependencyTimeout,
			IdleTimeout:       DefaultUnitIdleTimeout,
			ResyncAfter:       DefaultResyncAfter,
			ResyncInterval:    DefaultResyncInterval,
			Linger:            DefaultLinger,
		},
		Dispatcher:      dispatcher.DefaultConfig(DefaultPoolSize()),
		Committer:       committer.DefaultConfig(),
		Hubs:            hubs.DefaultConfig(),
		Profiles:        profiles.Default(),
		DatabaseURL:     db.DefaultURL,
		ShutdownTimeout: DefaultShutdownTimeout,
		Migrate:         true,
		HTTPAddr:        ":8080",
		AdminAddr:       DefaultAdminAddr,
	}
}

// Validate checks the configuration without changing it or touching
// anything outside it, in the words of the flags that set it. The
// components check their own parts again in New.
func (c Config) Validate() error {
	var errs []error
	if c.Reader.Brokers == "" {
		errs = append(errs, errors.New("--kafka-brokers is required"))
	}
	if len(c.Reader.Topics) == 0 {
		errs = append(errs, errors.New("--kafka-topics is required"))
	}
	if c.DatabaseURL == "" {
		errs = append(errs, errors.New("--database-url is required"))
	}
	if c.Dispatcher.Workers < 1 {
		errs = append(errs, errors.New("--db-pool-size must be at least 1"))
	}
	if c.Committer.Interval <= 0 || c.ShutdownTimeout <= 0 || c.Dispatcher.JobTimeout <= 0 {
		errs = append(errs, errors.New("--commit-interval, --job-timeout and --shutdown-timeout must be positive"))
	}
	if c.Dispatcher.BatchWait < 0 || c.Dispatcher.BatchWait > time.Second {
		errs = append(errs, fmt.Errorf("--batch-wait must be between 0 and 1s, got %v", c.Dispatcher.BatchWait))
	}
	if c.Reader.MaxBundleBytes < 0 || c.Conflation.MaxDeltaBytes < 0 || c.Reader.MaxBufferedBytes < 0 || c.Conflation.DependencyTimeout < 0 || c.Conflation.Linger < 0 {
		errs = append(errs, errors.New("--max-bundle-bytes, --max-delta-bytes, --max-buffered-bytes, --dependency-timeout and --linger must not be negative"))
	}
	if c.Conflation.IdleTimeout < 0 || c.Hubs.InactiveAfter < 0 || c.Hubs.DeleteAfter < 0 {
		errs = append(errs, errors.New("--unit-idle-timeout, --hub-inactive-after and --hub-delete-after must not be negative"))
	}
	if c.ResyncTopic != "" && (c.Conflation.ResyncAfter <= 0 || c.Conflation.ResyncInterval <= 0) {
		errs = append(errs, errors.New("--resync-after and --resync-interval must be positive with --resync-topic"))
	}
	if c.Hubs.DeleteAfter > 0 && c.Hubs.InactiveAfter == 0 {
		errs = append(errs, errors.New("--hub-delete-after needs --hub-inactive-after: only inactive hubs are deleted"))
	}
	if set, err := profiles.Parse(c.Profiles); err != nil {
		errs = append(errs, fmt.Errorf("--profiles: %w", err))
	} else if _, err := set.Startup(c.Startup); err != nil {
		errs = append(errs, err)
	}
	if c.AdminAddr != "" && c.AdminTokenFile == "" && !c.AdminNoAuth && !loopback(c.AdminAddr) {
		errs = append(errs, fmt.Errorf("--admin-addr %s listens beyond this machine without --admin-token-file: whoever reaches it "+
			"may delete hubs, purge and replay dead letters and read pprof; set --admin-token-file, listen on 127.0.0.1, "+
			"or pass --admin-no-auth if a proxy in front of it authenticates", c.AdminAddr))
	}
	if c.AdminAddr != "" && c.AdminAddr == c.HTTPAddr {
		errs = append(errs, errors.New("--admin-addr must differ from --http-addr: the console must not be served where probes and scrapers reach"))
	}
	switch c.Reader.AutoOffsetReset {
	case "earliest", "latest":
	default:
		errs = append(errs, fmt.Errorf("--kafka-auto-offset-reset must be earliest or latest, got %q", c.Reader.AutoOffsetReset))
	}
	return errors.Join(errs...)
}

// registry returns the bundle types of the wire profiles c turns on and
// their families, new ones for this bridge's reader.
func (c Config) registry() (*dbsyncers.Registry, []transport.Family, error) {
	set, err := profiles.Parse(c.Profiles)
	if err != nil {
		return nil, nil, fmt.Errorf("--profiles: %w", err)
	}
	reg, err := set.Registry()
	if err != nil {
		return nil, nil, err
	}
	return reg, set.Families(), nil
}

// loopback reports whether addr (host:port) listens on the loopback only:
// "localhost" or a loopback IP. An empty host listens on every interface.
func loopback(addr string) bool {
	host, _, err := net.SplitHostPort(addr)
	if err != nil {
		return false
	}
	if host == "localhost" {
		return true
	}
	ip := net.ParseIP(host)
	return ip != nil && ip.IsLoopback()
}
