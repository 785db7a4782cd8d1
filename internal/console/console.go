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
	// Problems are the hubs that need attention, worst first.
	Problems []HubProblem `json:"problems"`
	Ready    bool         `json:"ready"`
	NotReady []string     `json:"notReady"`
	// AsOfSec is the age of the counts over the units.
	AsOfSec float64 `json:"asOfSeconds"`
}

// HubProblem is one hub on the console's list of problems.
type HubProblem struct {
	Hub               string  `json:"hub"`
	Retries           int     `json:"retries"`
	WaitingDependency bool    `json:"waitingDependency"`
	OldestSec         float64 `json:"oldestSeconds"`
	Held              int     `json:"held"`
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
	o.Partitions = c.partitions.Stats()
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
	if c.pool != nil {
		if n, err := deadletter.CountRecent(qctx, c.pool, time.Hour); err == nil {
			o.DeadLettersLastHour = n
		}
	}
	o.NotReady = c.ready.Problems(ctx)
	o.Ready = len(o.NotReady) == 0
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
}

const consoleHead = `<!doctype html>
<html><head><meta charset="utf-8"><title>STB console</title>
<style>body{font-family:sans-serif;margin:1.5em}table{border-collapse:collapse;margin:.5em 0}td,th{border:1px solid #ccc;padding:2px 8px;text-align:left}
.bad{color:#b00}.counts span{display:inline-block;margin-right:1.5em}.counts b{font-size:1.3em}pre{white-space:pre-wrap;max-width:80em;background:#f6f6f6;padding:.5em}</style>
</head><body>
<p><a href="/">overview</a> · <a href="/deadletters">dead letters</a> · <a href="/work">work statuses</a> · <a href="/debug/units?limit=100">/debug/units</a>
<form method="get" action="/" style="display:inline;margin-left:2em"><input name="q" id="q" placeholder="hub name" value="{{.Q}}"> <button>search</button></form></p>`

var overviewTmpl = template.Must(template.New("overview").Funcs(consoleFuncs).Parse(consoleHead + `
<h1>STB — status transport bridge</h1>
{{with .O}}
<p id="ready" class="{{if not .Ready}}bad{{end}}">{{if .Ready}}Ready.{{else}}Not ready: {{range .NotReady}}{{.}}; {{end}}{{end}}</p>
<p class="counts">
<span>active hubs <b id="c-active">{{.ActiveHubs}}</b></span>
<span>inactive <b id="c-inactive" class="{{if .InactiveHubs}}bad{{end}}">{{.InactiveHubs}}</b></span>
<span>deleted <b id="c-deleted">{{.DeletedHubs}}</b></span>
<span>units in memory <b id="c-hubs">{{.Hubs}}</b></span>
<span>idle, evicted <b id="c-dormant">{{.DormantHubs}}</b></span>
<span>holding unwritten <b id="c-held">{{.Held}}</b></span>
<span>retrying <b id="c-retrying">{{.Retrying}}</b></span>
<span>waiting on a dependency <b id="c-waiting">{{.WaitingDependency}}</b></span>
<span>dead letters, last hour <b id="c-dead">{{.DeadLettersLastHour}}</b></span>
<span>oldest unwritten <b id="c-oldest">{{secs .OldestUnwrittenSec}}</b></span>
<span>counted <b id="c-asof">{{secs .AsOfSec}}</b> ago</span>
</p>
{{end}}
{{if .Q}}<h2>Hubs matching “{{.Q}}”</h2>{{if .SearchErr}}<p class="bad">database not searched: {{.SearchErr}}</p>{{end}}
{{if .Found}}<ul id="found">{{range .Found}}<li><a href="/hub?name={{.}}">{{.}}</a></li>{{end}}</ul>{{if .More}}<p>more than these; narrow the search</p>{{end}}
{{else}}<p id="found">no hub matches</p>{{end}}{{end}}
{{with .O}}
<h2>Hubs that need attention</h2>
<table id="problems"><thead><tr><th>hub</th><th>retries</th><th>waiting on a dependency</th><th>oldest unwritten</th><th>types held</th></tr></thead><tbody>
{{range .Problems}}<tr><td><a href="/hub?name={{.Hub}}">{{.Hub}}</a></td><td>{{.Retries}}</td><td>{{.WaitingDependency}}</td><td>{{secs .OldestSec}}</td><td>{{.Held}}</td></tr>{{else}}<tr><td colspan="5">none</td></tr>{{end}}
</tbody></table>
<h2>Partitions</h2>
<table id="partitions"><tr><th>topic</th><th>partition</th><th>committed</th><th>position</th><th>outstanding</th><th>committed lag</th></tr>
{{range .Partitions}}<tr><td>{{.Topic}}</td><td>{{.Partition}}</td><td>{{.Committed}}</td><td>{{.Position}}</td><td>{{.Outstanding}}</td><td>{{if ge .Lag 0}}{{.Lag}}{{else}}–{{end}}</td></tr>{{end}}
</table>
{{end}}
<script>
// Refreshes the counts and the list of problems every 5 s, without
// reloading the page; text goes in as text.
(function(){
  function set(id, v){ var e=document.getElementById(id); if(e){ e.textContent=v; } }
  function refresh(){
    fetch('/api/overview', {credentials:'same-origin'}).then(function(r){ return r.json(); }).then(function(o){
      set('c-hubs', o.hubs); set('c-dormant', o.dormantHubs); set('c-active', o.activeHubs);
      set('c-inactive', o.inactiveHubs); set('c-deleted', o.deletedHubs); set('c-held', o.held); set('c-retrying', o.retrying); set('c-waiting', o.waitingDependency);
      set('c-dead', o.deadLettersLastHour); set('c-oldest', o.oldestUnwrittenSeconds.toFixed(1)+'s'); set('c-asof', o.asOfSeconds.toFixed(1)+'s');
      set('ready', o.ready ? 'Ready.' : 'Not ready: ' + o.notReady.join('; '));
      var body=document.querySelector('#problems tbody'); if(!body){ return; }
      body.textContent='';
      if(o.problems.length===0){ var tr=body.insertRow(); var td=tr.insertCell(); td.colSpan=5; td.textContent='none'; }
      o.problems.forEach(function(p){
        var tr=body.insertRow(); var a=document.createElement('a');
        a.href='/hub?name='+encodeURIComponent(p.hub); a.textContent=p.hub; tr.insertCell().appendChild(a);
        tr.insertCell().textContent=p.retries; tr.insertCell().textContent=p.waitingDependency;
        tr.insertCell().textContent=p.oldestSeconds.toFixed(1)+'s'; tr.insertCell().textContent=p.held;
      });
    }).catch(function(){});
  }
  setInterval(refresh, 5000);
})();
</script>
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
{{range .Types}}<tr><td>{{.Type}}</td><td>{{.Processed}}</td><td>{{.Held}}</td><td>{{.HeldCount}}</td><td>{{.InFlight}}</td><td>{{.Waiting}}</td><td>{{.Retries}}</td><td>{{secs .AgeSec}}</td><td class="resyncs">{{if .Resyncs}}{{.Resyncs}}, last {{secs .LastResyncAgeSec}} ago{{end}}</td><td>{{if .LastError}}<span class="bad">{{.LastError}}</span> ({{secs .LastErrorAgeSec}} ago){{end}}</td></tr>{{end}}
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
