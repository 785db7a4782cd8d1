package main

import (
	"context"
	"encoding/json"
	"fmt"
	"html/template"
	"net/http"
	"net/http/pprof"
	"time"

	"github.com/prometheus/client_golang/prometheus/promhttp"

	"github.com/stbridge/stb/conflation"
)

func (b *bridge) routes() http.Handler {
	mux := http.NewServeMux()
	mux.Handle("GET /metrics", promhttp.HandlerFor(b.registry, promhttp.HandlerOpts{Registry: b.registry}))
	mux.HandleFunc("GET /healthz", func(w http.ResponseWriter, _ *http.Request) {
		fmt.Fprintln(w, "ok")
	})
	mux.HandleFunc("GET /readyz", func(w http.ResponseWriter, r *http.Request) {
		problems := b.readiness(r.Context())
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
		_ = enc.Encode(b.unitStates(r.URL.Query().Get("hub")))
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

// readiness lists what keeps the bridge from being ready: the database
// unreachable, no partitions assigned, commits or writes failing.
func (b *bridge) readiness(ctx context.Context) []string {
	var problems []string
	pctx, cancel := context.WithTimeout(ctx, 2*time.Second)
	defer cancel()
	if err := b.controlPool.Ping(pctx); err != nil {
		problems = append(problems, "database unreachable: "+err.Error())
	}
	if len(b.committer.Partitions()) == 0 {
		problems = append(problems, "no Kafka partitions assigned")
	}
	if err := b.committer.Err(); err != nil {
		problems = append(problems, "offset commits failing: "+err.Error())
	}
	if err := b.dispatcher.Err(); err != nil {
		problems = append(problems, "database writes failing: "+err.Error())
	}
	return problems
}

func (b *bridge) unitStates(hub string) []conflation.UnitState {
	if hub != "" {
		u, ok := b.manager.Lookup(hub)
		if !ok {
			return []conflation.UnitState{}
		}
		return []conflation.UnitState{u.Snapshot()}
	}
	units := b.manager.Units()
	out := make([]conflation.UnitState, len(units))
	for i, u := range units {
		out[i] = u.Snapshot()
	}
	return out
}

var statusTmpl = template.Must(template.New("status").Parse(`<!doctype html>
<html><head><meta charset="utf-8"><title>STB status</title>
<style>body{font-family:sans-serif;margin:1.5em}table{border-collapse:collapse}td,th{border:1px solid #ccc;padding:2px 8px;text-align:left}.bad{color:#b00}</style>
</head><body>
<h1>STB — status transport bridge</h1>
{{if .Problems}}<p class="bad">Not ready:</p><ul>{{range .Problems}}<li class="bad">{{.}}</li>{{end}}</ul>{{else}}<p>Ready.</p>{{end}}
<p>Hubs: {{len .Units}} · ready queue: {{.Queue}} · busy workers: {{.Busy}} · buffered bytes: {{.Held}}</p>
<h2>Partitions</h2>
<table><tr><th>topic</th><th>partition</th><th>committed</th><th>position</th><th>outstanding</th></tr>
{{range .Partitions}}<tr><td>{{.Topic}}</td><td>{{.Partition}}</td><td>{{.Committed}}</td><td>{{.Position}}</td><td>{{.Outstanding}}</td></tr>{{end}}
</table>
<h2>Hubs</h2>
<table><tr><th>hub</th><th>type</th><th>processed</th><th>held</th><th>in flight</th><th>waiting</th><th>retries</th><th>age (s)</th></tr>
{{range .Units}}{{$hub := .Hub}}{{range .Types}}<tr><td>{{$hub}}</td><td>{{.Type}}</td><td>{{.Processed}}</td><td>{{.Held}}</td><td>{{.InFlight}}</td><td>{{.Waiting}}</td><td>{{.Retries}}</td><td>{{printf "%.1f" .AgeSec}}</td></tr>{{end}}{{end}}
</table>
<p><a href="/metrics">/metrics</a> · <a href="/debug/units">/debug/units</a> · <a href="/readyz">/readyz</a></p>
</body></html>`))

type partitionRow struct {
	Topic               string
	Partition           int32
	Committed, Position int64
	Outstanding         int
}

func (b *bridge) statusPage(w http.ResponseWriter, r *http.Request) {
	var parts []partitionRow
	for _, p := range b.committer.Partitions() {
		pos, _ := p.Position()
		parts = append(parts, partitionRow{p.Topic, p.Partition, p.Committed(), pos, p.Outstanding()})
	}
	w.Header().Set("Content-Type", "text/html; charset=utf-8")
	_ = statusTmpl.Execute(w, map[string]any{
		"Problems":   b.readiness(r.Context()),
		"Units":      b.unitStates(""),
		"Queue":      b.manager.Queue().Len(),
		"Busy":       b.dispatcher.Busy(),
		"Held":       b.manager.HeldBytes(),
		"Partitions": parts,
	})
}
