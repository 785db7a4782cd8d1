package bridge

import (
	"context"
	"errors"
	"sync/atomic"
	"time"

	"github.com/jackc/pgx/v5"
	"github.com/prometheus/client_golang/prometheus"
	"go.uber.org/zap"

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

// hubLifecycle applies hub deletes and resets to what this bridge holds,
// marks hubs inactive, deletes them after --hub-delete-after, and counts
// hubs by state (README "Hub lifecycle"). One goroutine runs it; every
// replica runs one: marking and deleting are idempotent.
type hubLifecycle struct {
	b *Bridge
	// after is the newest request applied; the requests after it are
	// read when one is announced, and every hubRequestPoll.
	after int64
	// forgotten is the newest request whose hub was dropped from memory
	// (its versions may not be restored yet).
	forgotten int64
	// types are the bundle types a delete leaves tombstones for.
	types []string

	states  atomic.Pointer[hubCounts]
	applied *prometheus.CounterVec
	marked  prometheus.Counter
	deleted prometheus.Counter
}

// hubCounts are the hubs by state and when they were counted (zero
// before the first sweep).
type hubCounts struct {
	db.HubStates
	At time.Time
}

func newHubLifecycle(b *Bridge, after int64, types []string) *hubLifecycle {
	h := &hubLifecycle{
		b: b, after: after, types: types,
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
		Help: "Hubs in status.hubs by state (active, inactive, deleted), as counted at the last sweep; every replica reports the same figures, so aggregate with max.",
	}, []string{"state"})
	h.states.Store(&hubCounts{})
	b.registry.MustRegister(h.applied, h.marked, h.deleted, hubStatesCollector{h, byState})
	for _, a := range []db.HubAction{db.DeleteHub, db.ResetHub} {
		h.applied.WithLabelValues(string(a))
	}
	return h
}

// hubStatesCollector serves stb_hubs from the last sweep's counts.
type hubStatesCollector struct {
	h   *hubLifecycle
	vec *prometheus.GaugeVec
}

func (c hubStatesCollector) Describe(ch chan<- *prometheus.Desc) { c.vec.Describe(ch) }

func (c hubStatesCollector) Collect(ch chan<- prometheus.Metric) {
	s := c.h.states.Load()
	c.vec.WithLabelValues(string(db.HubActive)).Set(float64(s.Active))
	c.vec.WithLabelValues(string(db.HubInactive)).Set(float64(s.Inactive))
	c.vec.WithLabelValues(string(db.HubDeleted)).Set(float64(s.Deleted))
	c.vec.Collect(ch)
}

// Counts returns the hub counts of the last sweep.
func (h *hubLifecycle) Counts() hubCounts { return *h.states.Load() }

func (h *hubLifecycle) sweepInterval() time.Duration {
	return min(max(h.b.cfg.HubInactiveAfter/10, minHubSweep), maxHubSweep)
}

// Run applies requests as they are announced (LISTEN) or found (polling,
// should a notification be missed or the listening connection down) and
// sweeps hub states, until ctx ends. Failures are logged and retried: a
// database outage must not stop the bridge, which has its own checks.
func (h *hubLifecycle) Run(ctx context.Context) error {
	var (
		conn        *pgx.Conn
		nextListen  time.Time
		nextSweep   time.Time
		nextPoll    time.Time
		logger      = h.b.logger.Named("hubs")
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
			if err := h.applyRequests(ctx); err != nil && ctx.Err() == nil {
				logger.Warn("hub requests not applied; retrying", zap.Error(err))
			}
			nextPoll = now.Add(hubRequestPoll)
		}
		if !now.Before(nextSweep) {
			if err := h.sweep(ctx); err != nil && ctx.Err() == nil {
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

func (h *hubLifecycle) listen(ctx context.Context) (*pgx.Conn, error) {
	cctx, cancel := context.WithTimeout(ctx, 10*time.Second)
	defer cancel()
	conn, err := pgx.Connect(cctx, h.b.cfg.DatabaseURL)
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
func (h *hubLifecycle) applyRequests(ctx context.Context) error {
	reqs, err := db.HubRequestsAfter(ctx, h.b.controlPool, h.after)
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

func (h *hubLifecycle) apply(ctx context.Context, r db.HubRequestRecord) error {
	// Forget first, then load: a bundle of the hub written meanwhile (its
	// newer incarnation coming back) is then in what is loaded, and
	// restoring only moves versions forward.
	// A retry after a failed load must not forget again what the hub sent
	// since: that is not what was deleted.
	if r.ID > h.forgotten {
		h.b.manager.ForgetHub(r.Hub)
		h.forgotten = r.ID
	}
	versions, err := db.LoadHubVersions(ctx, h.b.controlPool, r.Hub)
	if err != nil {
		return err
	}
	h.b.restore(versions)
	h.applied.WithLabelValues(string(r.Action)).Inc()
	h.b.logger.Info("hub dropped from memory", zap.String("hub", r.Hub), zap.String("action", string(r.Action)),
		zap.Int64("request", r.ID), zap.Int("versions_restored", len(versions)))
	return nil
}

// sweep marks hubs inactive, deletes those inactive for
// --hub-delete-after, and counts hubs by state.
func (h *hubLifecycle) sweep(ctx context.Context) error {
	cfg := h.b.cfg
	if cfg.HubInactiveAfter > 0 {
		n, err := db.MarkInactiveHubs(ctx, h.b.controlPool, cfg.HubInactiveAfter)
		if err != nil {
			return err
		}
		if n > 0 {
			h.marked.Add(float64(n))
			h.b.logger.Info("hubs marked inactive", zap.Int64("hubs", n), zap.Duration("no_heartbeat_for", cfg.HubInactiveAfter))
		}
	}
	if cfg.HubDeleteAfter > 0 {
		hubs, err := db.HubsInactiveFor(ctx, h.b.controlPool, cfg.HubDeleteAfter)
		if err != nil {
			return err
		}
		for _, hub := range hubs {
			res, err := db.ApplyHubRequest(ctx, h.b.controlPool, db.HubRequest{
				Hub: hub, Action: db.DeleteHub, RequestedBy: "--hub-delete-after", Types: h.types, InactiveFor: cfg.HubDeleteAfter,
			})
			if err != nil {
				return err
			}
			if !res.Skipped {
				h.deleted.Inc()
				h.b.logger.Info("inactive hub deleted", zap.String("hub", hub), zap.Int64("rows_removed", res.Removed),
					zap.Uint64("tombstone_incarnation", res.Tombstone), zap.Duration("inactive_for_at_least", cfg.HubDeleteAfter))
			}
		}
	}
	s, err := db.CountHubStates(ctx, h.b.controlPool)
	if err != nil {
		return err
	}
	h.states.Store(&hubCounts{HubStates: s, At: time.Now()})
	return nil
}
