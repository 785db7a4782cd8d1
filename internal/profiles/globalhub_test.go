package profiles

import (
	"fmt"
	"maps"
	"testing"

	"github.com/jackc/pgx/v5/pgxpool"

	"github.com/stbridge/stb/pkg/db"
	"github.com/stbridge/stb/pkg/db/dbtest"
)

// loadGlobalHubRows gives each hub a row in every table the global-hub
// profile writes, as its bridge would: the global hub's own tables (each
// event also folds into history.local_compliance, by trigger) and STB's
// (stb.hubs, a version, stb.cluster_migrations, the lifecycle's
// stb.hub_heartbeats).
func loadGlobalHubRows(t *testing.T, pool *pgxpool.Pool, hubs ...string) {
	t.Helper()
	for i, hub := range hubs {
		id := func(j int) string { return fmt.Sprintf("00000000-0000-4000-8000-%012d", 10*i+j) }
		for _, q := range []struct {
			sql  string
			args []any
		}{
			{`INSERT INTO stb.hubs (name) VALUES ($1)`, []any{hub}},
			{`INSERT INTO stb.bundle_versions (hub, bundle_type, incarnation, generation) VALUES ($1, 'globalhub.managedcluster', 3, 5)`, []any{hub}},
			{`INSERT INTO stb.hub_heartbeats (hub, last_timestamp) VALUES ($1, now())`, []any{hub}},
			{`INSERT INTO stb.cluster_migrations (hub, migration_id, stage, payload) VALUES ($1, 'm', 'Validating', '{}')`, []any{hub}},
			{`INSERT INTO status.leaf_hub_heartbeats (leaf_hub_name, last_timestamp) VALUES ($1, now() AT TIME ZONE 'UTC')`, []any{hub}},
			{`INSERT INTO status.leaf_hubs (leaf_hub_name, cluster_id, payload) VALUES ($1, $2, '{"consoleURL": "https://console"}')`, []any{hub, id(1)}},
			{`INSERT INTO status.managed_clusters (leaf_hub_name, cluster_id, payload, error)
			  VALUES ($1, $2, '{"metadata": {"name": "c1"}}', 'none')`, []any{hub, id(2)}},
			{`INSERT INTO local_spec.policies (leaf_hub_name, policy_id, payload)
			  VALUES ($1, $2, '{"metadata": {"name": "p1", "namespace": "default"}}')`, []any{hub, id(3)}},
			{`INSERT INTO local_status.compliance (policy_id, cluster_name, leaf_hub_name, error, compliance)
			  VALUES ($2, 'c1', $1, 'none', 'non_compliant')`, []any{hub, id(3)}},
			{`INSERT INTO security.alert_counts (hub_name, source, low, medium, high, critical, detail_url)
			  VALUES ($1, 'stackrox/central', 1, 2, 3, 4, 'https://central')`, []any{hub}},
			{`SELECT stb.ensure_month_partitions(t, ARRAY[now() AT TIME ZONE 'UTC'])
			  FROM unnest(ARRAY['event.managed_clusters', 'event.local_policies', 'event.local_root_policies', 'history.local_compliance']) AS t`, nil},
			{`INSERT INTO event.managed_clusters (event_namespace, event_name, cluster_name, cluster_id, leaf_hub_name, event_type, created_at)
			  VALUES ('c1', 'c1.1', 'c1', $2, $1, 'Normal', now() AT TIME ZONE 'UTC')`, []any{hub, id(2)}},
			{`INSERT INTO event.local_policies (event_name, policy_id, cluster_id, cluster_name, leaf_hub_name, count, created_at, compliance)
			  VALUES ($1 || '.default.p1.1', $2, $3, 'c1', $1, 1, now() AT TIME ZONE 'UTC', 'non_compliant')`, []any{hub, id(3), id(2)}},
			{`INSERT INTO event.local_root_policies (event_name, policy_id, leaf_hub_name, count, created_at, compliance)
			  VALUES ($1 || '.p1.1', $2, $1, 1, now() AT TIME ZONE 'UTC', 'non_compliant')`, []any{hub, id(3)}},
		} {
			if _, err := pool.Exec(t.Context(), q.sql, q.args...); err != nil {
				t.Fatalf("%s: %v", q.sql, err)
			}
		}
	}
}

// globalHubRows says what each table holds of a hub: its rows, and for a
// table with a soft delete its live ones ("live/all"), for the heartbeat
// its status.
func globalHubRows(t *testing.T, pool *pgxpool.Pool, hub string) map[string]string {
	t.Helper()
	out := map[string]string{}
	for table, query := range map[string]string{
		"status.managed_clusters":    `SELECT count(*) FILTER (WHERE deleted_at IS NULL) || '/' || count(*) FROM status.managed_clusters WHERE leaf_hub_name = $1`,
		"status.leaf_hubs":           `SELECT count(*) FILTER (WHERE deleted_at IS NULL) || '/' || count(*) FROM status.leaf_hubs WHERE leaf_hub_name = $1`,
		"local_spec.policies":        `SELECT count(*) FILTER (WHERE deleted_at IS NULL) || '/' || count(*) FROM local_spec.policies WHERE leaf_hub_name = $1`,
		"local_status.compliance":    `SELECT count(*)::text FROM local_status.compliance WHERE leaf_hub_name = $1`,
		"status.leaf_hub_heartbeats": `SELECT coalesce(string_agg(status, ','), '') FROM status.leaf_hub_heartbeats WHERE leaf_hub_name = $1`,
		"security.alert_counts":      `SELECT count(*)::text FROM security.alert_counts WHERE hub_name = $1`,
		"event.managed_clusters":     `SELECT count(*)::text FROM event.managed_clusters WHERE leaf_hub_name = $1`,
		"event.local_policies":       `SELECT count(*)::text FROM event.local_policies WHERE leaf_hub_name = $1`,
		"event.local_root_policies":  `SELECT count(*)::text FROM event.local_root_policies WHERE leaf_hub_name = $1`,
		"history.local_compliance":   `SELECT count(*)::text FROM history.local_compliance WHERE leaf_hub_name = $1`,
		"stb.cluster_migrations":     `SELECT count(*)::text FROM stb.cluster_migrations WHERE hub = $1`,
		"stb.hub_heartbeats":         `SELECT count(*)::text FROM stb.hub_heartbeats WHERE hub = $1`,
		"stb.bundle_versions":        `SELECT count(*)::text FROM stb.bundle_versions WHERE hub = $1`,
	} {
		var v string
		if err := pool.QueryRow(t.Context(), query, hub).Scan(&v); err != nil {
			t.Fatalf("%s: %v", table, err)
		}
		out[table] = v
	}
	return out
}

// TestGlobalHubHubRequests: `stb hub delete` of a global-hub agent's hub
// does to the global hub's own tables what upstream's hub management does
// to a hub it cleans up (stolostron/multicluster-global-hub
// manager/pkg/processes/hubmanagement/hub_management.go, cleanup): its
// managed clusters, hub info and local policies soft-deleted, its
// compliance deleted, its heartbeat row marked inactive, its events and
// compliance history kept; its alert counts are deleted (upstream's
// cleanup leaves them; they are the hub's current counts, not a record),
// and its rows of STB's own tables as for every hub. Another hub's rows
// are untouched, and the request is recorded.
//
// A reset (upstream has none) forgets the hub's versions, so that a
// rebuilt hub's lower versions are taken, and does to the global hub's
// tables what a delete does but for the heartbeat row, left active: the
// hub is expected back at once, and its heartbeats would not mark it
// active again where no upstream manager runs.
func TestGlobalHubHubRequests(t *testing.T) {
	pool, _ := dbtest.New(t)
	ctx := t.Context()
	loadGlobalHubRows(t, pool, "hub-a", "hub-b", "hub-c")
	loaded := map[string]string{
		"status.managed_clusters": "1/1", "status.leaf_hubs": "1/1", "local_spec.policies": "1/1", "local_status.compliance": "1",
		"status.leaf_hub_heartbeats": "active", "security.alert_counts": "1",
		"event.managed_clusters": "1", "event.local_policies": "1", "event.local_root_policies": "1", "history.local_compliance": "1",
		"stb.cluster_migrations": "1", "stb.hub_heartbeats": "1", "stb.bundle_versions": "1",
	}
	for _, hub := range []string{"hub-a", "hub-b", "hub-c"} {
		if got := globalHubRows(t, pool, hub); !maps.Equal(got, loaded) {
			t.Fatalf("%s loaded %v, want %v", hub, got, loaded)
		}
	}
	kept := map[string]string{
		"status.managed_clusters": "0/1", "status.leaf_hubs": "0/1", "local_spec.policies": "0/1", "local_status.compliance": "0",
		"security.alert_counts":  "0",
		"event.managed_clusters": "1", "event.local_policies": "1", "event.local_root_policies": "1", "history.local_compliance": "1",
		"stb.cluster_migrations": "0", "stb.hub_heartbeats": "0",
	}

	res, err := db.ApplyHubRequest(ctx, pool, db.HubRequest{Hub: "hub-a", Action: db.DeleteHub, RequestedBy: "test", Scope: HubScope()})
	if err != nil {
		t.Fatal(err)
	}
	// Soft-deleted: a cluster, the info, a policy; deleted: a compliance
	// row, the alert counts, the migration, STB's heartbeat.
	if res.Removed != 7 || res.SoftDeleted != 3 || res.Versions != 1 || res.Tombstone != 3 {
		t.Errorf("delete = %+v, want 7 rows removed, 3 of them soft-deleted, 1 tombstone at 3", res)
	}
	want := maps.Clone(kept)
	want["status.leaf_hub_heartbeats"] = "inactive"
	want["stb.bundle_versions"] = "1" // the tombstone
	if got := globalHubRows(t, pool, "hub-a"); !maps.Equal(got, want) {
		t.Errorf("hub-a after its delete:\n%v\nwant\n%v", got, want)
	}
	if got := globalHubRows(t, pool, "hub-b"); !maps.Equal(got, loaded) {
		t.Errorf("hub-b after hub-a's delete: %v, want %v", got, loaded)
	}
	var action string
	var removed int64
	if err := pool.QueryRow(ctx, `SELECT action, removed FROM stb.hub_requests WHERE id = $1 AND hub = 'hub-a'`, res.ID).
		Scan(&action, &removed); err != nil || action != string(db.DeleteHub) || removed != res.Removed {
		t.Errorf("recorded: %s, %d removed (%v); want delete, %d", action, removed, err, res.Removed)
	}

	res, err = db.ApplyHubRequest(ctx, pool, db.HubRequest{Hub: "hub-b", Action: db.ResetHub, RequestedBy: "test", Scope: HubScope()})
	if err != nil {
		t.Fatal(err)
	}
	if res.Removed != 7 || res.SoftDeleted != 3 || res.Versions != 1 {
		t.Errorf("reset = %+v, want 7 rows removed, 3 of them soft-deleted, 1 version forgotten", res)
	}
	want = maps.Clone(kept)
	want["status.leaf_hub_heartbeats"] = "active"
	want["stb.bundle_versions"] = "0"
	if got := globalHubRows(t, pool, "hub-b"); !maps.Equal(got, want) {
		t.Errorf("hub-b after its reset:\n%v\nwant\n%v", got, want)
	}
	if got := globalHubRows(t, pool, "hub-c"); !maps.Equal(got, loaded) {
		t.Errorf("hub-c after the others' requests: %v, want %v", got, loaded)
	}
	if err := pool.QueryRow(ctx, `SELECT action, removed FROM stb.hub_requests WHERE id = $1 AND hub = 'hub-b'`, res.ID).
		Scan(&action, &removed); err != nil || action != string(db.ResetHub) || removed != res.Removed {
		t.Errorf("recorded: %s, %d removed (%v); want reset, %d", action, removed, err, res.Removed)
	}
}
