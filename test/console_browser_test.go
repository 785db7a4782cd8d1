package test

import (
	"context"
	"os"
	"os/exec"
	"path/filepath"
	"strings"
	"testing"
	"time"

	"github.com/chromedp/chromedp"
	"github.com/twmb/franz-go/pkg/kgo"
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
// headless Chromium: the counts, a search, a hub's page, a dead letter
// with its reason, a hub whose name is HTML, which must show as text
// and run nothing, a dry-run replay and a hub deleted from its page. A screenshot of the overview is kept in the test's
// temporary directory (its path is logged).
func TestConsoleInABrowser(t *testing.T) {
	browser := chromiumPath(t)
	e := newEnv(t, 2)
	exp := e.simulate("console", "--hubs", "12", "--clusters", "3", "--generations", "3")
	b := e.startBridge()
	e.waitVerified(exp, time.Minute)
	// Then a hub whose name is HTML, and a message that is dead-lettered.
	const hostile = `<img src=x onerror="document.title='pwned'"><b>hostile</b>`
	recs := []*kgo.Record{
		ceRecord("hostile-hb", hostile, "heartbeat", "1.1", []byte(`{}`)),
		ceRecord("broken", "hub-broken", "managedclusters", "1.1", []byte(`{"objects":[{"metadata":`)),
	}
	for _, r := range recs {
		r.Topic = "status"
	}
	if err := e.producer().ProduceSync(context.Background(), recs...).FirstErr(); err != nil {
		t.Fatal(err)
	}

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
	if parts := text("#partitions"); !strings.Contains(parts, "committed lag") || strings.Count(parts, "status") != 2 {
		t.Fatalf("overview's partitions: %q, want both partitions of status with their committed lag", parts)
	}
	shot, err := chromedp.Run(ctx, chromedp.FullScreenshot(90))
	if err != nil {
		t.Fatal(err)
	}
	png := filepath.Join(t.TempDir(), "console.png")
	if err := os.WriteFile(png, shot, 0o644); err != nil {
		t.Fatal(err)
	}
	t.Logf("screenshot of the console's overview: %s (%d bytes)", png, len(shot))

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
