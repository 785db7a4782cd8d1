package hubs

import (
	"context"
	"errors"
	"fmt"
	"slices"
	"sync/atomic"
	"time"

	"github.com/jackc/pgx/v5"
	"github.com/jackc/pgx/v5/pgxpool"
	"github.com/prometheus/client_golang/prometheus"
	"go.uber.org/zap"

	"github.com/stbridge/stb/pkg/bundle"
	"github.com/stbridge/stb/pkg/db"
)

// Hub lifecycle timing: requests are polled this often besides being
// announced, and inactive hubs looked for every tenth of
// --hub-inactive-after, between these bounds.
const (
	hubRequestPoll   = 5 * time.Second
	minHubSweep      = time.Second
	maxHubSweep      = 30 * time.Second
	listenRetryAfter = 5 * time.Second
)

// Config is the hub lifecycle's timing. Start from DefaultConfig.
type Config struct {
	// InactiveAfter marks a hub inactive in stb.hubs when no heartbeat
	// of it was received for that long; 0 never does.
	InactiveAfter time.Duration
	// DeleteAfter deletes a hub (as stb hub delete does) that has been
	// inactive for that long; 0, the default, never does.
	DeleteAfter time.Duration
}

// DefaultPassTimeout bounds one pass over the hub requests and one sweep:
// a database that hangs fails the pass, which the next poll or sweep
// retries, instead of holding the lifecycle's goroutine (and a delete's
// locks) until it answers. A delete waits for the writes in progress on
// its hub, each bounded by --job-timeout (60 s).
const DefaultPassTimeout = 2 * time.Minute

// DefaultInactiveAfter is Config.InactiveAfter by default.
const DefaultInactiveAfter = 5 * time.Minute

// DefaultConfig marks hubs inactive after DefaultInactiveAfter and never
// deletes them.
func DefaultConfig() Config { return Config{InactiveAfter: DefaultInactiveAfter} }

// Validate checks the configuration; it changes nothing.
func (c Config) Validate() error {
	if c.InactiveAfter < 0 || c.DeleteAfter < 0 {
		return errors.New("hubs: inactive-after and delete-after must not be negative")
	}
	if c.DeleteAfter > 0 && c.InactiveAfter == 0 {
		return errors.New("hubs: delete-after needs inactive-after: only inactive hubs are deleted")
	}
	return nil
}

// Memory is what the lifecycle changes in a bridge's memory when a hub
// is deleted or reset: the conflation units and the state the families
// keep per hub (transport.Stateful: the global-hub profile's runs).
type Memory interface {
	// ForgetHub drops what the conflation units hold of the hub: its
	// unit's unwritten bundles (a write in flight finishes, and its
	// bundles are released when reported) and the versions known of it,
	// evicted or not (conflation.Manager.ForgetHub), and what the
	// families keep of it (transport.Stateful.Forget: the global-hub
	// agent's runs). It does not drop what the reader has not handed to
	// a unit yet (a message being decoded, a chunked event being
	// assembled): a bundle
	// of the hub inserted afterwards starts a new unit that knows only
	// the versions Restore records.
	ForgetHub(hub string)
	// Restore records versions stored in the database as processed;
	// it only moves versions forward.
	Restore(versions []db.StoredVersion)
}

// Deps are the lifecycle's collaborators.
type Deps struct {
	// Pool is the database; DatabaseURL opens the connection that
	// listens for announced requests.
	Pool        *pgxpool.Pool
	DatabaseURL string
	// Memory is what a request drops and restores.
	Memory Memory
	// After is the newest request already applied (db.LastHubRequest,
	// read before the versions were loaded).
	After int64
	// Types are the bundle types with a hub-level version
	// (profiles.HubFencedTypes): after a delete the bridge's memory fences
	// each of them at the tombstones' incarnation, also the types the hub
	// never sent, which have no tombstone in the database. The key-fenced
	// types are left out: the hub's next bundle of theirs is taken.
	Types []string
	// Scope is what a delete after Config.DeleteAfter needs to know of the
	// status families (profiles.HubScope).
	Scope db.HubScope
	// Logger; nil logs nothing.
	Logger *zap.Logger
	// Registerer receives the hub metrics; required.
	Registerer prometheus.Registerer
}

// Lifecycle applies hub deletes and resets to what a bridge holds,
// marks hubs inactive, deletes them after Config.DeleteAfter, and counts
// hubs by state (README "Hub lifecycle"). One goroutine runs it; every
// replica runs one: marking and deleting are idempotent.
type Lifecycle struct {
	cfg    Config
	pool   *pgxpool.Pool
	url    string
	memory Memory
	logger *zap.Logger
	// after is the newest request applied; the requests after it are
	// read when one is announced, and every hubRequestPoll.
	after int64
	// forgotten is the newest request whose hub was dropped from memory
	// (its versions may not be restored yet).
	forgotten int64
	// types are the bundle types a delete fences in memory (Deps.Types).
	types []string
	// scope is Deps.Scope, for the deletes after Config.DeleteAfter.
	scope db.HubScope
	// passTimeout bounds one pass of requests or one sweep (DefaultPassTimeout).
	passTimeout time.Duration

	states  atomic.Pointer[Counts]
	applied *prometheus.CounterVec
	marked  prometheus.Counter
	deleted prometheus.Counter
}

// Counts are the hubs by state and when they were counted (zero before
// the first sweep).
type Counts struct {
	db.HubStates
	At time.Time
}

// New returns a lifecycle; nothing runs before Run.
func New(cfg Config, deps Deps) (*Lifecycle, error) {
	if err := cfg.Validate(); err != nil {
		return nil, err
	}
	h := &Lifecycle{
		cfg: cfg, pool: deps.Pool, url: deps.DatabaseURL, memory: deps.Memory, logger: deps.Logger,
		after: deps.After, types: deps.Types, scope: deps.Scope, passTimeout: DefaultPassTimeout,
		applied: prometheus.NewCounterVec(prometheus.CounterOpts{
			Namespace: "stb", Subsystem: "hubs", Name: "requests_applied_total",
			Help: "Hub deletes and resets (stb hub delete|reset, --hub-delete-after) whose hub this bridge dropped from memory, by action.",
		}, []string{"action"}),
		marked: prometheus.NewCounter(prometheus.CounterOpts{
			Namespace: "stb", Subsystem: "hubs", Name: "marked_inactive_total",
			Help: "Hubs this bridge marked inactive: no heartbeat received for --hub-inactive-after.",
		}),
		deleted: prometheus.NewCounter(prometheus.CounterOpts{
			Namespace: "stb", Subsystem: "hubs", Name: "deleted_inactive_total",
			Help: "Hubs this bridge deleted after --hub-delete-after of inactivity.",
		}),
	}
	byState := prometheus.NewGaugeVec(prometheus.GaugeOpts{
		Namespace: "stb", Name: "hubs",
		Help: "Hubs in stb.hubs by state (active, inactive, deleted), as counted at the last sweep; every replica reports the same figures, so aggregate with max.",
	}, []string{"state"})
	if h.logger == nil {
		h.logger = zap.NewNop()
	}
	h.states.Store(&Counts{})
	for _, c := range []prometheus.Collector{h.applied, h.marked, h.deleted, statesCollector{h, byState}} {
		if err := deps.Registerer.Register(c); err != nil {
			return nil, fmt.Errorf("hubs: register metrics: %w", err)
		}
	}
	for _, a := range []db.HubAction{db.DeleteHub, db.ResetHub} {
		h.applied.WithLabelValues(string(a))
	}
	return h, nil
}

// statesCollector serves stb_hubs from the last sweep's counts.
type statesCollector struct {
	h   *Lifecycle
	vec *prometheus.GaugeVec
}

func (c statesCollector) Describe(ch chan<- *prometheus.Desc) { c.vec.Describe(ch) }

func (c statesCollector) Collect(ch chan<- prometheus.Metric) {
	s := c.h.states.Load()
	c.vec.WithLabelValues(string(db.HubActive)).Set(float64(s.Active))
	c.vec.WithLabelValues(string(db.HubInactive)).Set(float64(s.Inactive))
	c.vec.WithLabelValues(string(db.HubDeleted)).Set(float64(s.Deleted))
	c.vec.Collect(ch)
}

// Counts returns the hub counts of the last sweep.
func (h *Lifecycle) Counts() Counts { return *h.states.Load() }

func (h *Lifecycle) sweepInterval() time.Duration {
	return min(max(h.cfg.InactiveAfter/10, minHubSweep), maxHubSweep)
}

// Run applies requests as they are announced (LISTEN) or found (polling,
// should a notification be missed or the listening connection down) and
// sweeps hub states, until ctx ends. Failures are logged and retried: a
// database outage must not stop the bridge, which has its own checks.
func (h *Lifecycle) Run(ctx context.Context) error {
	var (
		conn        *pgx.Conn
		nextListen  time.Time
		nextSweep   time.Time
		nextPoll    time.Time
		logger      = h.logger
		listenError error
	)
	defer func() {
		if conn != nil {
			_ = conn.Close(context.Background())
		}
	}()
	for ctx.Err() == nil {
		now := time.Now()
		if conn == nil && !now.Before(nextListen) {
			c, err := h.listen(ctx)
			if err != nil {
				if ctx.Err() != nil {
					break
				}
				if listenError == nil || listenError.Error() != err.Error() {
					logger.Warn("cannot listen for hub requests; polling every "+hubRequestPoll.String(), zap.Error(err))
				}
				listenError, nextListen = err, now.Add(listenRetryAfter)
			} else {
				conn, listenError = c, nil
				nextPoll = now // catch up with what was missed
			}
		}
		if !now.Before(nextPoll) {
			if err := h.bounded(ctx, h.applyRequests); err != nil && ctx.Err() == nil {
				logger.Warn("hub requests not applied; retrying", zap.Error(err))
			}
			nextPoll = now.Add(hubRequestPoll)
		}
		if !now.Before(nextSweep) {
			if err := h.bounded(ctx, h.sweep); err != nil && ctx.Err() == nil {
				logger.Warn("hub sweep failed; retrying", zap.Error(err))
			}
			nextSweep = time.Now().Add(h.sweepInterval())
		}
		wait := min(time.Until(nextPoll), time.Until(nextSweep))
		if conn == nil {
			wait = min(wait, time.Until(nextListen))
			sleep(ctx, wait)
			continue
		}
		wctx, cancel := context.WithTimeout(ctx, max(wait, time.Millisecond))
		_, err := conn.WaitForNotification(wctx)
		cancel()
		switch {
		case err == nil:
			nextPoll = time.Now() // announced: read it now
		case ctx.Err() != nil:
		case errors.Is(err, context.DeadlineExceeded):
		default:
			logger.Warn("lost the connection listening for hub requests", zap.Error(err))
			_ = conn.Close(context.Background())
			conn, nextListen = nil, time.Now().Add(listenRetryAfter)
		}
	}
	return nil
}

// bounded runs a pass with passTimeout.
func (h *Lifecycle) bounded(ctx context.Context, pass func(context.Context) error) error {
	ctx, cancel := context.WithTimeout(ctx, h.passTimeout)
	defer cancel()
	return pass(ctx)
}

func (h *Lifecycle) listen(ctx context.Context) (*pgx.Conn, error) {
	cctx, cancel := context.WithTimeout(ctx, 10*time.Second)
	defer cancel()
	conn, err := pgx.Connect(cctx, h.url)
	if err != nil {
		return nil, err
	}
	if _, err := conn.Exec(cctx, "LISTEN "+db.HubRequestChannel); err != nil {
		_ = conn.Close(context.Background())
		return nil, err
	}
	return conn, nil
}

func sleep(ctx context.Context, d time.Duration) {
	t := time.NewTimer(max(d, time.Millisecond))
	defer t.Stop()
	select {
	case <-ctx.Done():
	case <-t.C:
	}
}

// applyRequests drops from memory each hub deleted or reset since the last
// request applied, and restores what the database now holds for it: a
// delete's tombstones, nothing after a reset.
func (h *Lifecycle) applyRequests(ctx context.Context) error {
	reqs, err := db.HubRequestsAfter(ctx, h.pool, h.after)
	if err != nil {
		return err
	}
	for _, r := range reqs {
		if err := h.apply(ctx, r); err != nil {
			return err
		}
		h.after = r.ID
	}
	return nil
}

func (h *Lifecycle) apply(ctx context.Context, r db.HubRequestRecord) error {
	// Forget first, then load: a bundle of the hub written meanwhile (its
	// newer incarnation coming back) is then in what is loaded, and
	// restoring only moves versions forward.
	// A retry after a failed load must not forget again what the hub sent
	// since: that is not what was deleted.
	if r.ID > h.forgotten {
		h.memory.ForgetHub(r.Hub)
		h.forgotten = r.ID
	}
	versions, err := db.LoadHubVersions(ctx, h.pool, r.Hub)
	if err != nil {
		return err
	}
	if r.Action == db.DeleteHub {
		versions = fenceEveryType(versions, h.types)
	}
	h.memory.Restore(versions)
	h.applied.WithLabelValues(string(r.Action)).Inc()
	h.logger.Info("hub dropped from memory", zap.String("hub", r.Hub), zap.String("action", string(r.Action)),
		zap.Int64("request", r.ID), zap.Int("versions_restored", len(versions)))
	return nil
}

// fenceEveryType adds to a deleted hub's stored versions, for each of
// types it has no row of, the tombstone its rows have: the database keeps
// tombstones only for the types the hub had written, and the bridge's
// memory fences the others too, so that a bundle of the deleted
// incarnation of a type the hub had not written yet (still in Kafka, or
// read by a lagging replica) cannot bring the hub back. types leaves out
// the key-fenced types, whose bundles have no hub-level version to fence
// (Deps.Types). Without a tombstone among versions (the hub had none, or
// its newer incarnation replaced them all) there is nothing to fence.
func fenceEveryType(versions []db.StoredVersion, types []string) []db.StoredVersion {
	var tomb *db.StoredVersion
	has := make(map[string]bool, len(versions))
	for i, v := range versions {
		has[v.Type] = true
		if v.Version.Generation == db.TombstoneGeneration && (tomb == nil || v.Version.Newer(tomb.Version)) {
			tomb = &versions[i]
		}
	}
	if tomb == nil {
		return versions
	}
	out := slices.Clip(versions)
	for _, typ := range types {
		if !has[typ] {
			out = append(out, db.StoredVersion{Hub: tomb.Hub, Type: typ, Version: tomb.Version,
				Origin: bundle.Origin{Partition: -1, Offset: -1}})
		}
	}
	return out
}

// sweep marks hubs inactive, deletes those inactive for
// --hub-delete-after, and counts hubs by state.
func (h *Lifecycle) sweep(ctx context.Context) error {
	cfg := h.cfg
	if cfg.InactiveAfter > 0 {
		n, err := db.MarkInactiveHubs(ctx, h.pool, cfg.InactiveAfter)
		if err != nil {
			return err
		}
		if n > 0 {
			h.marked.Add(float64(n))
			h.logger.Info("hubs marked inactive", zap.Int64("hubs", n), zap.Duration("no_heartbeat_for", cfg.InactiveAfter))
		}
	}
	if cfg.DeleteAfter > 0 {
		hubs, err := db.HubsInactiveFor(ctx, h.pool, cfg.DeleteAfter)
		if err != nil {
			return err
		}
		for _, hub := range hubs {
			res, err := db.ApplyHubRequest(ctx, h.pool, db.HubRequest{
				Hub: hub, Action: db.DeleteHub, RequestedBy: "--hub-delete-after", InactiveFor: cfg.DeleteAfter,
				Scope: h.scope,
			})
			if err != nil {
				return err
			}
			if !res.Skipped {
				h.deleted.Inc()
				h.logger.Info("inactive hub deleted", zap.String("hub", hub), zap.Int64("rows_removed", res.Removed),
					zap.Uint64("tombstone_incarnation", res.Tombstone), zap.Duration("inactive_for_at_least", cfg.DeleteAfter))
			}
		}
	}
	s, err := db.CountHubStates(ctx, h.pool)
	if err != nil {
		return err
	}
	h.states.Store(&Counts{HubStates: s, At: time.Now()})
	return nil
}
