package dbsyncers

import (
	"fmt"
	"strings"
	"testing"
	"time"

	"github.com/stbridge/stb/pkg/bundle"
	"github.com/stbridge/stb/pkg/db/dbtest"
)

// TestGlobalHubHeartbeat: managedhub.heartbeat is upstream's
// UpInsertHeartBeat (manager/pkg/status/handlers/managedhub/
// hub_cluster_heartbeat_handler.go; pkg/database/models/status.go): a new
// hub is 'active' at the current time in UTC; later heartbeats move
// last_timestamp only, so a hub upstream marked inactive stays inactive.
// It writes no row of STB's own stb.hub_heartbeats; the hub's stb.hubs
// row is the version fence's, as for every type.
func TestGlobalHubHeartbeat(t *testing.T) {
	t.Parallel()
	pool, _ := dbtest.New(t)
	type row struct {
		status string
		last   time.Time
	}
	read := func(hub string) (r row) {
		t.Helper()
		if err := pool.QueryRow(t.Context(), `SELECT status, last_timestamp FROM status.leaf_hub_heartbeats WHERE leaf_hub_name = $1`, hub).
			Scan(&r.status, &r.last); err != nil {
			t.Fatalf("heartbeat of %s: %v", hub, err)
		}
		return r
	}
	v := func(g uint64) bundle.Version { return bundle.Version{Incarnation: 5, Generation: g} }
	cases := []struct {
		name, upstream string
		before         string // SQL run first
		data           string
		wantStatus     string
	}{
		{"a new hub is active", "UpInsertHeartBeat: INSERT (leaf_hub_name, status, last_timestamp)", "", `[]`, "active"},
		{"a heartbeat without data moves the time", "hub_cluster_heartbeat_handler.go: LastUpdateAt time.Now()", "", ``, "active"},
		{"a hub marked inactive stays inactive", "UpInsertHeartBeat: ON CONFLICT DO UPDATE SET last_timestamp only",
			`UPDATE status.leaf_hub_heartbeats SET status = 'inactive', last_timestamp = last_timestamp - interval '1 hour'`, `null`, "inactive"},
	}
	var prev time.Time
	for i, c := range cases {
		if c.before != "" {
			if _, err := pool.Exec(t.Context(), c.before); err != nil {
				t.Fatal(err)
			}
		}
		if !ghApply(t, pool, "hub1", GHHeartbeat, v(uint64(i+1)), []byte(c.data)) {
			t.Fatalf("%s: not applied", c.name)
		}
		got := read("hub1")
		if got.status != c.wantStatus || !got.last.After(prev) {
			t.Fatalf("%s (%s): status %q at %v, want %q after %v", c.name, c.upstream, got.status, got.last, c.wantStatus, prev)
		}
		ghUTCNow(t, pool, "last_timestamp", got.last)
		prev = got.last
	}
	var stbHeartbeats, hubs int
	if err := pool.QueryRow(t.Context(), `SELECT (SELECT count(*) FROM stb.hub_heartbeats), (SELECT count(*) FROM stb.hubs WHERE name = 'hub1' AND state = 'active')`).
		Scan(&stbHeartbeats, &hubs); err != nil {
		t.Fatal(err)
	}
	if stbHeartbeats != 0 || hubs != 1 {
		t.Fatalf("stb.hub_heartbeats rows %d (want 0), stb.hubs rows of hub1 %d (want 1)", stbHeartbeats, hubs)
	}
}

// TestGlobalHubInfo: managedhub.info is upstream's upsert of models.LeafHub
// (manager/pkg/status/handlers/managedhub/hub_cluster_info_handler.go:
// OnConflict (cluster_id, leaf_hub_name) DoUpdates payload, updated_at),
// into status.leaf_hubs.
func TestGlobalHubInfo(t *testing.T) {
	t.Parallel()
	pool, _ := dbtest.New(t)
	info := func(console, clusterID string) []byte {
		return []byte(fmt.Sprintf(`{"consoleURL": %q, "grafanaURL": "https://grafana", "clusterId": %q, "mchVersion": "2.13.0"}`, console, clusterID))
	}
	type row struct {
		console, grafana, mch string
		created, updated      time.Time
		deleted               bool
	}
	read := func() map[string]row {
		t.Helper()
		rows, err := pool.Query(t.Context(), `SELECT leaf_hub_name || '/' || cluster_id::text, console_url, grafana_url, payload->>'mchVersion',
			created_at, updated_at, deleted_at IS NOT NULL FROM status.leaf_hubs`)
		if err != nil {
			t.Fatal(err)
		}
		defer rows.Close()
		out := map[string]row{}
		for rows.Next() {
			var key string
			var r row
			if err := rows.Scan(&key, &r.console, &r.grafana, &r.mch, &r.created, &r.updated, &r.deleted); err != nil {
				t.Fatal(err)
			}
			hub, id, _ := strings.Cut(key, "/")
			out[hub+"/"+ghLabel(id)] = r
		}
		if err := rows.Err(); err != nil {
			t.Fatal(err)
		}
		return out
	}
	consoles := func() map[string]string {
		out := map[string]string{}
		for k, r := range read() {
			state := ""
			if r.deleted {
				state = " (deleted)"
			}
			out[k] = r.console + state
		}
		return out
	}
	v := func(g uint64) bundle.Version { return bundle.Version{Incarnation: 5, Generation: g} }
	steps := []struct {
		name, upstream, hub string
		data                []byte
		before              string
		want                map[string]string
	}{
		{"an info with clusterId is the hub's row for that id", "hub_cluster_info_handler.go Create(models.LeafHub)", "hub1",
			info("https://console-a", ghUUID("id1")), "", map[string]string{"hub1/id1": "https://console-a"}},
		{"a newer info updates the payload", "hub_cluster_info_handler.go DoUpdates payload, updated_at", "hub1",
			info("https://console-b", ghUUID("id1")), "", map[string]string{"hub1/id1": "https://console-b"}},
		{"an info without clusterId is ignored", "hub_cluster_info_handler.go: Ignore data which do not have clusterid", "hub1",
			[]byte(`{"consoleURL": "https://console-c", "grafanaURL": "", "clusterId": "", "mchVersion": ""}`), "",
			map[string]string{"hub1/id1": "https://console-b"}},
		{"a soft-deleted hub reporting again is live again", "hub_cluster_info_handler.go (revived: the brief's rule)", "hub1",
			info("https://console-d", ghUUID("id1")), `UPDATE status.leaf_hubs SET deleted_at = now() AT TIME ZONE 'UTC'`,
			map[string]string{"hub1/id1": "https://console-d"}},
		{"a new clusterId gets a row of its own; the old one stays", "hub_cluster_info_handler.go: primary key (cluster_id, leaf_hub_name)", "hub1",
			info("https://console-e", ghUUID("id2")), "", map[string]string{"hub1/id1": "https://console-d", "hub1/id2": "https://console-e"}},
		{"another hub's info without clusterId writes nothing", "hub_cluster_info_handler.go", "hub2",
			[]byte(`{"consoleURL": "https://console-f", "grafanaURL": ""}`), "",
			map[string]string{"hub1/id1": "https://console-d", "hub1/id2": "https://console-e"}},
	}
	var first row
	for i, s := range steps {
		if s.before != "" {
			if _, err := pool.Exec(t.Context(), s.before); err != nil {
				t.Fatal(err)
			}
		}
		if !ghApply(t, pool, s.hub, GHHubInfo, v(uint64(i+1)), s.data) {
			t.Fatalf("%s: refused by the fence", s.name)
		}
		if got := consoles(); fmt.Sprint(got) != fmt.Sprint(s.want) {
			t.Fatalf("%s (%s): %v, want %v", s.name, s.upstream, got, s.want)
		}
		if i == 0 {
			first = read()["hub1/id1"]
			ghUTCNow(t, pool, "created_at", first.created)
			time.Sleep(10 * time.Millisecond)
		}
	}
	got := read()["hub1/id1"]
	if !got.created.Equal(first.created) || !got.updated.After(first.updated) || got.grafana != "https://grafana" || got.mch != "2.13.0" {
		t.Fatalf("hub1/id1 %+v, first written %+v", got, first)
	}
	// An older info writes nothing: the fence.
	if ghApply(t, pool, "hub1", GHHubInfo, v(1), info("https://console-a", ghUUID("id1"))) {
		t.Fatal("an older hub info was applied")
	}
}
