package bridge

import (
	"crypto/subtle"
	"encoding/json"
	"fmt"
	"html/template"
	"net/http"
	"net/http/pprof"

	"github.com/prometheus/client_golang/prometheus/promhttp"
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
	mux.HandleFunc("GET /debug/units", func(w http.ResponseWriter, r *http.Request) {
		w.Header().Set("Content-Type", "application/json")
		enc := json.NewEncoder(w)
		enc.SetIndent("", "  ")
		_ = enc.Encode(b.Units(r.URL.Query().Get("hub")))
	})
	mux.HandleFunc("GET /{$}", b.statusPage)
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

var statusTmpl = template.Must(template.New("status").Parse(`<!doctype html>
<html><head><meta charset="utf-8"><title>STB status</title>
<style>body{font-family:sans-serif;margin:1.5em}table{border-collapse:collapse}td,th{border:1px solid #ccc;padding:2px 8px;text-align:left}.bad{color:#b00}</style>
</head><body>
<h1>STB — status transport bridge</h1>
{{if .Problems}}<p class="bad">Not ready:</p><ul>{{range .Problems}}<li class="bad">{{.}}</li>{{end}}</ul>{{else}}<p>Ready.</p>{{end}}
<p>Hubs: {{len .Units}} · ready queue: {{.Stats.ReadyUnits}} · busy workers: {{.Stats.BusyWorkers}} · buffered bytes: {{.Stats.HeldBytes}}</p>
<h2>Partitions</h2>
<table><tr><th>topic</th><th>partition</th><th>committed</th><th>position</th><th>outstanding</th></tr>
{{range .Stats.Partitions}}<tr><td>{{.Topic}}</td><td>{{.Partition}}</td><td>{{.Committed}}</td><td>{{.Position}}</td><td>{{.Outstanding}}</td></tr>{{end}}
</table>
<h2>Hubs</h2>
<table><tr><th>hub</th><th>type</th><th>processed</th><th>held</th><th>in flight</th><th>waiting</th><th>retries</th><th>age (s)</th></tr>
{{range .Units}}{{$hub := .Hub}}{{range .Types}}<tr><td>{{$hub}}</td><td>{{.Type}}</td><td>{{.Processed}}</td><td>{{.Held}}</td><td>{{.InFlight}}</td><td>{{.Waiting}}</td><td>{{.Retries}}</td><td>{{printf "%.1f" .AgeSec}}</td></tr>{{end}}{{end}}
</table>
<p><a href="/debug/units">/debug/units</a> · <a href="/debug/pprof/">/debug/pprof/</a> (metrics and probes are on the public listener)</p>
</body></html>`))

func (b *Bridge) statusPage(w http.ResponseWriter, r *http.Request) {
	w.Header().Set("Content-Type", "text/html; charset=utf-8")
	_ = statusTmpl.Execute(w, map[string]any{
		"Problems": b.Problems(r.Context()),
		"Units":    b.Units(""),
		"Stats":    b.Stats(),
	})
}
