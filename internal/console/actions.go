package console

import (
	"context"
	"crypto/subtle"
	"fmt"
	"html/template"
	"net/http"
	"net/url"
	"strconv"
	"time"

	"go.uber.org/zap"

	"github.com/stbridge/stb/internal/profiles"
	"github.com/stbridge/stb/internal/replay"
	"github.com/stbridge/stb/pkg/db"
	"github.com/stbridge/stb/pkg/deadletter"
)

// actionTimeout bounds one console action.
const actionTimeout = 2 * time.Minute

// MaxReplayPerRequest caps the letters one replay request of the console
// goes through, so that a request ends well within actionTimeout (each
// letter can wait for Kafka) and its page shows a line for each. The page
// says how many more the filter selects and offers to go on after the
// last one (a dry run marks nothing, so it could not go on otherwise).
const MaxReplayPerRequest = 200

// replayPageSize is how many letters a console replay loads at a time.
const replayPageSize = 50

// checkAction accepts a console action only as a POST that carries the
// process's form token and, when the browser says where it comes from,
// comes from the console itself.
func (c *Console) checkAction(w http.ResponseWriter, r *http.Request) bool {
	if err := r.ParseForm(); err != nil {
		http.Error(w, "bad form: "+err.Error(), http.StatusBadRequest)
		return false
	}
	if subtle.ConstantTimeCompare([]byte(r.PostForm.Get("csrf")), []byte(c.csrf)) != 1 {
		http.Error(w, "missing or stale form token: reload the page", http.StatusForbidden)
		return false
	}
	if site := r.Header.Get("Sec-Fetch-Site"); site != "" && site != "same-origin" && site != "none" {
		http.Error(w, "cross-site request refused", http.StatusForbidden)
		return false
	}
	if origin := r.Header.Get("Origin"); origin != "" {
		if u, err := url.Parse(origin); err != nil || u.Host != r.Host {
			http.Error(w, "cross-origin request refused", http.StatusForbidden)
			return false
		}
	}
	return true
}

// actionResult is the page an action answers with.
type actionResult struct {
	Q     string // the search box of every console page
	Title string
	Lines []string
	Err   error
	Back  string
	// More, when set, is the form that replays the next letters.
	More *moreForm
}

// moreForm replays the letters after the ones a capped replay went
// through, with the same filter.
type moreForm struct {
	CSRF, Reason, Hub string
	After             int64
	Remaining         int64
	DryRun            bool
}

func (c *Console) actionRoutes(mux *http.ServeMux) {
	mux.HandleFunc("POST /actions/replay", c.replayAction)
	mux.HandleFunc("POST /actions/purge", c.purgeAction)
	mux.HandleFunc("POST /actions/hub", c.hubAction)
}

// replayAction replays one letter (id) or those of a reason or a hub, dry
// or not, at most MaxReplayPerRequest of them after the id in after. It
// runs on the console's own replay pool, one request at a time, so that a
// replay never takes a connection the committer, the dead-letter queue or
// readiness checks need, and holds at most one page of letters.
func (c *Console) replayAction(w http.ResponseWriter, r *http.Request) {
	if !c.checkAction(w, r) {
		return
	}
	res := actionResult{Title: "Replay", Back: "/deadletters"}
	f := deadletter.Filter{Reason: deadletter.Reason(r.PostForm.Get("reason")), Hub: r.PostForm.Get("hub")}
	if s := r.PostForm.Get("id"); s != "" {
		id, err := strconv.ParseInt(s, 10, 64)
		if err != nil {
			http.Error(w, "bad id", http.StatusBadRequest)
			return
		}
		f.IDs = []int64{id}
	}
	if s := r.PostForm.Get("after"); s != "" {
		after, err := strconv.ParseInt(s, 10, 64)
		if err != nil || after < 0 {
			http.Error(w, "bad after", http.StatusBadRequest)
			return
		}
		f.After = after
	}
	if len(f.IDs) == 0 && f.Reason == "" && f.Hub == "" {
		http.Error(w, "say which letters: an id, a reason or a hub", http.StatusBadRequest)
		return
	}
	if f.Reason != "" {
		res.Back = "/deadletters?reason=" + url.QueryEscape(string(f.Reason))
	}
	dry := r.PostForm.Get("dry_run") != ""
	if dry {
		res.Title = "Replay (dry run: nothing written, nothing marked)"
	}
	switch {
	case c.replay == nil || c.replayPool == nil:
		res.Err = fmt.Errorf("this bridge has no replayer: run stb deadletters replay")
	case !c.replaying.TryLock():
		res.Err = fmt.Errorf("a replay is already running on this bridge: wait for it to end, then try again")
	default:
		defer c.replaying.Unlock()
		ctx, cancel := context.WithTimeout(r.Context(), actionTimeout)
		defer cancel()
		cfg := *c.replay
		f.Limit = MaxReplayPerRequest
		cfg.Filter, cfg.DryRun, cfg.PageSize = f, dry, replayPageSize
		verb := "replay"
		if dry {
			verb = "dry run"
		}
		counts := map[deadletter.ReplayOutcome]int{}
		prog, err := replay.Run(ctx, c.replayPool, cfg, c.logger.Named("replay"), func(r replay.Result) {
			counts[r.Outcome]++
			res.Lines = append(res.Lines, r.Line(verb))
		})
		res.Err = err
		res.Lines = append(res.Lines, fmt.Sprintf("applied %d, stale %d, failed %d, skipped %d",
			counts[deadletter.ReplayApplied], counts[deadletter.ReplayStale], counts[deadletter.ReplayFailed], counts[deadletter.ReplaySkipped]))
		if prog.Remaining > 0 {
			res.Lines = append(res.Lines, fmt.Sprintf("stopped after %d letters, the most one request replays; %d more selected after letter %d",
				prog.Replayed, prog.Remaining, prog.Last))
			res.More = &moreForm{CSRF: c.csrf, Reason: string(f.Reason), Hub: f.Hub, After: prog.Last, Remaining: prog.Remaining, DryRun: dry}
		}
		c.logger.Info("console: dead letters replayed", zap.Any("counts", counts), zap.Bool("dry_run", dry),
			zap.Int64("remaining", prog.Remaining), zap.Error(err))
	}
	render(w, actionTmpl, res)
}

// purgeAction deletes the letters stored before a duration ago.
func (c *Console) purgeAction(w http.ResponseWriter, r *http.Request) {
	if !c.checkAction(w, r) {
		return
	}
	res := actionResult{Title: "Purge", Back: "/deadletters"}
	d, err := time.ParseDuration(r.PostForm.Get("before"))
	if err != nil || d < 0 {
		http.Error(w, "before: want a duration such as 720h", http.StatusBadRequest)
		return
	}
	ctx, cancel := context.WithTimeout(r.Context(), actionTimeout)
	defer cancel()
	n, err := deadletter.Purge(ctx, c.pool, deadletter.Filter{Before: time.Now().Add(-d)})
	res.Err = err
	if err == nil {
		res.Lines = []string{fmt.Sprintf("%d dead letters stored more than %s ago deleted", n, d)}
		c.logger.Info("console: dead letters purged", zap.Int64("deleted", n), zap.Duration("before", d))
	}
	render(w, actionTmpl, res)
}

// hubAction deletes or resets a hub, as stb hub delete|reset does; the
// name must be typed twice.
func (c *Console) hubAction(w http.ResponseWriter, r *http.Request) {
	if !c.checkAction(w, r) {
		return
	}
	hub, action := r.PostForm.Get("name"), db.HubAction(r.PostForm.Get("action"))
	res := actionResult{Title: fmt.Sprintf("Hub %s", action), Back: "/hub?name=" + url.QueryEscape(hub)}
	switch {
	case action != db.DeleteHub && action != db.ResetHub:
		http.Error(w, "action: want delete or reset", http.StatusBadRequest)
		return
	case hub == "" || r.PostForm.Get("confirm") != hub:
		res.Err = fmt.Errorf("type the hub's name to confirm; nothing was done")
		render(w, actionTmpl, res)
		return
	}
	ctx, cancel := context.WithTimeout(r.Context(), actionTimeout)
	defer cancel()
	out, err := db.ApplyHubRequest(ctx, c.pool, db.HubRequest{
		Hub: hub, Action: action, RequestedBy: "console", Scope: profiles.HubScope(),
	})
	res.Err = err
	if err == nil {
		res.Lines = []string{out.Describe(hub, action)}
		c.logger.Info("console: hub request", zap.String("hub", hub), zap.String("action", string(action)), zap.Int64("request", out.ID))
	}
	render(w, actionTmpl, res)
}

var actionTmpl = template.Must(template.New("action").Funcs(consoleFuncs).Parse(consoleHead + `
<h1 id="action-title">{{.Title}}</h1>
{{if .Err}}<p class="bad" id="action-error">{{.Err}}</p>{{end}}
<ul id="action-result">{{range .Lines}}<li>{{.}}</li>{{end}}</ul>
{{with .More}}<form method="post" action="/actions/replay" id="replay-more"><input type="hidden" name="csrf" value="{{.CSRF}}"><input type="hidden" name="reason" value="{{.Reason}}"><input type="hidden" name="hub" value="{{.Hub}}"><input type="hidden" name="after" value="{{.After}}">
<button>replay the next letters ({{.Remaining}} left)</button> <label><input type="checkbox" name="dry_run"{{if .DryRun}} checked{{end}}> dry run</label></form>{{end}}
<p><a id="back" href="{{.Back}}">back</a></p>
</body></html>`))
