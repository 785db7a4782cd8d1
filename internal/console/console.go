package console

import (
	"bytes"
	"cmp"
	"context"
	"encoding/json"
	"html/template"
	"maps"
	"net/http"
	"slices"
	"strconv"
	"strings"
	"sync"
	"time"

	"github.com/stbridge/stb/conflation"
	"github.com/stbridge/stb/internal/profiles"
	"github.com/stbridge/stb/internal/profiles/profile"
	"github.com/stbridge/stb/pkg/committer"
	"github.com/stbridge/stb/pkg/db"
	"github.com/stbridge/stb/pkg/deadletter"
)

// The operator's console, on the admin listener. It opens on what needs
// attention, never on everything: counts, the hubs with problems first
// (at most consoleRows), search by name, a page per hub, and the dead
// letters grouped by reason. Every page is bounded whatever the number of
// hubs; names from the network are escaped by html/template; nothing is
// loaded from outside the binary.

// consoleRows caps every list the console shows.
const consoleRows = 100

// Overview is what the console's first page and /api/overview show.
type Overview struct {
	// Hubs is the number of conflation units in memory; DormantHubs
	// the hubs known only by their versions (evicted when idle, or not
	// heard from since the start).
	Hubs        int `json:"hubs"`
	DormantHubs int `json:"dormantHubs"`
	// ActiveHubs, InactiveHubs and DeletedHubs count stb.hubs by state
	// as of the last sweep, StatesAsOfSec ago (-1 before the first).
	ActiveHubs    int64   `json:"activeHubs"`
	InactiveHubs  int64   `json:"inactiveHubs"`
	DeletedHubs   int64   `json:"deletedHubs"`
	StatesAsOfSec float64 `json:"statesAsOfSeconds"`
	// Held counts hubs with unwritten bundles, Retrying those whose writes
	// failed and are retried, WaitingDependency those waiting for a bundle
	// they depend on.
	Held              int `json:"held"`
	Retrying          int `json:"retrying"`
	WaitingDependency int `json:"waitingDependency"`
	// OldestUnwrittenSec is how long the oldest unwritten bundle waits.
	OldestUnwrittenSec float64 `json:"oldestUnwrittenSeconds"`
	// DeadLettersLastHour is -1 when the database did not answer.
	DeadLettersLastHour int64                      `json:"deadLettersLastHour"`
	Partitions          []committer.PartitionStats `json:"partitions"`
	// Topics sums the partitions up per topic, graded: the topicRows
	// worst of TopicsTotal, by topic.
	Topics      []TopicLag `json:"topics"`
	TopicsTotal int        `json:"topicsTotal"`
	// Problems are the hubs that need attention, worst first.
	Problems []HubProblem `json:"problems"`
	// LetterHubs are the hubs with the most dead letters not replayed
	// (at most deadLetterHubsShown), LetterHubsTotal how many hubs have
	// any; LetterHubsErr why they are not known (the database did not
	// answer), "" when they are.
	LetterHubs      []LetterHub `json:"letterHubs"`
	LetterHubsTotal int64       `json:"letterHubsTotal"`
	LetterHubsErr   string      `json:"letterHubsError,omitempty"`
	// Ready says the bridge is ready; NotReady lists what keeps it from
	// being (the readiness probe's causes, as /readyz says them).
	Ready    bool     `json:"ready"`
	NotReady []string `json:"notReady"`
	// AsOfSec is the age of the counts over the units.
	AsOfSec float64 `json:"asOfSeconds"`
	// Signals are the figures above graded by DefaultThresholds: what the
	// page colours, and its refresh colours again.
	Signals []Signal `json:"signals"`
}

// HubProblem is one hub on the console's list of problems.
type HubProblem struct {
	Hub               string  `json:"hub"`
	Retries           int     `json:"retries"`
	WaitingDependency bool    `json:"waitingDependency"`
	OldestSec         float64 `json:"oldestSeconds"`
	Held              int     `json:"held"`
	// Waits says what the hub's types wait for when WaitingDependency.
	Waits []Wait `json:"waits,omitempty"`
}

// worse orders problems: retried writes first, then dependencies, then age.
func worse(a, b HubProblem) int {
	return cmp.Or(cmp.Compare(b.Retries, a.Retries), cmpBool(b.WaitingDependency, a.WaitingDependency),
		cmp.Compare(b.OldestSec, a.OldestSec), strings.Compare(a.Hub, b.Hub))
}

func cmpBool(a, b bool) int {
	switch {
	case a == b:
		return 0
	case a:
		return 1
	}
	return -1
}

// problemAge is how long held work may wait before its hub is listed.
const problemAge = 30 * time.Second

// Overview counts every unit once, cheaply (conflation.Unit.Brief), and
// keeps the consoleRows worst hubs; it adds the partitions, the dead
// letters of the last hour and the readiness.
func (c *Console) Overview(ctx context.Context) Overview {
	o := c.overview.get(c.unitOverview)
	o.Partitions = []committer.PartitionStats{}
	if c.partitions != nil {
		o.Partitions = append(o.Partitions, c.partitions.Stats()...)
	}
	o.DormantHubs = c.units.Dormant()
	o.StatesAsOfSec = -1
	if c.hubs != nil {
		n := c.hubs.Counts()
		o.ActiveHubs, o.InactiveHubs, o.DeletedHubs = n.Active, n.Inactive, n.Deleted
		if !n.At.IsZero() {
			o.StatesAsOfSec = time.Since(n.At).Seconds()
		}
	}
	qctx, cancel := context.WithTimeout(ctx, time.Second)
	defer cancel()
	o.LetterHubs = []LetterHub{}
	if c.pool == nil {
		o.LetterHubsErr = "no database"
	} else {
		if n, err := deadletter.CountRecent(qctx, c.pool, time.Hour); err == nil {
			o.DeadLettersLastHour = n
		}
		hubs, total, err := loadLetterHubs(qctx, c.pool, deadLetterHubsShown)
		if err != nil {
			o.LetterHubsErr = "the database did not answer"
		} else if hubs != nil {
			o.LetterHubs, o.LetterHubsTotal = hubs, total
		}
	}
	o.Topics = summarizeLag(o.Partitions, DefaultThresholds)
	o.NotReady = []string{}
	if c.ready != nil {
		o.NotReady = append(o.NotReady, c.ready.Problems(ctx)...)
	}
	o.Ready = len(o.NotReady) == 0
	o.Signals = signals(o, DefaultThresholds)
	// A topic per hub (the global-hub agent's layout) makes many topics:
	// the page shows the worst topicRows, the signal above sums them all.
	o.TopicsTotal = len(o.Topics)
	o.Topics = worstTopics(o.Topics, topicRows)
	return o
}

// unitOverview is the part of Overview that grows with the hubs.
func (c *Console) unitOverview() Overview {
	o := Overview{DeadLettersLastHour: -1}
	worst := topK[HubProblem]{k: consoleRows, cmp: worse}
	c.units.Range(func(u *conflation.Unit) bool {
		o.Hubs++
		br := u.Brief()
		if br.Held > 0 {
			o.Held++
		}
		if br.Retries > 0 {
			o.Retrying++
		}
		if br.WaitingDependency {
			o.WaitingDependency++
		}
		o.OldestUnwrittenSec = max(o.OldestUnwrittenSec, br.Oldest.Seconds())
		if br.Retries > 0 || br.WaitingDependency || br.Oldest >= problemAge {
			worst.add(HubProblem{Hub: u.Hub, Retries: br.Retries, WaitingDependency: br.WaitingDependency,
				OldestSec: br.Oldest.Seconds(), Held: br.Held})
		}
		return true
	})
	o.Problems = worst.sorted()
	// What the listed hubs wait for: a snapshot of each, at most
	// consoleRows of them, not of every unit.
	for i := range o.Problems {
		p := &o.Problems[i]
		if !p.WaitingDependency {
			continue
		}
		if u, ok := c.units.Lookup(p.Hub); ok {
			for _, t := range u.Snapshot().Types {
				if t.DependsOn != "" {
					p.Waits = append(p.Waits, Wait{Type: t.Type, DependsOn: t.DependsOn, Needs: t.Needs, Has: t.Has})
				}
			}
		}
	}
	if o.Problems == nil {
		o.Problems = []HubProblem{}
	}
	return o
}

// overviewMaxAge is how old the counts over every unit may be: a pass
// over 200,000 units takes longer than a page may (BENCHMARKS.md), so the
// console serves the last pass and has Run compute the next one when it
// is older than this.
const overviewMaxAge = 2 * time.Second

// overviewCache holds the last pass over the units (stale while the next
// one runs). The passes after the first run on run's goroutine, which the
// console's Run owns: nothing computes after Run returned.
type overviewCache struct {
	mu sync.Mutex
	at time.Time
	o  Overview
	// stale holds a signal when a get found the pass older than
	// overviewMaxAge; run computes the next one.
	stale chan struct{}
}

func newOverviewCache() *overviewCache {
	return &overviewCache{stale: make(chan struct{}, 1)}
}

// get returns the last pass, computing it on the first call, and asks run
// for a new one when it is older than overviewMaxAge.
func (c *overviewCache) get(compute func() Overview) Overview {
	c.mu.Lock()
	defer c.mu.Unlock()
	if c.at.IsZero() {
		c.o, c.at = compute(), time.Now()
		return c.o
	}
	if time.Since(c.at) > overviewMaxAge {
		select {
		case c.stale <- struct{}{}:
		default: // asked already
		}
	}
	o := c.o
	o.Problems = slices.Clone(o.Problems)
	o.AsOfSec = time.Since(c.at).Seconds()
	return o
}

// run computes a new pass whenever get asks, until ctx ends; it returns
// once no pass is running.
func (c *overviewCache) run(ctx context.Context, compute func() Overview) error {
	for {
		select {
		case <-ctx.Done():
			return nil
		case <-c.stale:
		}
		o := compute()
		c.mu.Lock()
		c.o, c.at = o, time.Now()
		c.mu.Unlock()
	}
}

// topK keeps the k first items in cmp's order of all it is given, in
// O(n log k): a heap whose root is the last kept.
type topK[T any] struct {
	k    int
	cmp  func(a, b T) int
	heap []T
}

func (t *topK[T]) add(v T) {
	if len(t.heap) < t.k {
		t.heap = append(t.heap, v)
		for i := len(t.heap) - 1; i > 0; {
			p := (i - 1) / 2
			if t.cmp(t.heap[i], t.heap[p]) <= 0 {
				break
			}
			t.heap[i], t.heap[p] = t.heap[p], t.heap[i]
			i = p
		}
		return
	}
	if t.k == 0 || t.cmp(v, t.heap[0]) >= 0 {
		return
	}
	t.heap[0] = v
	for i := 0; ; {
		l, r, m := 2*i+1, 2*i+2, i
		if l < len(t.heap) && t.cmp(t.heap[l], t.heap[m]) > 0 {
			m = l
		}
		if r < len(t.heap) && t.cmp(t.heap[r], t.heap[m]) > 0 {
			m = r
		}
		if m == i {
			return
		}
		t.heap[i], t.heap[m] = t.heap[m], t.heap[i]
		i = m
	}
}

// sorted returns what was kept, in cmp's order.
func (t *topK[T]) sorted() []T {
	out := slices.Clone(t.heap)
	slices.SortFunc(out, t.cmp)
	return out
}

// searchHubs returns the names of at most consoleRows hubs containing q,
// sorted, and whether there were more: the units in memory and the hubs
// the database knows (evicted when idle, held by another replica, or
// deleted).
func (c *Console) searchHubs(ctx context.Context, q string) ([]string, bool, error) {
	first := topK[string]{k: consoleRows + 1, cmp: strings.Compare}
	c.units.Range(func(u *conflation.Unit) bool {
		if strings.Contains(u.Hub, q) {
			first.add(u.Hub)
		}
		return true
	})
	seen := map[string]bool{}
	for _, n := range first.heap {
		seen[n] = true
	}
	var err error
	if c.pool != nil {
		qctx, cancel := context.WithTimeout(ctx, 2*time.Second)
		defer cancel()
		var names []string
		names, err = db.SearchHubs(qctx, c.pool, q, consoleRows+1)
		for _, n := range names {
			seen[n] = true
		}
	}
	names := slices.Sorted(maps.Keys(seen))
	if len(names) > consoleRows {
		return names[:consoleRows], true, err
	}
	return names, false, err
}

func (c *Console) pageRoutes(mux *http.ServeMux) {
	mux.HandleFunc("GET /{$}", c.overviewPage)
	mux.HandleFunc("GET /api/overview", func(w http.ResponseWriter, r *http.Request) {
		writeJSON(w, c.Overview(r.Context()))
	})
	mux.HandleFunc("GET /hub", c.hubPage)
	mux.HandleFunc("GET /partitions", c.partitionsPage)
	mux.HandleFunc("GET /hubs/inactive", c.inactivePage)
	mux.HandleFunc("GET /deadletters", c.deadLettersPage)
	mux.HandleFunc("GET /work", c.workPage)
	c.actionRoutes(mux)
}

func writeJSON(w http.ResponseWriter, v any) {
	w.Header().Set("Content-Type", "application/json")
	enc := json.NewEncoder(w)
	enc.SetIndent("", "  ")
	_ = enc.Encode(v)
}

func (c *Console) overviewPage(w http.ResponseWriter, r *http.Request) {
	q := r.URL.Query().Get("q")
	data := map[string]any{"O": c.Overview(r.Context()), "Q": q}
	if q != "" {
		names, more, err := c.searchHubs(r.Context(), q)
		data["Found"], data["More"], data["SearchErr"] = names, more, err
	}
	render(w, overviewTmpl, data)
}

func (c *Console) partitionsPage(w http.ResponseWriter, _ *http.Request) {
	var parts []committer.PartitionStats
	if c.partitions != nil {
		parts = c.partitions.Stats()
	}
	render(w, partitionsTmpl, map[string]any{"Q": "", "Partitions": parts})
}

// inactivePage lists the inactive hubs consoleRows at a time, by name;
// ?after=NAME is the next page.
func (c *Console) inactivePage(w http.ResponseWriter, r *http.Request) {
	after := r.URL.Query().Get("after")
	data := map[string]any{"Q": "", "After": after, "PageSize": consoleRows, "Hubs": []InactiveHub(nil)}
	if c.hubs != nil {
		data["Total"] = c.hubs.Counts().Inactive
	} else {
		data["Total"] = "unknown"
	}
	if c.pool == nil {
		data["Err"] = "no database"
	} else {
		ctx, cancel := context.WithTimeout(r.Context(), 2*time.Second)
		defer cancel()
		hubs, err := loadInactiveHubs(ctx, c.pool, after, consoleRows+1)
		if len(hubs) > consoleRows {
			hubs = hubs[:consoleRows]
			data["Next"] = hubs[consoleRows-1].Hub
		}
		data["Hubs"], data["Err"] = hubs, err
	}
	render(w, inactiveTmpl, data)
}

func (c *Console) hubPage(w http.ResponseWriter, r *http.Request) {
	hub := r.URL.Query().Get("name")
	data := map[string]any{"Hub": hub, "Q": "", "CSRF": c.csrf, "CanReplay": c.replay != nil}
	if u, ok := c.units.Lookup(hub); ok {
		data["Unit"] = u.Snapshot()
	} else {
		data["Dormant"] = c.units.IsDormant(hub)
	}
	if c.pool != nil {
		ctx, cancel := context.WithTimeout(r.Context(), 2*time.Second)
		defer cancel()
		st, ok, err := db.LoadHubStatus(ctx, c.pool, hub)
		if ok {
			data["State"] = st
		}
		data["StateErr"] = err
		stored, err := db.LoadHubWrites(ctx, c.pool, hub)
		data["Stored"], data["StoredErr"] = stored, err
		rows, err := deadletter.List(ctx, c.pool, deadletter.Filter{Hub: hub, Limit: consoleRows, Newest: true})
		data["Letters"], data["LettersErr"] = rows, err
		// Each profile's rows of the hub (a Cloud Native Events node is
		// a hub of its own), those it has.
		var sections []hubSection
		for _, p := range profiles.All() {
			if p.HubSection == nil {
				continue
			}
			sec, err := p.HubSection(ctx, c.pool, hub, consoleRows)
			if err != nil || len(sec.Rows) > 0 {
				sections = append(sections, hubSection{Section: sec, Err: err})
			}
		}
		data["Sections"] = sections
	}
	render(w, hubTmpl, data)
}

// hubSection is a profile's section of a hub's page and what loading it
// failed with.
type hubSection struct {
	profile.Section
	Err error
}

func (c *Console) deadLettersPage(w http.ResponseWriter, r *http.Request) {
	reason := r.URL.Query().Get("reason")
	data := map[string]any{"Reason": reason, "Q": "", "CSRF": c.csrf, "CanReplay": c.replay != nil}
	if c.pool != nil {
		ctx, cancel := context.WithTimeout(r.Context(), 2*time.Second)
		defer cancel()
		groups, err := deadletter.CountByReason(ctx, c.pool)
		data["Groups"], data["Err"] = groups, err
		if reason != "" && err == nil {
			rows, err := deadletter.List(ctx, c.pool, deadletter.Filter{Reason: deadletter.Reason(reason), Limit: consoleRows, Newest: true})
			data["Letters"], data["Err"] = rows, err
		}
	}
	render(w, deadLettersTmpl, data)
}

// render executes t into a buffer first, so that a template that fails
// half way answers 500 with the error instead of half a page.
func render(w http.ResponseWriter, t *template.Template, data any) {
	var buf bytes.Buffer
	if err := t.Execute(&buf, data); err != nil {
		http.Error(w, "console page failed: "+err.Error(), http.StatusInternalServerError)
		return
	}
	w.Header().Set("Content-Type", "text/html; charset=utf-8")
	w.Header().Set("Content-Security-Policy", "default-src 'self'; script-src 'self' 'unsafe-inline'; style-src 'unsafe-inline'")
	_, _ = w.Write(buf.Bytes())
}

var consoleFuncs = template.FuncMap{
	"secs": func(s float64) string { return strconv.FormatFloat(s, 'f', 1, 64) + "s" },
	"preview": func(data []byte) string {
		if len(data) > 4<<10 {
			return string(data[:4<<10]) + "…"
		}
		return string(data)
	},
	"headers": func(h map[string]string) string {
		raw, _ := json.MarshalIndent(h, "", "  ")
		return string(raw)
	},
	"when": func(t time.Time) string { return t.UTC().Format(time.RFC3339) },
	"dash": orDash,
	// level grades a value by one of the thresholds named in
	// tableThresholds; rule, warn and bad say that threshold.
	"level": func(name string, v any) Level {
		var f float64
		switch v := v.(type) {
		case float64:
			f = v
		case int64:
			f = float64(v)
		case int:
			f = float64(v)
		}
		return tableThresholds(name).Level(f)
	},
	"rule": func(name string) string { return tableThresholds(name).Rule() },
	"warn": func(name string) float64 { return tableThresholds(name).Warn },
	"bad":  func(name string) float64 { return tableThresholds(name).Bad },
}

// tableThresholds are the thresholds the pages' tables grade by, by name.
func tableThresholds(name string) Threshold {
	switch name {
	case "oldest":
		return DefaultThresholds.OldestUnwritten
	case "partition":
		return DefaultThresholds.PartitionLag
	}
	panic("console: no threshold " + name)
}

const consoleHead = `<!doctype html>
<html><head><meta charset="utf-8"><title>STB console</title>
<style>body{font-family:sans-serif;margin:1.5em}table{border-collapse:collapse;margin:.5em 0}td,th{border:1px solid #ccc;padding:2px 8px;text-align:left}
.ok{color:#070}.warn{color:#a60}.bad{color:#b00}b.bad,b.warn{font-weight:bold}#readiness.bad{border-left:6px solid #b00;padding-left:.5em}#readiness.ok{border-left:6px solid #070;padding-left:.5em}#readiness p{margin:.2em 0}details{margin:.5em 0}.counts span{display:inline-block;margin-right:1.5em}.counts b{font-size:1.3em}pre{white-space:pre-wrap;max-width:80em;background:#f6f6f6;padding:.5em}</style>
</head><body>
<p><a href="/">overview</a> · <a href="/deadletters">dead letters</a> · <a href="/work">work statuses</a> · <a href="/debug/units?limit=100">/debug/units</a>
<form method="get" action="/" style="display:inline;margin-left:2em"><input name="q" id="q" placeholder="hub name" value="{{.Q}}"> <button>search</button></form></p>`

var overviewTmpl = template.Must(template.New("overview").Funcs(consoleFuncs).Parse(consoleHead + `
<h1>STB — status transport bridge</h1>
{{with .O}}
<div id="readiness" class="{{if .Ready}}ok{{else}}bad{{end}}"><p id="ready">{{if .Ready}}Ready.{{else}}Not ready:{{end}}</p>
<ul id="not-ready">{{range .NotReady}}<li>{{.}}</li>{{end}}</ul></div>
<p class="counts">
{{range .Signals}}<span title="{{.Rule}}">{{if eq .ID "c-inactive"}}<a href="/hubs/inactive" id="inactive-link">{{.Label}}</a>{{else if eq .ID "c-dead"}}<a href="/deadletters">{{.Label}}</a>{{else if eq .ID "c-lag"}}<a href="/partitions">{{.Label}}</a>{{else}}{{.Label}}{{end}} <b id="{{.ID}}" class="{{.Level}}">{{.Value}}</b></span>
{{end}}</p>
<details id="thresholds"><summary>Colours: <span class="ok">ok</span>, <span class="warn">warning</span>, <span class="bad">bad</span>; the thresholds (also on each figure's tooltip)</summary>
<ul>{{range .Signals}}{{if .Rule}}<li>{{.Label}}: {{.Rule}}</li>{{end}}{{end}}</ul></details>
{{end}}
{{if .Q}}<h2>Hubs matching “{{.Q}}”</h2>{{if .SearchErr}}<p class="bad">database not searched: {{.SearchErr}}</p>{{end}}
{{if .Found}}<ul id="found">{{range .Found}}<li><a href="/hub?name={{.}}">{{.}}</a></li>{{end}}</ul>{{if .More}}<p>more than these; narrow the search</p>{{end}}
{{else}}<p id="found">no hub matches</p>{{end}}{{end}}
{{with .O}}
<h2>Hubs with dead letters</h2>
<p id="letter-hubs-note">{{if .LetterHubsErr}}<span class="warn">not known: {{.LetterHubsErr}}</span>{{else}}hubs with letters no replay applied: {{.LetterHubsTotal}}{{if gt .LetterHubsTotal (len .LetterHubs)}}; the {{len .LetterHubs}} with most below{{end}}.{{end}}</p>
<table id="letter-hubs"><thead><tr><th>hub</th><th>letters</th><th>reasons</th><th>newest</th></tr></thead><tbody>
{{range .LetterHubs}}<tr><td><a href="/hub?name={{.Hub}}">{{.Hub}}</a></td><td class="bad">{{.Letters}}</td><td>{{range $i, $r := .Reasons}}{{if $i}}, {{end}}<a href="/deadletters?reason={{$r.Reason}}">{{$r.Reason}}</a> {{$r.Letters}}{{end}}</td><td>{{when .Newest}}</td></tr>{{else}}<tr><td colspan="4">none</td></tr>{{end}}
</tbody></table>
<h2>Lag per topic</h2>
<table id="topics"><thead><tr><th>topic</th><th>partitions</th><th>lag known</th><th>committed lag</th><th>worst partition</th><th>outstanding</th></tr></thead><tbody>
{{range .Topics}}<tr><td>{{.Topic}}</td><td>{{.Partitions}}</td><td>{{.Known}}</td><td class="{{.Level}}">{{if .Known}}{{.Lag}}{{else}}–{{end}}</td><td>{{if ge .Worst 0}}{{.Worst}}: {{.WorstLag}}{{else}}–{{end}}</td><td>{{.Outstanding}}</td></tr>{{else}}<tr><td colspan="6">no partitions assigned</td></tr>{{end}}
</tbody></table>
<p>{{if gt .TopicsTotal (len .Topics)}}<span id="topics-more">the {{len .Topics}} worst of {{.TopicsTotal}} topics</span> · {{end}}<a href="/partitions" id="partitions-link">every partition</a></p>
<h2>Hubs that need attention</h2>
<table id="problems"><thead><tr><th>hub</th><th>retries</th><th>waits for</th><th>oldest unwritten</th><th>types held</th></tr></thead><tbody>
{{range .Problems}}<tr><td><a href="/hub?name={{.Hub}}">{{.Hub}}</a></td><td class="{{if .Retries}}bad{{end}}">{{.Retries}}</td><td class="{{if .WaitingDependency}}warn{{end}}">{{if .Waits}}{{range $i, $w := .Waits}}{{if $i}}; {{end}}{{$w}}{{end}}{{else if .WaitingDependency}}a dependency{{else}}–{{end}}</td><td class="{{level "oldest" .OldestSec}}">{{secs .OldestSec}}</td><td>{{.Held}}</td></tr>{{else}}<tr><td colspan="5">none</td></tr>{{end}}
</tbody></table>
{{end}}
<script>
// Refreshes the figures, their colours and the tables every 5 s, without
// reloading the page; text goes in as text, classes come from the server's
// grading (the thresholds live in one place, the Go code).
(function(){
  function cell(tr, text, cls, href){
    var td=tr.insertCell(); if(cls){ td.className=cls; }
    if(href){ var a=document.createElement('a'); a.href=href; a.textContent=text; td.appendChild(a); } else { td.textContent=text; }
    return td;
  }
  function fill(sel, items, cols, row){
    var body=document.querySelector(sel+' tbody'); if(!body){ return; }
    body.textContent='';
    if(items.length===0){ var td=body.insertRow().insertCell(); td.colSpan=cols; td.textContent=(sel==='#topics'?'no partitions assigned':'none'); }
    items.forEach(function(it){ row(body.insertRow(), it); });
  }
  function hub(h){ return '/hub?name='+encodeURIComponent(h); }
  function wait(w){ return w.type+' needs '+w.dependsOn+' '+w.needs+' (written: '+(w.has||'none')+')'; }
  function oldestLevel(s){ return s >= {{bad "oldest"}} ? 'bad' : s >= {{warn "oldest"}} ? 'warn' : 'ok'; }
  function refresh(){
    fetch('/api/overview', {credentials:'same-origin'}).then(function(r){ return r.json(); }).then(function(o){
      o.signals.forEach(function(s){ var e=document.getElementById(s.id); if(e){ e.textContent=s.value; e.className=s.level; if(e.parentNode){ e.parentNode.title=s.rule||''; } } });
      var rd=document.getElementById('readiness'); if(rd){ rd.className=o.ready?'ok':'bad'; }
      document.getElementById('ready').textContent=o.ready?'Ready.':'Not ready:';
      var ul=document.getElementById('not-ready'); ul.textContent='';
      o.notReady.forEach(function(p){ var li=document.createElement('li'); li.textContent=p; ul.appendChild(li); });
      fill('#problems', o.problems, 5, function(tr, p){
        cell(tr, p.hub, '', hub(p.hub)); cell(tr, p.retries, p.retries?'bad':'');
        cell(tr, p.waits&&p.waits.length ? p.waits.map(wait).join('; ') : (p.waitingDependency?'a dependency':'–'), p.waitingDependency?'warn':'');
        cell(tr, p.oldestSeconds.toFixed(1)+'s', oldestLevel(p.oldestSeconds)); cell(tr, p.held);
      });
      var note=document.getElementById('letter-hubs-note');
      if(o.letterHubsError){ note.textContent=''; var sp=document.createElement('span'); sp.className='warn'; sp.textContent='not known: '+o.letterHubsError; note.appendChild(sp); }
      else { note.textContent='hubs with letters no replay applied: '+o.letterHubsTotal+(o.letterHubsTotal>o.letterHubs.length?'; the '+o.letterHubs.length+' with most below':'')+'.'; }
      fill('#letter-hubs', o.letterHubs, 4, function(tr, h){
        cell(tr, h.hub, '', hub(h.hub)); cell(tr, h.letters, 'bad');
        var td=tr.insertCell();
        h.reasons.forEach(function(r, i){ if(i){ td.appendChild(document.createTextNode(', ')); }
          var a=document.createElement('a'); a.href='/deadletters?reason='+encodeURIComponent(r.reason); a.textContent=r.reason; td.appendChild(a);
          td.appendChild(document.createTextNode(' '+r.letters)); });
        cell(tr, new Date(h.newest).toISOString().replace(/\.\d+Z$/, 'Z'));
      });
      fill('#topics', o.topics, 6, function(tr, t){
        cell(tr, t.topic); cell(tr, t.partitions); cell(tr, t.known); cell(tr, t.known ? t.lag : '–', t.level);
        cell(tr, t.worstPartition >= 0 ? t.worstPartition+': '+t.worstLag : '–'); cell(tr, t.outstanding);
      });
    }).catch(function(){});
  }
  setInterval(refresh, 5000);
})();
</script>
</body></html>`))

// partitionsTmpl is every assigned partition, behind the overview's
// summary per topic; a value not known yet shows as "–".
var partitionsTmpl = template.Must(template.New("partitions").Funcs(consoleFuncs).Parse(consoleHead + `
<h1>Partitions</h1>
<p>Committed lag is the high watermark minus the committed position: what a restart would read again or for the first time ({{rule "partition"}}). “–” is not known yet: nothing committed, nothing read, or the high watermark not learned.</p>
<table id="partitions"><tr><th>topic</th><th>partition</th><th>committed</th><th>position</th><th>outstanding</th><th>committed lag</th></tr>
{{range .Partitions}}<tr><td>{{.Topic}}</td><td>{{.Partition}}</td><td>{{dash .Committed}}</td><td>{{if .HasPosition}}{{.Position}}{{else}}–{{end}}</td><td>{{.Outstanding}}</td><td class="{{if ge .Lag 0}}{{level "partition" .Lag}}{{end}}">{{dash .Lag}}</td></tr>{{else}}<tr><td colspan="6">no partitions assigned</td></tr>{{end}}
</table>
</body></html>`))

// inactiveTmpl is a page of the inactive hubs, by name.
var inactiveTmpl = template.Must(template.New("inactive").Funcs(consoleFuncs).Parse(consoleHead + `
<h1>Inactive hubs</h1>
<p>Hubs that sent no heartbeat for --hub-inactive-after; {{.Total}} in all as of the last sweep. {{len .Hubs}} here, by name{{if .After}}, after “{{.After}}”{{end}}.</p>
{{if .Err}}<p class="bad">{{.Err}}</p>{{end}}
<table id="inactive"><tr><th>hub</th><th>inactive since</th></tr>
{{range .Hubs}}<tr><td><a href="/hub?name={{.Hub}}">{{.Hub}}</a></td><td>{{when .Since}}</td></tr>{{else}}<tr><td colspan="2">none</td></tr>{{end}}
</table>
{{if .Next}}<p><a id="inactive-next" href="/hubs/inactive?after={{.Next}}">next {{.PageSize}}</a></p>{{end}}
</body></html>`))

var hubTmpl = template.Must(template.New("hub").Funcs(consoleFuncs).Parse(consoleHead + `
<h1>Hub <span id="hub-name">{{.Hub}}</span></h1>
{{if .StateErr}}<p class="bad">{{.StateErr}}</p>{{end}}
{{with .State}}<p>State: <b id="hub-state" class="{{if not .State.Active}}bad{{end}}">{{.State}}</b> since {{when .Since}}{{if .State.Deleted}} (tombstoned: bundles of its old incarnation are ignored){{end}}</p>
{{else}}<p>State: <b id="hub-state">unknown</b> (no row in stb.hubs)</p>{{end}}
{{if .Dormant}}<p>Idle: its unit was evicted from memory; its versions are kept.</p>{{end}}
<h2>In the database</h2>
{{if .StoredErr}}<p class="bad">{{.StoredErr}}</p>{{end}}
<table id="stored"><tr><th>type</th><th>version</th><th>written</th><th>from</th></tr>
{{range .Stored}}<tr><td>{{.Type}}</td><td>{{.Version}}</td><td>{{secs .AgeSec}} ago</td><td>{{if ge .Offset 0}}{{.Topic}}/{{.Partition}}@{{.Offset}}{{else}}tombstone{{end}}</td></tr>{{else}}<tr><td colspan="4">nothing</td></tr>{{end}}
</table>
{{range .Sections}}<h2>{{.Title}}</h2>
{{if .Err}}<p class="bad">{{.Err}}</p>{{end}}
<table id="{{.ID}}"><tr>{{range .Columns}}<th>{{.}}</th>{{end}}</tr>
{{range .Rows}}<tr>{{range .}}<td>{{.}}</td>{{end}}</tr>{{end}}
</table>{{end}}
<h2>In this bridge's memory</h2>
{{with .Unit}}
<table id="types"><tr><th>type</th><th>processed</th><th>held</th><th>held count</th><th>in flight</th><th>waiting</th><th>retries</th><th>oldest held</th><th>resyncs asked</th><th>last error</th></tr>
{{range .Types}}<tr><td>{{.Type}}</td><td>{{.Processed}}</td><td>{{.Held}}</td><td>{{.HeldCount}}</td><td>{{.InFlight}}</td><td>{{.Waiting}}{{if .DependsOn}}: needs {{.Needs}}, written {{or .Has "none"}}{{end}}</td><td>{{.Retries}}</td><td>{{secs .AgeSec}}</td><td class="resyncs">{{if .Resyncs}}{{.Resyncs}}, last {{secs .LastResyncAgeSec}} ago{{end}}</td><td>{{if .LastError}}<span class="bad">{{.LastError}}</span> ({{secs .LastErrorAgeSec}} ago){{end}}</td></tr>{{end}}
</table>
{{else}}<p>This bridge holds nothing of this hub (another replica may, or it never sent anything).</p>{{end}}
<h2>Dead letters of this hub</h2>
{{if .LettersErr}}<p class="bad">{{.LettersErr}}</p>{{end}}
<table id="letters"><tr><th>id</th><th>stored</th><th>reason</th><th>type</th><th>version</th><th>replay</th><th>error</th></tr>
{{range .Letters}}<tr><td>{{.ID}}</td><td>{{when .CreatedAt}}</td><td>{{.Reason}}</td><td>{{.Type}}</td><td>{{.Version}}</td><td>{{.ReplayOutcome}}</td><td>{{.Error}}</td></tr>{{else}}<tr><td colspan="7">none</td></tr>{{end}}
</table>
{{if .Letters}}{{if .CanReplay}}<form method="post" action="/actions/replay" id="replay-hub"><input type="hidden" name="csrf" value="{{.CSRF}}"><input type="hidden" name="hub" value="{{.Hub}}">
<button>replay this hub's letters</button> <label><input type="checkbox" name="dry_run" checked> dry run</label> (once the cause is fixed; the version fence keeps the database from going back)</form>
{{else}}<p>Re-drive them with <code>stb deadletters replay --hub NAME</code> once the cause is fixed.</p>{{end}}{{end}}
<h2>Delete or reset</h2>
<form method="post" action="/actions/hub" id="hub-action"><input type="hidden" name="csrf" value="{{.CSRF}}"><input type="hidden" name="name" value="{{.Hub}}">
<select name="action"><option value="delete">delete: remove its rows, ignore its old incarnation</option><option value="reset">reset: remove its rows and versions (incarnation went back)</option></select>
type its name to confirm <input name="confirm" id="hub-confirm" autocomplete="off"> <button>apply</button></form>
<p>The same as <code>stb hub delete|reset NAME</code>; every bridge drops what it holds of the hub.</p>
</body></html>`))

var deadLettersTmpl = template.Must(template.New("deadletters").Funcs(consoleFuncs).Parse(consoleHead + `
<h1>Dead letters</h1>
{{if .Err}}<p class="bad">{{.Err}}</p>{{end}}
<table id="reasons"><tr><th>reason</th><th>letters</th><th>last hour</th><th>newest</th></tr>
{{range .Groups}}<tr><td><a href="/deadletters?reason={{.Reason}}">{{.Reason}}</a></td><td>{{.Count}}</td><td>{{.LastHour}}</td><td>{{when .Newest}}</td></tr>{{else}}<tr><td colspan="4">none</td></tr>{{end}}
</table>
{{if .Reason}}<h2>Newest {{.Reason}} letters</h2>
{{range .Letters}}<div class="letter"><h3>#{{.ID}} · <a href="/hub?name={{.Hub}}">{{.Hub}}</a> · {{.Type}} {{.Version}} · {{.Origin.Topic}}/{{.Origin.Partition}}@{{.Origin.Offset}} · {{when .CreatedAt}}{{if .ReplayOutcome}} · replay {{.ReplayOutcome}}{{end}}</h3>
{{if $.CanReplay}}<form method="post" action="/actions/replay" class="replay-one"><input type="hidden" name="csrf" value="{{$.CSRF}}"><input type="hidden" name="id" value="{{.ID}}"><input type="hidden" name="reason" value="{{$.Reason}}"><button>replay #{{.ID}}</button> <label><input type="checkbox" name="dry_run" checked> dry run</label></form>{{end}}
<p class="bad">{{.Error}}</p>
<pre>{{headers .Headers}}</pre><pre>{{preview .Data}}</pre></div>{{end}}
<p>List them with <code>stb deadletters list --reason {{.Reason}}</code>; re-drive them with <code>stb deadletters replay --reason {{.Reason}}</code>{{if .CanReplay}} or here{{end}}.</p>
{{if .CanReplay}}<form method="post" action="/actions/replay" id="replay-reason"><input type="hidden" name="csrf" value="{{.CSRF}}"><input type="hidden" name="reason" value="{{.Reason}}">
<button>replay the {{.Reason}} letters</button> <label><input type="checkbox" name="dry_run" id="replay-dry" checked> dry run</label></form>{{end}}
{{end}}
<h2>Purge</h2>
<form method="post" action="/actions/purge" id="purge"><input type="hidden" name="csrf" value="{{.CSRF}}">
delete the letters stored more than <input name="before" value="720h" size="6"> ago <button>purge</button></form>
</body></html>`))
