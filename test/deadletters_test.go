package test

import (
	"context"
	"encoding/json"
	"fmt"
	"strings"
	"testing"
	"time"

	"github.com/twmb/franz-go/pkg/kgo"
)

// bigSnapshot is a managedclusters snapshot of n clusters named
// prefix-1…n, padded to about size bytes.
func bigSnapshot(prefix string, n, size int) []byte {
	pad := strings.Repeat("x", size/n)
	var objs []string
	for i := 1; i <= n; i++ {
		objs = append(objs, fmt.Sprintf(`{"metadata":{"name":"%s-%d","uid":"uid-%s-%d","labels":{"pad":"%s"}}}`, prefix, i, prefix, i, pad))
	}
	return []byte(`{"objects":[` + strings.Join(objs, ",") + `]}`)
}

// TestDeadLettersListReplayPurge: an operator finds too_large letters,
// raises the limit and replays them. The one older than what the database
// holds is fenced (nothing written), the newer one applies, a letter that
// is still bad fails again with its reason; dry runs change nothing;
// purge deletes.
func TestDeadLettersListReplayPurge(t *testing.T) {
	e := newEnv(t, 2)
	const hub = "hub-dl"
	recs := []*kgo.Record{
		ceRecord("old-big", hub, "managedclusters", "4.1", bigSnapshot("old", 4, 90<<10)),
		ceRecord("small", hub, "managedclusters", "5.0", bigSnapshot("small", 1, 100)),
		ceRecord("new-big", hub, "managedclusters", "6.1", bigSnapshot("new", 3, 90<<10)),
		ceRecord("broken", "hub-broken", "managedclusters", "1.1", []byte(`{"objects":[{"metadata":`)),
	}
	for _, r := range recs {
		r.Topic = "status"
		r.Partition = 0
	}
	cl := e.producer()
	if err := cl.ProduceSync(context.Background(), recs...).FirstErr(); err != nil {
		t.Fatal(err)
	}
	b := e.startBridge("--max-bundle-bytes", "64KiB")
	clusters := func() []string {
		var names []string
		rows, err := e.pool.Query(context.Background(), `SELECT cluster_name FROM stb.managed_clusters WHERE hub = $1 ORDER BY 1`, hub)
		if err != nil {
			t.Fatal(err)
		}
		defer rows.Close()
		for rows.Next() {
			var n string
			if err := rows.Scan(&n); err != nil {
				t.Fatal(err)
			}
			names = append(names, n)
		}
		return names
	}
	letters := func() int {
		var n int
		if err := e.pool.QueryRow(context.Background(), `SELECT count(*) FROM stb.dead_letters`).Scan(&n); err != nil {
			t.Fatal(err)
		}
		return n
	}
	deadline := time.Now().Add(time.Minute)
	for letters() < 3 || len(clusters()) == 0 {
		if time.Now().After(deadline) {
			t.Fatalf("after a minute: %d dead letters, clusters %v", letters(), clusters())
		}
		time.Sleep(100 * time.Millisecond)
	}
	b.stop(30 * time.Second)
	if got := clusters(); strings.Join(got, ",") != "small-1" {
		t.Fatalf("clusters %v before the replay", got)
	}

	run := func(args ...string) string {
		t.Helper()
		out, err := e.stb(append([]string{"deadletters"}, append(args, "--database-url", e.dbURL)...)...)
		if err != nil {
			t.Fatalf("stb deadletters %s: %v\n%s", strings.Join(args, " "), err, out)
		}
		if !strings.Contains(strings.Join(args, " "), "--json") {
			t.Logf("stb deadletters %s:\n%s", strings.Join(args, " "), out)
		}
		return out
	}
	// The reason is the table's third column.
	reasons := func(list string) map[string]int {
		out := map[string]int{}
		for _, line := range strings.Split(strings.TrimSpace(list), "\n")[1:] {
			if f := strings.Fields(line); len(f) > 2 {
				out[f[2]]++
			}
		}
		return out
	}
	list := run("list")
	if r := reasons(list); r["too_large"] != 2 || r["bad_payload"] != 1 || len(r) != 2 {
		t.Fatalf("list: reasons %v:\n%s", r, list)
	}
	var objs []map[string]any
	for _, line := range strings.Split(strings.TrimSpace(run("list", "--reason", "too_large", "--json")), "\n") {
		var o map[string]any
		if err := json.Unmarshal([]byte(line), &o); err != nil {
			t.Fatalf("list --json line %q: %v", line, err)
		}
		objs = append(objs, o)
	}
	if len(objs) != 2 || objs[0]["hub"] != hub || objs[0]["reason"] != "too_large" {
		t.Fatalf("list --reason too_large --json: %v", objs)
	}

	kafka := []string{"--kafka-brokers", e.brokers, "--max-bundle-bytes", "1MiB"}
	dry := run(append([]string{"replay", "--dry-run", "--reason", "too_large"}, kafka...)...)
	if !strings.Contains(dry, "1 applied, 1 stale (nothing written), 0 failed again") {
		t.Fatalf("dry run:\n%s", dry)
	}
	if got := clusters(); strings.Join(got, ",") != "small-1" || strings.Contains(run("list"), "applied") {
		t.Fatalf("the dry run wrote or marked something: clusters %v", got)
	}

	out := run(append([]string{"replay"}, kafka...)...)
	if !strings.Contains(out, "1 applied, 1 stale (nothing written), 1 failed again, 0 skipped") || !strings.Contains(out, "from kafka") {
		t.Fatalf("replay:\n%s", out)
	}
	if got := strings.Join(clusters(), ","); got != "new-1,new-2,new-3" {
		t.Fatalf("clusters after the replay: %s, want the newer snapshot's", got)
	}
	var version string
	if err := e.pool.QueryRow(context.Background(), `SELECT incarnation || '.' || generation FROM stb.bundle_versions WHERE hub = $1 AND bundle_type = 'managedclusters'`, hub).Scan(&version); err != nil || version != "6.1" {
		t.Fatalf("stored version %q (%v), want 6.1", version, err)
	}
	list = run("list")
	for _, want := range []string{"applied", "stale", "failed"} {
		if !strings.Contains(list, want) {
			t.Errorf("list after the replay lacks %q:\n%s", want, list)
		}
	}

	// Again, from the stored copies only: the letters applied or stale are
	// done; the broken one fails again, as bad_payload.
	again := run("replay")
	if !strings.Contains(again, "0 applied, 0 stale (nothing written), 1 failed again") || !strings.Contains(again, "from stored") || !strings.Contains(again, "bad_payload") {
		t.Fatalf("second replay:\n%s", again)
	}

	if out := run("purge", "--before", "0s"); !strings.Contains(out, "purged 3 dead letters") {
		t.Fatalf("purge: %s", out)
	}
	if n := letters(); n != 0 {
		t.Fatalf("%d dead letters after the purge", n)
	}
}
