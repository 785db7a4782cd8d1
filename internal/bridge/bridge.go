package bridge

import (
	"context"
	"errors"
	"fmt"
	"math/rand/v2"
	"net"
	"net/http"
	"os"
	"strings"
	"sync/atomic"
	"time"

	"github.com/jackc/pgx/v5/pgxpool"
	"github.com/prometheus/client_golang/prometheus"
	"github.com/prometheus/client_golang/prometheus/collectors"
	"go.uber.org/zap"

	"github.com/stbridge/stb/conflation"
	"github.com/stbridge/stb/dispatcher"
	"github.com/stbridge/stb/internal/buildinfo"
	"github.com/stbridge/stb/internal/console"
	"github.com/stbridge/stb/internal/hubs"
	"github.com/stbridge/stb/internal/profiles"
	"github.com/stbridge/stb/internal/replay"
	"github.com/stbridge/stb/pkg/bundle"
	"github.com/stbridge/stb/pkg/committer"
	"github.com/stbridge/stb/pkg/db"
	"github.com/stbridge/stb/pkg/deadletter"
	"github.com/stbridge/stb/pkg/transport"
)

// controlPoolSize is the connections of the pool that the committer, the
// dead-letter writer, readiness checks and start-up loads share, so that
// none of them ever waits behind the workers.
const controlPoolSize = 4

// replayPoolSize is the connections of the console's replay pool: its own,
// so that an operator replaying thousands of dead letters never takes the
// control pool's connections, and one, because the console runs one
// replay at a time and a replay holds one connection at a time (one
// transaction per letter).
const replayPoolSize = 1

// Deps are what the bridge takes from its caller besides Config.
type Deps struct {
	// Logger is the bridge's logger; nil logs nothing.
	Logger *zap.Logger
	// Registry receives every metric and is served on /metrics; nil makes
	// a fresh one (with the Go and process collectors).
	Registry *prometheus.Registry
}

// Bridge is the whole pipeline, wired: reader → conflation → dispatcher →
// committer, plus the HTTP server. Build it with New, run it once with
// Run, release it with Close.
type Bridge struct {
	cfg      Config
	logger   *zap.Logger
	registry *prometheus.Registry

	workPool    *pgxpool.Pool
	controlPool *pgxpool.Pool
	manager     *conflation.Manager
	committer   *committer.Committer
	reader      *transport.Reader
	dispatcher  *dispatcher.Dispatcher
	rejects     *deadletter.Queue
	// servers are the HTTP listeners: the public one (metrics, probes)
	// and the admin one (console), each optional.
	servers []*server
	// console is the admin listener's console, nil without one; Run runs
	// its overview refresh.
	console *console.Console
	// stateful are the families that keep state of their own per hub
	// (transport.Stateful: the global-hub profile's runs).
	stateful []transport.Stateful

	// readiness says what /readyz and the console report.
	readiness *readiness
	// hubs applies hub deletes and resets and sweeps hub states.
	hubs *hubs.Lifecycle
	// resyncs sends resync requests; nil without --resync-topic.
	resyncs *resyncPublisher
	// memory gives evicted units' memory back to the system; Run runs it.
	memory *memoryReleaser
	// replayPool is the console's, for its replays (replayPoolSize); nil
	// without the admin listener.
	replayPool *pgxpool.Pool

	closing atomic.Bool
}

// New connects to the database, migrates it if asked, restores the
// processed versions and builds every component; nothing runs yet. On
// error everything opened so far is closed again.
func New(ctx context.Context, cfg Config, deps Deps) (_ *Bridge, err error) {
	if err := cfg.Validate(); err != nil {
		return nil, err
	}
	b := &Bridge{cfg: cfg, logger: deps.Logger, registry: deps.Registry, memory: newMemoryReleaser()}
	if b.logger == nil {
		b.logger = zap.NewNop()
	}
	if b.registry == nil {
		b.registry = prometheus.NewRegistry()
		for _, c := range []prometheus.Collector{collectors.NewGoCollector(), collectors.NewProcessCollector(collectors.ProcessCollectorOpts{}), buildinfo.NewCollector()} {
			if err := b.registry.Register(c); err != nil {
				return nil, fmt.Errorf("register runtime metrics: %w", err)
			}
		}
	}
	defer func() {
		if err != nil {
			b.Close()
		}
	}()
	logger := b.logger

	if cfg.Migrate {
		from, to, err := db.Migrate(ctx, cfg.DatabaseURL, logger)
		if err != nil {
			return nil, err
		}
		logger.Info("database schema ready", zap.Int32("from", from), zap.Int32("to", to))
	}
	if b.workPool, err = db.Connect(ctx, cfg.DatabaseURL, int32(cfg.Dispatcher.Workers)); err != nil {
		return nil, err
	}
	if b.controlPool, err = db.Connect(ctx, cfg.DatabaseURL, controlPoolSize); err != nil {
		return nil, err
	}
	if !cfg.Migrate {
		// Migrate checked it; without it, the tables STB writes are
		// checked here, before anything is read.
		if err := db.CheckMigrated(ctx, b.controlPool); err != nil {
			return nil, err
		}
		if err := db.CheckSchema(ctx, b.controlPool); err != nil {
			return nil, err
		}
	}
	if cfg.AdminAddr != "" {
		if b.replayPool, err = db.Connect(ctx, cfg.DatabaseURL, replayPoolSize); err != nil {
			return nil, err
		}
	}

	reg, families, err := cfg.registry()
	if err != nil {
		return nil, err
	}
	for _, f := range families {
		if s, ok := f.(transport.Stateful); ok {
			b.stateful = append(b.stateful, s)
		}
	}
	var onResync func([]conflation.Resync)
	resyncCounters, err := newResyncCounters(b.registry)
	if err != nil {
		return nil, err
	}
	if cfg.ResyncTopic != "" {
		if b.resyncs, err = newResyncPublisher(cfg, logger.Named("resync"), resyncCounters); err != nil {
			return nil, err
		}
		onResync = b.resyncs.send
	}
	mcfg := cfg.Conflation.config()
	mcfg.Types, mcfg.Merge, mcfg.Decode = reg.Types(), reg.Mergers(), reg.Decode
	mcfg.OnEvict, mcfg.OnResync, mcfg.Registerer = b.evicted, onResync, b.registry
	// Lingering: only while the reader is far behind a partition's end,
	// and within half the buffer, so it never holds the reader paused.
	mcfg.CatchingUp = func(o bundle.Origin) (int64, bool) { return b.reader.Behind(o) }
	mcfg.LingerMaxBytes = cfg.Reader.MaxBufferedBytes / 2
	if b.manager, err = conflation.NewManager(mcfg); err != nil {
		return nil, err
	}
	// Requests made from now on are applied by the hub lifecycle; those
	// before are in the versions restored next.
	lastRequest, err := db.LastHubRequest(ctx, b.controlPool)
	if err != nil {
		return nil, err
	}
	b.hubs, err = hubs.New(cfg.Hubs, hubs.Deps{
		Pool: b.controlPool, DatabaseURL: cfg.DatabaseURL, Memory: memory{b.manager, b.stateful},
		After: lastRequest, Types: profiles.HubFencedTypes(), Scope: profiles.HubScope(),
		Logger: logger.Named("hubs"), Registerer: b.registry,
	})
	if err != nil {
		return nil, err
	}
	n, err := b.restoreVersions(ctx)
	if err != nil {
		return nil, err
	}
	logger.Info("restored processed versions", zap.Int("rows", n), zap.Int("hubs", b.manager.Dormant()))

	dead := deadletter.NewWriter(b.controlPool)
	if b.rejects, err = deadletter.NewQueue(deadletter.DefaultQueueConfig(), dead, logger.Named("deadletters")); err != nil {
		return nil, err
	}
	// The owner id tells this process's claims on status.transport rows
	// from those of other replicas and of its own earlier runs.
	store := committer.NewPGStore(b.controlPool, ownerID())
	b.committer, err = committer.New(cfg.Committer, committer.Deps{Store: store, Logger: logger.Named("committer"),
		Registerer: b.registry, TopicLabel: cfg.Reader.TopicLabels().Label})
	if err != nil {
		return nil, err
	}
	b.reader, err = transport.NewReader(cfg.Reader, transport.Deps{
		Decoder:   reg,
		Sink:      b.manager,
		Positions: positions{b.committer},
		Offsets:   offsets{store},
		Rejects:   b.rejects,
		Buffer:    buffered{b.manager, b.rejects},
		// Partitions may come from another replica, which wrote versions
		// these units have not seen: a compliance bundle read next would
		// otherwise wait for a clusterspolicies bundle written before the
		// stored position, which this bridge will never read.
		// Only the hubs of the assigned partitions, within the reader's
		// assignment deadline: this runs inside the rebalance callback.
		BeforeAssign: b.restorePartitions,
		Dropper:      b.manager,
		Families:     families,
		Logger:       logger.Named("transport"),
		Registerer:   b.registry,
	})
	if err != nil {
		return nil, err
	}
	dcfg := cfg.Dispatcher
	if cfg.Conflation.NoConflation {
		// The baseline is a per-record sink: one transaction per message.
		dcfg.BatchJobs, dcfg.BatchWait = 1, 0
	}
	b.dispatcher, err = dispatcher.New(dcfg, dispatcher.Deps{
		Pool: b.workPool, Manager: b.manager, Applier: reg, DeadLetters: dead,
		Logger: logger.Named("dispatcher"), Registerer: b.registry, Events: eventLetters(families),
	})
	if err != nil {
		return nil, err
	}
	b.readiness = &readiness{pool: b.controlPool, committer: b.committer, dispatcher: b.dispatcher, kafka: b.reader,
		databaseURL: cfg.DatabaseURL, logger: logger.Named("readiness")}
	var token string
	if cfg.AdminTokenFile != "" {
		raw, err := os.ReadFile(cfg.AdminTokenFile)
		if err != nil {
			return nil, fmt.Errorf("--admin-token-file: %w", err)
		}
		if token = strings.TrimSpace(string(raw)); token == "" {
			return nil, fmt.Errorf("--admin-token-file %s is empty", cfg.AdminTokenFile)
		}
	}
	// Listen now, so that a taken port fails the start, not later.
	for _, l := range []struct {
		name, addr string
		handler    func() http.Handler
	}{
		{"http", cfg.HTTPAddr, b.publicRoutes},
		{"admin", cfg.AdminAddr, func() http.Handler {
			b.console = b.newConsole(token)
			return b.console.Handler()
		}},
	} {
		if l.addr == "" {
			continue
		}
		ln, err := net.Listen("tcp", l.addr)
		if err != nil {
			return nil, fmt.Errorf("%s: %w", l.name, err)
		}
		// Every request's context ends when the server's does (endRequests),
		// so that a console action in flight, a replay holding the replay
		// pool's connection for up to two minutes, stops at the shutdown
		// rather than being waited for.
		reqCtx, endRequests := context.WithCancel(context.Background())
		b.servers = append(b.servers, &server{name: l.name, ln: ln, endRequests: endRequests,
			srv: &http.Server{Handler: l.handler(), ReadHeaderTimeout: 5 * time.Second,
				BaseContext: func(net.Listener) context.Context { return reqCtx }}})
	}
	return b, nil
}

// Close releases the listeners, the Kafka consumer (leaving its group),
// the resync producer and the pools, within closeGrace; safe to call more
// than once, and after Run, which closes them itself. A second call, such
// as a caller's deferred Close after Run, returns at once: waiting for the
// first would undo Run's bound on the shutdown.
func (b *Bridge) Close() {
	if !b.closing.CompareAndSwap(false, true) {
		return
	}
	ctx, cancel := context.WithTimeout(context.Background(), closeGrace)
	defer cancel()
	b.closeClients(ctx)
}

// closeClients closes every client at once, each in its own goroutine, and
// waits for them until ctx ends: they do not depend on one another (during
// Close the reader's revocation commits nothing), so each step has the
// whole of ctx as its bound, whatever the others take. A client that does
// not close in time, a consumer that cannot leave its group with Kafka
// gone, a pool whose connections hang with the database (pgx waits up to
// 15 s on each) or whose connection is still held (pgxpool's Close waits
// for every one: the console's replay pool during a replay), is logged and
// left behind for the process's exit. Nothing here is closed inline.
func (b *Bridge) closeClients(ctx context.Context) {
	for _, s := range b.servers { // already shut down by Run if it ran
		s.endRequests()
		_ = s.ln.Close()
	}
	type step struct {
		name string
		done chan struct{}
	}
	var steps []step
	run := func(name string, f func()) {
		s := step{name, make(chan struct{})}
		steps = append(steps, s)
		go func() {
			defer close(s.done)
			f()
		}()
	}
	if b.reader != nil {
		run("kafka consumer", func() { _ = b.reader.Close() })
	}
	if b.replayPool != nil {
		// A console replay may hold its connection for up to the console's
		// action timeout (two minutes): never waited for past ctx.
		run("console replay pool", b.replayPool.Close)
	}
	if b.resyncs != nil {
		run("resync producer", b.resyncs.close)
	}
	if b.workPool != nil {
		run("workers' database pool", b.workPool.Close)
	}
	if b.controlPool != nil {
		run("control database pool", b.controlPool.Close)
	}
	for _, s := range steps {
		select {
		case <-s.done:
		case <-ctx.Done():
			select {
			case <-s.done: // closed while another step was waited for
			default:
				b.logger.Error("closing timed out; exiting without", zap.String("client", s.name))
			}
		}
	}
}

// server is one HTTP listener of the bridge.
type server struct {
	name string
	ln   net.Listener
	srv  *http.Server
	// endRequests cancels the contexts of the requests in flight (the
	// server's BaseContext), at the shutdown.
	endRequests context.CancelFunc
}

// HTTPAddr returns the address the public HTTP server (metrics, probes)
// listens on, or "" when it is disabled.
func (b *Bridge) HTTPAddr() string { return b.addr("http") }

// AdminAddr returns the address of the admin console, or "" when it is
// disabled.
func (b *Bridge) AdminAddr() string { return b.addr("admin") }

func (b *Bridge) addr(name string) string {
	for _, s := range b.servers {
		if s.name == name {
			return s.ln.Addr().String()
		}
	}
	return ""
}

// Gatherer returns the bridge's metrics, exactly as /metrics serves them.
func (b *Bridge) Gatherer() prometheus.Gatherer { return b.registry }

// restoreVersions tells the conflation units the versions the database
// holds (stb.bundle_versions), as processed, at start; on assignment
// restorePartitions does it for the hubs of the assigned partitions.
// Restoring only moves a unit's versions forward.
func (b *Bridge) restoreVersions(ctx context.Context) (int, error) {
	versions, err := db.LoadVersions(ctx, b.controlPool)
	if err != nil {
		return 0, err
	}
	b.restore(versions)
	return len(versions), nil
}

// restorePartitions is restoreVersions for the hubs read from the given
// partitions, the reader's BeforeAssign.
func (b *Bridge) restorePartitions(ctx context.Context, parts []transport.PartitionID) error {
	topics, numbers := make([]string, len(parts)), make([]int32, len(parts))
	for i, p := range parts {
		topics[i], numbers[i] = p.Topic, p.Partition
	}
	versions, err := db.PartitionVersions(ctx, b.controlPool, topics, numbers)
	if err != nil {
		return err
	}
	b.restore(versions)
	return nil
}

// restore records stored versions in the conflation units and the state
// the families keep of them (the global-hub agents' runs).
func (b *Bridge) restore(versions []db.StoredVersion) {
	memory{b.manager, b.stateful}.Restore(versions)
}

// evicted is conflation.Config.OnEvict: the families shrink what they
// keep of the hubs whose units were evicted (dormant) to what the
// database keeps of them, and the memory releaser counts the evictions.
func (b *Bridge) evicted(n int) {
	for _, f := range b.stateful {
		f.Evict(b.manager.IsDormant)
	}
	b.memory.evicted(n)
}

// memory is what a hub delete or reset changes in the bridge's memory
// (hubs.Memory): the conflation units and the families' own state.
type memory struct {
	manager  *conflation.Manager
	stateful []transport.Stateful
}

// ForgetHub drops the hub's unit and versions, and what the families
// keep of it.
func (m memory) ForgetHub(hub string) {
	m.manager.ForgetHub(hub)
	for _, f := range m.stateful {
		f.Forget(hub)
	}
}

// Restore records stored versions as processed, and the families' state
// stored with them.
func (m memory) Restore(versions []db.StoredVersion) {
	for _, v := range versions {
		m.manager.Restore(v.Hub, v.Type, v.Version)
		for _, f := range m.stateful {
			f.Restore(v.Hub, v.Type, v.Version, v.Origin, v.FamilyState)
		}
	}
}

// newConsole returns the operator's console of the bridge: its replay
// buttons decode and fetch as the bridge's reader does.
func (b *Bridge) newConsole(token string) *console.Console {
	rcfg := replay.DefaultConfig()
	rcfg.Reader, rcfg.Profiles = b.cfg.Reader, b.cfg.Profiles
	return console.New(console.Deps{
		Units: b.manager, Partitions: b.committer, Readiness: b.readiness, HubStates: b.hubs,
		Pool: b.controlPool, Replay: &rcfg, ReplayPool: b.replayPool, Token: token, Logger: b.logger,
	})
}

// eventLetters returns the families whose bundles keep their event's
// attributes beside the data (bundle.Bundle.Attrs), for the workers' dead
// letters (dispatcher.EventLetters).
func eventLetters(families []transport.Family) []dispatcher.EventLetters {
	var out []dispatcher.EventLetters
	for _, f := range families {
		if e, ok := f.(dispatcher.EventLetters); ok {
			out = append(out, e)
		}
	}
	return out
}

// ownerID returns an id for this process among the bridges sharing a
// database: host name (the pod name on Kubernetes), process id and a
// random suffix, so a restarted process never passes for its predecessor.
func ownerID() string {
	host, err := os.Hostname()
	if err != nil || host == "" {
		host = "unknown-host"
	}
	return fmt.Sprintf("%s/%d/%08x", host, os.Getpid(), rand.Uint32())
}

// errHTTP wraps a failure of the HTTP server.
var errHTTP = errors.New("http")
