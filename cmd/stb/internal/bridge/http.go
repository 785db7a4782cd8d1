package bridge

import (
	"encoding/json"
	"fmt"
	"html/template"
	"net/http"
	"net/http/pprof"

	"github.com/prometheus/client_golang/prometheus/promhttp"
)

func (b *Bridge) routes() http.Handler {
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
	mux.HandleFunc("GET /debug/units", func(w http.ResponseWriter, r *http.Request) {
		w.Header().Set("Content-Type", "application/json")
		enc := json.NewEncoder(w)
		enc.SetIndent("", "  ")
		_ = enc.Encode(b.Units(r.URL.Query().Get("hub")))
	})
	mux.HandleFunc("GET /{$}", b.statusPage)
	// Profiles for performance work: go tool pprof http://HOST/debug/pprof/profile
	mux.HandleFunc("/debug/pprof/", pprof.Index)
	mux.HandleFunc("/debug/pprof/cmdline", pprof.Cmdline)
	mux.HandleFunc("/debug/pprof/profile", pprof.Profile)
	mux.HandleFunc("/debug/pprof/symbol", pprof.Symbol)
	mux.HandleFunc("/debug/pprof/trace", pprof.Trace)
	return mux
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
<p><a href="/metrics">/metrics</a> · <a href="/debug/units">/debug/units</a> · <a href="/readyz">/readyz</a></p>
</body></html>`))

func (b *Bridge) statusPage(w http.ResponseWriter, r *http.Request) {
	w.Header().Set("Content-Type", "text/html; charset=utf-8")
	_ = statusTmpl.Execute(w, map[string]any{
		"Problems": b.Problems(r.Context()),
		"Units":    b.Units(""),
		"Stats":    b.Stats(),
	})
}
