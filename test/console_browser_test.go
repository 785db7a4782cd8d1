package test

import (
	"bytes"
	"context"
	"fmt"
	"io"
	"net/http"
	"net/http/httptest"
	"os"
	"os/exec"
	"path/filepath"
	"slices"
	"strings"
	"sync"
	"sync/atomic"
	"testing"
	"time"

	"github.com/chromedp/chromedp"
	"github.com/prometheus/client_golang/prometheus"
	"github.com/twmb/franz-go/pkg/kgo"

	"github.com/stbridge/stb/conflation"
	"github.com/stbridge/stb/dbsyncers"
	"github.com/stbridge/stb/internal/console"
	"github.com/stbridge/stb/pkg/bundle"
	"github.com/stbridge/stb/pkg/committer"
)

// chromiumPath finds the headless browser `make test` installs
// (scripts/ensure-chromium.sh); STB_CHROMIUM names another.
func chromiumPath(t *testing.T) string {
	t.Helper()
	if p := os.Getenv("STB_CHROMIUM"); p != "" {
		return p
	}
	for _, name := range []string{"chromium", "chromium-browser", "google-chrome"} {
		if p, err := exec.LookPath(name); err == nil {
			return p
		}
	}
	t.Fatal("no chromium: `make test` installs Debian's chromium (scripts/ensure-chromium.sh), or set STB_CHROMIUM")
	return ""
}

// TestConsoleInABrowser drives the console of a running bridge in
// headless Chromium: the overview's sections, a figure that turns bad
// (another colour) at a refresh when a message is dead-lettered, the
// partitions behind a link, the counts, a search, a hub's page, a dead letter
// with its reason, a hub whose name is HTML, which must show as text
// and run nothing, a dry-run replay and a hub deleted from its page. A screenshot of the overview is kept in the test's
// temporary directory (its path is logged).
func TestConsoleInABrowser(t *testing.T) {
	browser := chromiumPath(t)
	e := newEnv(t, 2)
	exp := e.simulate("console", "--hubs", "12", "--clusters", "3", "--generations", "3")
	b := e.startBridge()
	e.waitVerified(exp, time.Minute)
	// Then a hub whose name is HTML, and (once the overview is open) a
	// message that is dead-lettered.
	const hostile = `<img src=x onerror="document.title='pwned'"><b>hostile</b>`
	produce := func(recs ...*kgo.Record) {
		t.Helper()
		for _, r := range recs {
			r.Topic = "status"
		}
		if err := e.producer().ProduceSync(context.Background(), recs...).FirstErr(); err != nil {
			t.Fatal(err)
		}
	}
	produce(ceRecord("hostile-hb", hostile, "heartbeat", "1.1", []byte(`{}`)))

	opts := append(chromedp.DefaultExecAllocatorOptions[:],
		chromedp.ExecPath(browser), chromedp.NoSandbox, chromedp.DisableGPU, chromedp.WindowSize(1280, 1000))
	actx, cancelAlloc := chromedp.NewExecAllocator(context.Background(), opts...)
	defer cancelAlloc()
	bctx, cancel := chromedp.NewContext(actx)
	defer cancel()
	// The first action starts the browser and must not have a deadline
	// (it would stop the browser); the rest do.
	if err := chromedp.Do(bctx, chromedp.Navigate(b.adminURL+"/")); err != nil {
		t.Fatalf("start %s: %v", browser, err)
	}
	ctx, cancelTimeout := context.WithTimeout(bctx, 90*time.Second)
	defer cancelTimeout()
	text := func(sel string) string {
		t.Helper()
		v, err := chromedp.Run(ctx, chromedp.Text(chromedp.CSS(sel)))
		if err != nil {
			t.Fatalf("text of %s: %v", sel, err)
		}
		return v
	}
	do := func(what string, steps ...chromedp.Action[chromedp.Void]) {
		t.Helper()
		if err := chromedp.Do(ctx, steps...); err != nil {
			t.Fatalf("%s: %v", what, err)
		}
	}

	// The overview opens on what is wrong: readiness, the graded figures
	// and their thresholds, the hubs that need attention, those with dead
	// letters, the lag per topic and the links behind it.
	do("overview", chromedp.WaitVisible(chromedp.CSS("#c-dead")))
	for _, sel := range []string{"#readiness", "#problems", "#letter-hubs", "#topics", "#thresholds", "#inactive-link", "#partitions-link"} {
		if n, err := chromedp.Run(ctx, chromedp.Evaluate[int](`document.querySelectorAll('`+sel+`').length`)); err != nil || n != 1 {
			t.Fatalf("overview has %d %s (%v), want 1", n, sel, err)
		}
	}
	class := func(sel string) (string, string) {
		t.Helper()
		v, err := chromedp.Run(ctx, chromedp.Evaluate[[]string](`(function(e){ return [e.className, getComputedStyle(e).color]; })(document.querySelector('`+sel+`'))`))
		if err != nil || len(v) != 2 {
			t.Fatalf("class of %s: %v %v", sel, v, err)
		}
		return v[0], v[1]
	}
	okClass, okColour := class("#c-dead")
	if d := text("#c-dead"); d != "0" || okClass != "ok" {
		t.Fatalf("no dead letter yet: #c-dead shows %q with class %q, want 0, ok", d, okClass)
	}
	// A message that is dead-lettered: the page, not reloaded, turns the
	// figure bad at its next refresh (every 5 s), in another colour.
	produce(ceRecord("broken", "hub-broken", "managedclusters", "1.1", []byte(`{"objects":[{"metadata":`)))
	var deadClass, badColour string
	for deadline := time.Now().Add(30 * time.Second); ; {
		deadClass, badColour = class("#c-dead")
		if deadClass == "bad" || time.Now().After(deadline) {
			break
		}
		time.Sleep(500 * time.Millisecond)
	}
	if d := text("#c-dead"); deadClass != "bad" || d != "1" || badColour == okColour {
		t.Fatalf("after a dead letter, refreshed: #c-dead %q class %q colour %s (ok was %s), want 1, bad, another colour", d, deadClass, badColour, okColour)
	}
	if hubs := text("#letter-hubs"); !strings.Contains(hubs, "hub-broken") || !strings.Contains(hubs, "bad_payload 1") {
		t.Fatalf("refreshed hubs with dead letters: %q, want hub-broken with its reason", hubs)
	}

	// The counts: 12 simulated hubs and the hostile one; the broken one's
	// data is not JSON, so the reader dead-letters it when read (a syntax
	// check, README "Late decoding") and it never becomes a hub.
	var hubs, dead string
	for deadline := time.Now().Add(30 * time.Second); ; {
		do("overview", chromedp.Navigate(b.adminURL+"/"), chromedp.WaitVisible(chromedp.CSS("#c-hubs")))
		hubs, dead = text("#c-hubs"), text("#c-dead")
		if hubs == "13" && dead == "1" || time.Now().After(deadline) {
			break
		}
		time.Sleep(500 * time.Millisecond)
	}
	if hubs != "13" || dead != "1" {
		t.Fatalf("overview shows %s hubs and %s dead letters in the last hour, want 13 and 1", hubs, dead)
	}
	// The lag sums up per topic; the partitions are a link away, "–"
	// where a value is not known, never -1.
	topics, err := chromedp.Run(ctx, chromedp.Evaluate[[]string](
		`Array.from(document.querySelectorAll('#topics tbody tr')).map(function(r){ return Array.from(r.cells).map(function(c){ return c.textContent; }).join('|'); })`))
	if err != nil || len(topics) != 1 || !strings.HasPrefix(topics[0], "status|2|") {
		t.Fatalf("overview's lag per topic: %q (%v), want one row, status with its 2 partitions", topics, err)
	}
	if letters := text("#letter-hubs"); !strings.Contains(letters, "hub-broken") || !strings.Contains(letters, "bad_payload") {
		t.Fatalf("overview's hubs with dead letters: %q", letters)
	}
	if cls, _ := class("#c-dead"); cls != "bad" {
		t.Fatalf("a dead letter in the last hour: class %q, want bad", cls)
	}
	screenshot(t, ctx, "console.png")
	do("partitions", chromedp.Click(chromedp.CSS("#partitions-link")), chromedp.WaitVisible(chromedp.CSS("#partitions")))
	if parts := text("#partitions"); !strings.Contains(parts, "committed lag") || strings.Count(parts, "status") != 2 || strings.Contains(parts, "-1") {
		t.Fatalf("partitions page: %q, want both partitions of status with their committed lag, no -1", parts)
	}

	// Search, then a hub's page.
	do("search", chromedp.SetValue(chromedp.CSS("#q"), "hub-00"), chromedp.Submit(chromedp.CSS("#q")),
		chromedp.WaitVisible(chromedp.CSS("#found")))
	found := text("#found")
	do("open a hub", chromedp.Click(chromedp.CSS(`#found a[href="/hub?name=hub-001"]`)), chromedp.WaitVisible(chromedp.CSS("#types")))
	hubName, types, stored := text("#hub-name"), text("#types"), text("#stored")
	if strings.Count(found, "hub-0") != 9 || hubName != "hub-001" || !strings.Contains(types, "managedclusters") {
		t.Fatalf("search found %q; hub page of %q with types %q", found, hubName, types)
	}
	// What the database holds of it: each type's version, how long ago it
	// was written and from where.
	if !strings.Contains(stored, "managedclusters") || !strings.Contains(stored, "ago") || !strings.Contains(stored, "status/") {
		t.Fatalf("hub page's database versions: %q", stored)
	}

	// The dead letter, by reason.
	do("dead letters", chromedp.Navigate(b.adminURL+"/deadletters"), chromedp.WaitVisible(chromedp.CSS("#reasons")))
	reasons := text("#reasons")
	do("a reason", chromedp.Click(chromedp.CSS("#reasons a")), chromedp.WaitVisible(chromedp.CSS(".letter")))
	letter := text(".letter")
	if !strings.Contains(reasons, "bad_payload") || !strings.Contains(letter, "hub-broken") || !strings.Contains(letter, "unexpected end of JSON input") {
		t.Fatalf("dead letters: reasons %q, letter %q", reasons, letter)
	}

	// The hostile hub: its name is text, and its markup runs nothing.
	do("search the hostile hub", chromedp.Navigate(b.adminURL+"/?q=hostile"), chromedp.WaitVisible(chromedp.CSS("#found")))
	shown := text("#found")
	listed, err := chromedp.Run(ctx, chromedp.Evaluate[int](`document.querySelectorAll('#found img, #found b').length`))
	if err != nil {
		t.Fatal(err)
	}
	do("open the hostile hub", chromedp.Click(chromedp.CSS("#found a")), chromedp.WaitVisible(chromedp.CSS("#hub-name")))
	onPage, err := chromedp.Run(ctx, chromedp.Evaluate[int](`document.querySelectorAll('#hub-name img, #hub-name b').length`))
	if err != nil {
		t.Fatal(err)
	}
	title, err := chromedp.Run(ctx, chromedp.Title())
	if err != nil {
		t.Fatal(err)
	}
	if !strings.Contains(shown, hostile) || listed != 0 || onPage != 0 || title != "STB console" {
		t.Fatalf("hostile hub shown as %q; elements made of its name: %d in the search, %d on its page; title %q (its onerror sets 'pwned')",
			shown, listed, onPage, title)
	}

	// The actions: a dry run of the dead letter's replay (still broken:
	// it fails again, and nothing is marked), then deleting a hub from its
	// page, its name typed to confirm.
	do("a reason's letters", chromedp.Navigate(b.adminURL+"/deadletters?reason=bad_payload"), chromedp.WaitVisible(chromedp.CSS("#replay-reason")))
	do("dry-run replay", chromedp.Click(chromedp.CSS("#replay-reason button")), chromedp.WaitVisible(chromedp.CSS("#action-result")))
	replayTitle, replayed := text("#action-title"), text("#action-result")
	var outcome string
	if err := e.pool.QueryRow(context.Background(), `SELECT replay_outcome FROM stb.dead_letters WHERE hub = 'hub-broken'`).Scan(&outcome); err != nil {
		t.Fatal(err)
	}
	if !strings.Contains(replayTitle, "dry run") || !strings.Contains(replayed, "failed 1") || !strings.Contains(replayed, "bad_payload") || outcome != "" {
		t.Fatalf("dry-run replay: %q / %q; letter's replay outcome %q, want it unmarked", replayTitle, replayed, outcome)
	}
	do("a hub to delete", chromedp.Navigate(b.adminURL+"/hub?name=hub-002"), chromedp.WaitVisible(chromedp.CSS("#hub-action")))
	do("delete it", chromedp.SetValue(chromedp.CSS("#hub-confirm"), "hub-002"), chromedp.Click(chromedp.CSS("#hub-action button")),
		chromedp.WaitVisible(chromedp.CSS("#action-result")))
	deleted := text("#action-result")
	if !strings.Contains(deleted, "rows removed") || e.hubState("hub-002") != "deleted" || e.clustersOf("hub-002") != "" {
		t.Fatalf("delete from the console: %q; state %q, clusters %q", deleted, e.hubState("hub-002"), e.clustersOf("hub-002"))
	}
	do("its page again", chromedp.Navigate(b.adminURL+"/hub?name=hub-002"), chromedp.WaitVisible(chromedp.CSS("#hub-state")))
	if st := text("#hub-state"); st != "deleted" {
		t.Fatalf("hub page shows state %q after the delete", st)
	}
}

// screenshot keeps a full screenshot of the page in the test's temporary
// directory, or in $STB_SCREENSHOTS to look at after the run, and logs
// its path.
func screenshot(t *testing.T, ctx context.Context, name string) {
	t.Helper()
	shot, err := chromedp.Run(ctx, chromedp.FullScreenshot(90))
	if err != nil {
		t.Fatal(err)
	}
	dir := os.Getenv("STB_SCREENSHOTS")
	if dir == "" {
		dir = t.TempDir()
	}
	png := filepath.Join(dir, name)
	if err := os.WriteFile(png, shot, 0o644); err != nil {
		t.Fatal(err)
	}
	t.Logf("screenshot of the console: %s (%d bytes)", png, len(shot))
}

// browserReadiness is a readiness the test changes under the console.
type browserReadiness struct {
	mu       sync.Mutex
	problems []string
}

func (r *browserReadiness) Problems(context.Context) []string {
	r.mu.Lock()
	defer r.mu.Unlock()
	return slices.Clone(r.problems)
}

func (r *browserReadiness) set(p ...string) {
	r.mu.Lock()
	defer r.mu.Unlock()
	r.problems = p
}

type browserPartitions []committer.PartitionStats

func (p browserPartitions) Stats() []committer.PartitionStats { return p }

// TestConsoleAt200kHubsInABrowser opens the console over 200,000 hubs,
// every one holding an unwritten heartbeat a minute old (the console's
// worst case, as BenchmarkConsole), and 48 partitions of 12 topics whose
// lag is not known yet: the first screen stays bounded (the 100 worst
// hubs, a row per topic, no -1), its figures are graded, and a readiness
// problem appearing turns the readiness bad at the next refresh, in
// another colour, with its cause, without a reload. A screenshot is
// kept in the test's temporary directory.
func TestConsoleAt200kHubsInABrowser(t *testing.T) {
	browser := chromiumPath(t)
	now := time.Date(2026, 11, 24, 10, 0, 0, 0, time.UTC)
	var clock atomic.Int64
	clock.Store(now.UnixNano())
	m, err := conflation.NewManager(conflation.Config{
		Types: dbsyncers.Default().Types(), Registerer: prometheus.NewRegistry(),
		Now: func() time.Time { return time.Unix(0, clock.Load()) },
	})
	if err != nil {
		t.Fatal(err)
	}
	const hubs = 200_000
	for i := range hubs {
		m.Insert(&bundle.Bundle{Hub: fmt.Sprintf("hub-%06d", i), Type: "heartbeat", Version: bundle.Version{Incarnation: 1, Generation: 1}, Size: 2})
	}
	clock.Add(int64(time.Minute))
	parts := make(browserPartitions, 48)
	for i := range parts {
		parts[i] = committer.PartitionStats{Topic: fmt.Sprintf("gh-status.hub-%02d", i/4), Partition: int32(i % 4), Committed: -1, Lag: -1}
	}
	ready := &browserReadiness{}
	c := console.New(console.Deps{Units: m, Partitions: parts, Readiness: ready})
	runCtx, stop := context.WithCancel(context.Background())
	ran := make(chan error, 1)
	go func() { ran <- c.Run(runCtx) }()
	defer func() { stop(); <-ran }()
	srv := httptest.NewServer(c.Handler())
	defer srv.Close()

	// What the first screen weighs, as served.
	resp, err := http.Get(srv.URL + "/")
	if err != nil {
		t.Fatal(err)
	}
	page, err := io.ReadAll(resp.Body)
	resp.Body.Close()
	if err != nil {
		t.Fatal(err)
	}
	if len(page) > 64<<10 || bytes.Contains(page, []byte(">-1<")) {
		t.Fatalf("overview at %d hubs: %d bytes (want at most 64 KiB), -1 shown: %v", hubs, len(page), bytes.Contains(page, []byte(">-1<")))
	}
	t.Logf("overview at %d hubs: %d bytes", hubs, len(page))

	opts := append(chromedp.DefaultExecAllocatorOptions[:],
		chromedp.ExecPath(browser), chromedp.NoSandbox, chromedp.DisableGPU, chromedp.WindowSize(1280, 1000))
	actx, cancelAlloc := chromedp.NewExecAllocator(context.Background(), opts...)
	defer cancelAlloc()
	bctx, cancel := chromedp.NewContext(actx)
	defer cancel()
	if err := chromedp.Do(bctx, chromedp.Navigate(srv.URL+"/")); err != nil {
		t.Fatalf("start %s: %v", browser, err)
	}
	ctx, cancelTimeout := context.WithTimeout(bctx, 90*time.Second)
	defer cancelTimeout()
	eval := func(js string) []string {
		t.Helper()
		v, err := chromedp.Run(ctx, chromedp.Evaluate[[]string](js))
		if err != nil {
			t.Fatalf("%s: %v", js, err)
		}
		return v
	}
	style := func(sel string) (class, colour, text string) {
		t.Helper()
		v := eval(`(function(e){ return e ? [e.className, getComputedStyle(e).color, e.textContent] : []; })(document.querySelector('` + sel + `'))`)
		if len(v) != 3 {
			t.Fatalf("no %s on the overview", sel)
		}
		return v[0], v[1], v[2]
	}
	if err := chromedp.Do(ctx, chromedp.WaitVisible(chromedp.CSS("#c-hubs"))); err != nil {
		t.Fatal(err)
	}
	rows := eval(`['#problems tbody tr', '#topics tbody tr', '#letter-hubs tbody tr'].map(function(s){ return String(document.querySelectorAll(s).length); })`)
	if want := []string{"100", "12", "1"}; !slices.Equal(rows, want) {
		t.Fatalf("rows of problems, topics, hubs with letters: %v, want %v", rows, want)
	}
	if _, _, n := style("#c-hubs"); n != "200000" {
		t.Fatalf("units in memory: %q", n)
	}
	// A minute old is past the warning (30 s), not bad (5 min); the lag
	// of no partition is known: "–", not graded.
	if cls, _, v := style("#c-oldest"); cls != "warn" || v != "60.0s" {
		t.Fatalf("oldest unwritten: %q class %q, want 60.0s warn", v, cls)
	}
	if cls, _, v := style("#c-lag"); cls != "info" || v != "–" {
		t.Fatalf("lag: %q class %q, want – info", v, cls)
	}
	if _, _, worst := style("#topics tbody tr td:nth-child(5)"); worst != "–" {
		t.Fatalf("worst partition of a topic with no lag known: %q", worst)
	}
	okClass, okColour, _ := style("#readiness")
	if okClass != "ok" {
		t.Fatalf("readiness class %q, want ok", okClass)
	}
	// Not ready: the next refresh (5 s) says why, in another colour.
	ready.set("every Kafka broker unreachable for 1m0s")
	var badClass, badColour, cause string
	for deadline := time.Now().Add(30 * time.Second); badClass != "bad" && time.Now().Before(deadline); {
		time.Sleep(500 * time.Millisecond)
		badClass, badColour, _ = style("#readiness")
	}
	_, _, cause = style("#not-ready")
	if badClass != "bad" || badColour == okColour || cause != "every Kafka broker unreachable for 1m0s" {
		t.Fatalf("after a refresh, not ready: class %q colour %s (ready: %s), cause %q", badClass, badColour, okColour, cause)
	}
	// The thresholds are on the page.
	if _, _, th := style("#thresholds"); !strings.Contains(th, "oldest unwritten: warn at 30s, bad at 300s") {
		t.Fatalf("thresholds: %q", th)
	}
	screenshot(t, ctx, "console-200k.png")
}
