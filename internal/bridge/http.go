package bridge

import (
	"crypto/subtle"
	"fmt"
	"net/http"
	"net/http/pprof"
	"strconv"
	"strings"

	"github.com/prometheus/client_golang/prometheus/promhttp"
	"github.com/stbridge/stb/conflation"
)

// publicRoutes are what Kubernetes and Prometheus need, and nothing that
// shows configuration, names or memory: metrics and probes.
func (b *Bridge) publicRoutes() http.Handler {
	mux := http.NewServeMux()
	mux.Handle("GET /metrics", promhttp.HandlerFor(b.registry, promhttp.HandlerOpts{Registry: b.registry}))
	mux.HandleFunc("GET /healthz", func(w http.ResponseWriter, _ *http.Request) {
		fmt.Fprintln(w, "ok")
	})
	mux.HandleFunc("GET /readyz", func(w http.ResponseWriter, r *http.Request) {
		problems := b.Problems(r.Context())
		if len(problems) > 0 {
			w.WriteHeader(http.StatusServiceUnavailable)
			for _, p := range problems {
				fmt.Fprintln(w, p)
			}
			return
		}
		fmt.Fprintln(w, "ready")
	})
	return mux
}

// adminRoutes are the operator's console: the status page, the units and
// pprof, whose /cmdline shows the whole command line. They are served on
// the admin listener only, loopback by default.
func (b *Bridge) adminRoutes() http.Handler {
	mux := http.NewServeMux()
	mux.HandleFunc("GET /debug/units", b.unitsPage)
	b.consoleRoutes(mux)
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
	return mux
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
func (b *Bridge) unitsPage(w http.ResponseWriter, r *http.Request) {
	q := r.URL.Query()
	if hub := q.Get("hub"); hub != "" {
		writeJSON(w, b.Units(hub))
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
	b.manager.Range(func(u *conflation.Unit) bool {
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
