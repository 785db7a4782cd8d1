package console

import (
	"context"
	"crypto/rand"
	"crypto/subtle"
	"encoding/hex"
	"net/http"
	"net/http/pprof"
	"strconv"
	"strings"
	"sync"

	"github.com/jackc/pgx/v5/pgxpool"
	"go.uber.org/zap"

	"github.com/stbridge/stb/conflation"
	"github.com/stbridge/stb/internal/hubs"
	"github.com/stbridge/stb/internal/replay"
	"github.com/stbridge/stb/pkg/committer"
)

// Units are the conflation units the console shows; *conflation.Manager
// has these methods.
type Units interface {
	Range(f func(*conflation.Unit) bool)
	Lookup(hub string) (*conflation.Unit, bool)
	IsDormant(hub string) bool
	Dormant() int
}

// Partitions are the assigned partitions; *committer.Committer has it.
type Partitions interface {
	Stats() []committer.PartitionStats
}

// Readiness says what keeps the bridge from being ready; empty is ready.
type Readiness interface {
	Problems(ctx context.Context) []string
}

// HubStates counts the hubs by state; *hubs.Lifecycle has it.
type HubStates interface {
	Counts() hubs.Counts
}

// Deps are what the console shows and acts on. Units, Partitions and
// Readiness are required; a nil Pool shows nothing of the database (and
// its actions fail), a nil HubStates no hub counts.
type Deps struct {
	Units      Units
	Partitions Partitions
	Readiness  Readiness
	HubStates  HubStates
	// Pool is the database the console reads and acts on.
	Pool *pgxpool.Pool
	// Replay is how the console's replay buttons decode and fetch
	// (the bridge's reader configuration and profiles); nil shows the
	// command line instead of the buttons.
	Replay *replay.Config
	// ReplayPool is the database the replay buttons write through: a
	// small pool of their own, never the one Pool shares with the
	// bridge's committer and readiness checks. The console replays one
	// request at a time, so one connection is enough. Nil, with Replay
	// set, makes the buttons say there is no replayer.
	ReplayPool *pgxpool.Pool
	// Token, when not empty, must come with every request as
	// "Authorization: Bearer <token>".
	Token string
	// Logger; nil logs nothing.
	Logger *zap.Logger
}

// Console is the operator's console of one bridge: build it with New,
// serve Handler on the admin listener.
type Console struct {
	units      Units
	partitions Partitions
	ready      Readiness
	hubs       HubStates
	pool       *pgxpool.Pool
	replay     *replay.Config
	replayPool *pgxpool.Pool
	token      string
	logger     *zap.Logger
	// csrf is the token every form carries: random per process, so a
	// page of another site cannot post a form the console takes.
	csrf string
	// overview caches the pass over every unit; Run refreshes it.
	overview *overviewCache
	// replaying is held while a replay request runs: one at a time.
	replaying sync.Mutex
}

// New returns the console over deps.
func New(deps Deps) *Console {
	c := &Console{units: deps.Units, partitions: deps.Partitions, ready: deps.Readiness, hubs: deps.HubStates,
		pool: deps.Pool, replay: deps.Replay, replayPool: deps.ReplayPool, token: deps.Token, logger: deps.Logger, csrf: newCSRFToken(),
		overview: newOverviewCache()}
	if c.logger == nil {
		c.logger = zap.NewNop()
	}
	return c
}

// Run refreshes the overview's pass over every unit, in the background of
// the pages that serve the last one, until ctx ends; it returns once no
// pass is running. Without Run the overview is the first pass, its age
// shown.
func (c *Console) Run(ctx context.Context) error {
	return c.overview.run(ctx, c.unitOverview)
}

// newCSRFToken returns a random form token.
func newCSRFToken() string {
	var raw [24]byte
	_, _ = rand.Read(raw[:])
	return hex.EncodeToString(raw[:])
}

// Handler serves the console: the pages, the actions, /debug/units and
// pprof, whose /cmdline would show the whole command line (it does not
// serve that one). Serve it on the admin listener only, loopback by
// default.
func (c *Console) Handler() http.Handler {
	mux := http.NewServeMux()
	mux.HandleFunc("GET /debug/units", c.unitsPage)
	c.pageRoutes(mux)
	// Profiles for performance work: go tool pprof http://HOST/debug/pprof/profile
	mux.HandleFunc("/debug/pprof/", func(w http.ResponseWriter, r *http.Request) {
		if r.URL.Path == "/debug/pprof/cmdline" {
			http.NotFound(w, r)
			return
		}
		pprof.Index(w, r)
	})
	// No /debug/pprof/cmdline: the command line holds the database URL
	// and Kafka properties, secrets included; go tool pprof does not need
	// it.
	mux.HandleFunc("/debug/pprof/profile", pprof.Profile)
	mux.HandleFunc("/debug/pprof/symbol", pprof.Symbol)
	mux.HandleFunc("/debug/pprof/trace", pprof.Trace)
	return requireToken(c.token, mux)
}

// requireToken lets through only requests that carry "Authorization:
// Bearer <token>"; an empty token lets every request through.
func requireToken(token string, next http.Handler) http.Handler {
	if token == "" {
		return next
	}
	want := []byte("Bearer " + token)
	return http.HandlerFunc(func(w http.ResponseWriter, r *http.Request) {
		if subtle.ConstantTimeCompare([]byte(r.Header.Get("Authorization")), want) != 1 {
			w.Header().Set("WWW-Authenticate", `Bearer realm="stb admin"`)
			http.Error(w, "unauthorized", http.StatusUnauthorized)
			return
		}
		next.ServeHTTP(w, r)
	})
}

// unitsPage serves /debug/units: ?hub=NAME for one hub, else a page of
// the units in hub order: ?after=NAME starts after that hub, ?limit= (1000
// by default, at most 10000) caps it. X-Total-Count says how many units
// there are, X-Next-After what to pass as after for the next page.
func (c *Console) unitsPage(w http.ResponseWriter, r *http.Request) {
	q := r.URL.Query()
	if hub := q.Get("hub"); hub != "" {
		out := []conflation.UnitState{}
		if u, ok := c.units.Lookup(hub); ok {
			out = append(out, u.Snapshot())
		}
		writeJSON(w, out)
		return
	}
	after := q.Get("after")
	limit, err := strconv.Atoi(q.Get("limit"))
	if err != nil || limit <= 0 {
		limit = 1000
	}
	limit = min(limit, 10000)
	total := 0
	page := topK[*conflation.Unit]{k: limit, cmp: func(a, b *conflation.Unit) int { return strings.Compare(a.Hub, b.Hub) }}
	c.units.Range(func(u *conflation.Unit) bool {
		total++
		if u.Hub > after {
			page.add(u)
		}
		return true
	})
	units := page.sorted()
	out := make([]conflation.UnitState, len(units))
	for i, u := range units {
		out[i] = u.Snapshot()
	}
	w.Header().Set("X-Total-Count", strconv.Itoa(total))
	if len(units) == limit {
		w.Header().Set("X-Next-After", units[len(units)-1].Hub)
	}
	writeJSON(w, out)
}
