package console

import (
	"bytes"
	"context"
	"errors"
	"fmt"
	"net/http"
	"net/http/httptest"
	"slices"
	"strings"
	"testing"
	"time"

	"github.com/prometheus/client_golang/prometheus"

	"github.com/stbridge/stb/conflation"
	"github.com/stbridge/stb/dbsyncers"
	"github.com/stbridge/stb/pkg/bundle"
	"github.com/stbridge/stb/pkg/committer"
	"github.com/stbridge/stb/pkg/db/dbtest"
	"github.com/stbridge/stb/pkg/deadletter"
)

// A threshold grades at its bounds, and says itself in words.
func TestThresholdLevel(t *testing.T) {
	th := Threshold{Warn: 10, Bad: 100, Unit: "s"}
	for v, want := range map[float64]Level{0: LevelOK, 9.9: LevelOK, 10: LevelWarn, 99: LevelWarn, 100: LevelBad, 1e9: LevelBad} {
		if got := th.Level(v); got != want {
			t.Errorf("%v: %s, want %s", v, got, want)
		}
	}
	if got := (Threshold{Bad: 1}).Level(0); got != LevelOK {
		t.Errorf("bad-only threshold at 0: %s", got)
	}
	if got := (Threshold{Bad: 1}).Level(1); got != LevelBad {
		t.Errorf("bad-only threshold at 1: %s", got)
	}
	if got := th.Rule(); got != "warn at 10s, bad at 100s" {
		t.Errorf("rule %q", got)
	}
	if got := (Threshold{Bad: 1}).Rule(); got != "bad at 1" {
		t.Errorf("rule %q", got)
	}
}

// The partitions sum up to a row per topic: the total of the lags known,
// the worst partition, and "not known" kept apart from 0.
func TestSummarizeLag(t *testing.T) {
	th := Thresholds{TopicLag: Threshold{Warn: 100, Bad: 1000}, PartitionLag: Threshold{Warn: 50, Bad: 500}}
	parts := []committer.PartitionStats{
		{Topic: "status", Partition: 0, Lag: 10, Outstanding: 1},
		{Topic: "status", Partition: 1, Lag: 60, Outstanding: 2},
		{Topic: "status", Partition: 2, Lag: -1},
		{Topic: "gh-status.a", Partition: 0, Lag: -1},
		{Topic: "gh-status.a", Partition: 1, Lag: -1},
		{Topic: "big", Partition: 3, Lag: 700},
		{Topic: "big", Partition: 4, Lag: 700},
	}
	got := summarizeLag(parts, th)
	want := []TopicLag{
		{Topic: "big", Partitions: 2, Known: 2, Lag: 1400, Worst: 3, WorstLag: 700, Level: LevelBad},
		{Topic: "gh-status.a", Partitions: 2, Known: 0, Worst: -1, WorstLag: -1, Level: LevelInfo},
		// The total (70) is under the topic's warning, its worst
		// partition (60) over the partition's: a warning.
		{Topic: "status", Partitions: 3, Known: 2, Lag: 70, Worst: 1, WorstLag: 60, Outstanding: 3, Level: LevelWarn},
	}
	if !slices.Equal(got, want) {
		t.Fatalf("summary\n got %+v\nwant %+v", got, want)
	}
	// The overview lists the worst topics, by name.
	if w := worstTopics(got, 2); len(w) != 2 || w[0].Topic != "big" || w[1].Topic != "status" {
		t.Fatalf("the 2 worst topics: %+v", w)
	}
	if got := summarizeLag(nil, th); len(got) != 0 {
		t.Fatalf("no partitions: %+v", got)
	}
}

func signalOf(t *testing.T, ss []Signal, id string) Signal {
	t.Helper()
	for _, s := range ss {
		if s.ID == id {
			return s
		}
	}
	t.Fatalf("no signal %s in %+v", id, ss)
	return Signal{}
}

// The overview's figures are graded: a dead letter is bad, none is ok, a
// count the database did not give is shown as "–", not as -1.
func TestSignals(t *testing.T) {
	th := DefaultThresholds
	o := Overview{DeadLettersLastHour: 0, InactiveHubs: 0, Retrying: 0, OldestUnwrittenSec: 1}
	ss := signals(o, th)
	for _, id := range []string{"c-dead", "c-inactive", "c-retrying", "c-waiting", "c-oldest", "c-asof"} {
		if s := signalOf(t, ss, id); s.Level != LevelOK {
			t.Errorf("%s in a quiet bridge: %s", id, s.Level)
		}
	}
	if s := signalOf(t, ss, "c-lag"); s.Value != "–" || s.Level != LevelInfo {
		t.Errorf("lag without partitions: %+v", s)
	}
	if s := signalOf(t, ss, "c-hubs"); s.Level != LevelInfo {
		t.Errorf("hubs in memory are not graded: %+v", s)
	}

	o = Overview{DeadLettersLastHour: 30, InactiveHubs: 2, Retrying: 12, WaitingDependency: 3, OldestUnwrittenSec: 400,
		Topics: []TopicLag{{Topic: "a", Known: 1, Lag: 20_000, Level: LevelWarn}, {Topic: "b", Known: 1, Lag: 5, Level: LevelOK}}}
	ss = signals(o, th)
	for id, want := range map[string]Level{"c-dead": LevelBad, "c-inactive": LevelWarn, "c-retrying": LevelBad,
		"c-waiting": LevelWarn, "c-oldest": LevelBad, "c-lag": LevelWarn} {
		if s := signalOf(t, ss, id); s.Level != want || s.Rule == "" {
			t.Errorf("%s: %s (rule %q), want %s", id, s.Level, s.Rule, want)
		}
	}
	if s := signalOf(t, ss, "c-dead"); s.Value != "30" || s.Rule != "bad at 1" {
		t.Errorf("dead letters: %+v", s)
	}
	if s := signalOf(t, ss, "c-lag"); s.Value != "20005" {
		t.Errorf("lag over the topics: %+v", s)
	}
	unknown := Overview{Topics: []TopicLag{{Topic: "a", Partitions: 4, Worst: -1, WorstLag: -1, Level: LevelInfo}}}
	if s := signalOf(t, signals(unknown, th), "c-lag"); s.Value != "–" || s.Level != LevelInfo {
		t.Errorf("lag of partitions none of which knows it: %+v", s)
	}
	if s := signalOf(t, signals(Overview{DeadLettersLastHour: -1}, th), "c-dead"); s.Value != "–" || s.Level != LevelWarn {
		t.Errorf("dead letters not counted: %+v", s)
	}
}

type fakeReadiness []string

func (f *fakeReadiness) Problems(context.Context) []string { return *f }

type fakePartitions []committer.PartitionStats

func (f *fakePartitions) Stats() []committer.PartitionStats { return *f }

// A hub waiting for its dependency says on what: the type, the version
// it needs and the version written, on the overview and its JSON.
func TestOverviewSaysWhatHubsWaitFor(t *testing.T) {
	now := time.Date(2026, 11, 24, 10, 0, 0, 0, time.UTC)
	m, err := conflation.NewManager(conflation.Config{
		Types: dbsyncers.Default().Types(), Registerer: prometheus.NewRegistry(), Now: func() time.Time { return now },
	})
	if err != nil {
		t.Fatal(err)
	}
	m.Insert(&bundle.Bundle{Hub: "hub-a", Type: "compliance", Version: bundle.Version{Incarnation: 1, Generation: 5}, Size: 2,
		Dependency: bundle.Version{Incarnation: 1, Generation: 3}, HasDependency: true})
	m.Insert(&bundle.Bundle{Hub: "hub-b", Type: "heartbeat", Version: bundle.Version{Incarnation: 1, Generation: 1}, Size: 2})
	ready := fakeReadiness{"database unreachable: connection refused"}
	parts := fakePartitions{{Topic: "status", Partition: 0, Committed: -1, Lag: -1}, {Topic: "status", Partition: 1, Committed: 7, Position: 9, HasPosition: true, Lag: 3}}
	c := New(Deps{Units: m, Readiness: &ready, Partitions: &parts})
	o := c.Overview(t.Context())
	want := Wait{Type: "compliance", DependsOn: "clusterspolicies", Needs: "≥ 1.3"}
	if len(o.Problems) != 1 || o.Problems[0].Hub != "hub-a" || !slices.Equal(o.Problems[0].Waits, []Wait{want}) {
		t.Fatalf("problems %+v, want hub-a waiting for %+v", o.Problems, want)
	}
	if o.Ready || !slices.Equal(o.NotReady, ready) {
		t.Fatalf("readiness: %v %q", o.Ready, o.NotReady)
	}
	if len(o.Topics) != 1 || o.Topics[0].Lag != 3 || o.Topics[0].Known != 1 {
		t.Fatalf("topics %+v", o.Topics)
	}

	code, page := get(t, c.Handler(), "/", "")
	for _, s := range []string{"compliance needs clusterspolicies ≥ 1.3 (written: none)", `<div id="readiness" class="bad">`,
		"<li>database unreachable: connection refused</li>", `id="topics"`, `href="/partitions"`, `href="/hubs/inactive"`, `id="thresholds"`} {
		if code != http.StatusOK || !strings.Contains(page, s) {
			t.Errorf("overview (%d) lacks %q", code, s)
		}
	}
	// The per-partition table is on its own page, with "–" for what is
	// not known, never -1.
	if strings.Contains(page, `id="partitions"`) || strings.Contains(page, ">-1<") {
		t.Errorf("overview holds the partitions or a -1:\n%s", page)
	}
	code, page = get(t, c.Handler(), "/partitions", "")
	if code != http.StatusOK || strings.Count(page, "<td>status</td>") != 2 || strings.Contains(page, "-1") || strings.Count(page, ">–</td>") != 3 {
		t.Errorf("partitions page (%d):\n%s", code, page)
	}
	// The hub's page says it too.
	if _, page := get(t, c.Handler(), "/hub?name=hub-a", ""); !strings.Contains(page, "dependency clusterspolicies: needs ≥ 1.3, written none") {
		t.Errorf("hub page lacks the wait:\n%s", page)
	}
}

// The hubs with the most dead letters not replayed, with their reasons,
// most first and bounded; and the inactive hubs a page at a time.
func TestLetterHubsAndInactiveHubs(t *testing.T) {
	pool, _ := dbtest.New(t)
	ctx := t.Context()
	var letters []deadletter.Letter
	add := func(hub string, reason deadletter.Reason, n int) {
		for range n {
			letters = append(letters, deadletter.Letter{Hub: hub, Type: "heartbeat", Version: "1.1",
				Origin: bundle.Origin{Topic: "status", Offset: int64(len(letters))}, Reason: reason, Err: errors.New("x")})
		}
	}
	add("hub-a", deadletter.BadPayload, 3)
	add("hub-a", deadletter.TooLarge, 1)
	add("hub-b", deadletter.TooLarge, 5)
	add("hub-c", deadletter.BadPayload, 1)
	add("hub-d", deadletter.BadPayload, 2) // replayed below: not listed
	if _, err := deadletter.NewWriter(pool).Write(ctx, letters...); err != nil {
		t.Fatal(err)
	}
	if _, err := pool.Exec(ctx, `UPDATE stb.dead_letters SET replay_outcome = 'applied' WHERE hub = 'hub-d'`); err != nil {
		t.Fatal(err)
	}
	hubs, total, err := loadLetterHubs(ctx, pool, 2)
	if err != nil {
		t.Fatal(err)
	}
	got := fmt.Sprint(total, " ")
	for _, h := range hubs {
		got += fmt.Sprintf("%s=%d%v ", h.Hub, h.Letters, h.Reasons)
	}
	if want := "3 hub-b=5[{too_large 5}] hub-a=4[{bad_payload 3} {too_large 1}] "; got != want {
		t.Fatalf("hubs with letters: %q, want %q", got, want)
	}

	for i := range 5 {
		if _, err := pool.Exec(ctx, `INSERT INTO stb.hubs (name, state) VALUES ($1, 'inactive')`, fmt.Sprintf("gone-%d", i)); err != nil {
			t.Fatal(err)
		}
	}
	if _, err := pool.Exec(ctx, `INSERT INTO stb.hubs (name, state) VALUES ('alive', 'active')`); err != nil {
		t.Fatal(err)
	}
	page, err := loadInactiveHubs(ctx, pool, "gone-1", 2)
	if err != nil {
		t.Fatal(err)
	}
	if len(page) != 2 || page[0].Hub != "gone-2" || page[1].Hub != "gone-3" {
		t.Fatalf("inactive page after gone-1: %+v", page)
	}
	// The console's page: consoleRows at most, a link to the next.
	c := New(Deps{Units: consoleOf(t, 0).units, Pool: pool})
	_, html := get(t, c.Handler(), "/hubs/inactive", "")
	if strings.Count(html, `href="/hub?name=gone-`) != 5 || strings.Contains(html, "alive") || strings.Contains(html, "inactive-next") {
		t.Fatalf("inactive hubs page:\n%s", html)
	}
	// Past consoleRows, a page links to the next, which starts after its
	// last name.
	if _, err := pool.Exec(ctx, `INSERT INTO stb.hubs (name, state) SELECT 'many-' || lpad(i::text, 3, '0'), 'inactive' FROM generate_series(1, 150) i`); err != nil {
		t.Fatal(err)
	}
	_, html = get(t, c.Handler(), "/hubs/inactive", "")
	if strings.Count(html, `href="/hub?name=`) != consoleRows || !strings.Contains(html, `id="inactive-next" href="/hubs/inactive?after=many-095"`) {
		t.Fatalf("first page of 155 inactive hubs:\n%s", html)
	}
	_, html = get(t, c.Handler(), "/hubs/inactive?after=many-095", "")
	if strings.Count(html, `href="/hub?name=`) != 55 || !strings.Contains(html, "many-096") || strings.Contains(html, "inactive-next") {
		t.Fatalf("second page of 155 inactive hubs:\n%s", html)
	}
	// And the overview lists the hubs with letters, linked.
	_, html = get(t, c.Handler(), "/", "")
	if !strings.Contains(html, `<a href="/hub?name=hub-b">hub-b</a></td><td class="bad">5</td>`) || !strings.Contains(html, "hubs with letters no replay applied: 3.") {
		t.Fatalf("overview's hubs with letters:\n%s", html)
	}
}

// At 200,000 hubs, every one a problem, the overview stays the size it
// was (the problems capped at consoleRows, no table per partition) and
// the waits are looked up for the listed hubs only.
func TestOverviewPageBoundedAt200kHubs(t *testing.T) {
	c := consoleOf(t, 200_000)
	parts := make(fakePartitions, 48)
	for i := range parts {
		parts[i] = committer.PartitionStats{Topic: fmt.Sprintf("gh-status.hub-%02d", i/4), Partition: int32(i % 4), Committed: -1, Lag: -1}
	}
	c.partitions = &parts
	var buf bytes.Buffer
	if err := overviewTmpl.Execute(&buf, map[string]any{"O": c.Overview(t.Context()), "Q": ""}); err != nil {
		t.Fatal(err)
	}
	if n := buf.Len(); n > 64<<10 || strings.Count(buf.String(), "<tr>") > consoleRows+12+5 {
		t.Fatalf("overview at 200,000 hubs: %d bytes, %d rows", n, strings.Count(buf.String(), "<tr>"))
	}
	rec := httptest.NewRecorder()
	c.Handler().ServeHTTP(rec, httptest.NewRequest(http.MethodGet, "/api/overview", nil))
	if rec.Code != http.StatusOK || rec.Body.Len() > 256<<10 {
		t.Fatalf("/api/overview at 200,000 hubs: %d, %d bytes", rec.Code, rec.Body.Len())
	}
}
