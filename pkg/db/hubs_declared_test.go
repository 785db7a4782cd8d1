package db_test

import (
	"context"
	"fmt"
	"strings"
	"testing"
	"time"

	"github.com/jackc/pgx/v5/pgxpool"

	"github.com/stbridge/stb/pkg/db"
	"github.com/stbridge/stb/pkg/db/dbtest"
)

// declaredScope declares three of the global hub's own tables as the
// global-hub profile does (internal/profiles, globalHubTables), one of
// each treatment: soft-deleted, updated on deletes only, deleted.
var declaredScope = db.HubScope{Tables: []db.HubTable{
	{Table: "status.managed_clusters", Column: "leaf_hub_name", DeletedAt: "deleted_at"},
	{Table: "status.leaf_hub_heartbeats", Column: "leaf_hub_name",
		Set: map[string]string{"status": "inactive"}, Actions: []db.HubAction{db.DeleteHub}},
	{Table: "local_status.compliance", Column: "leaf_hub_name"},
}}

// declaredPool returns a pool on a migrated database whose sessions are
// not in UTC, so that a soft delete's time shows whether it was written in
// UTC, as upstream's timestamps without time zone are.
func declaredPool(t *testing.T) *pgxpool.Pool {
	t.Helper()
	_, u := dbtest.New(t)
	cfg, err := pgxpool.ParseConfig(u)
	if err != nil {
		t.Fatal(err)
	}
	cfg.ConnConfig.RuntimeParams["timezone"] = "Asia/Kolkata"
	pool, err := pgxpool.NewWithConfig(t.Context(), cfg)
	if err != nil {
		t.Fatal(err)
	}
	t.Cleanup(pool.Close)
	return pool
}

// loadDeclared gives each hub two live managed clusters and one
// soft-deleted long ago, a compliance row per live cluster, a heartbeat
// row, a row of STB's own (stb.managed_clusters) and a version.
func loadDeclared(t *testing.T, pool *pgxpool.Pool, hubs ...string) {
	t.Helper()
	for i, hub := range hubs {
		id := func(j int) string { return fmt.Sprintf("00000000-0000-4000-8000-%012d", 10*i+j) }
		for _, q := range []struct {
			sql  string
			args []any
		}{
			{`INSERT INTO stb.hubs (name) VALUES ($1)`, []any{hub}},
			{`INSERT INTO stb.bundle_versions (hub, bundle_type, incarnation, generation) VALUES ($1, 'globalhub.managedcluster', 3, 5)`, []any{hub}},
			{`INSERT INTO stb.managed_clusters (hub, cluster_name, payload) VALUES ($1, 'own', '{}')`, []any{hub}},
			{`INSERT INTO status.managed_clusters (leaf_hub_name, cluster_id, payload, error)
			  VALUES ($1, $2, '{"metadata": {"name": "c1"}}', 'none'), ($1, $3, '{"metadata": {"name": "c2"}}', 'none')`, []any{hub, id(1), id(2)}},
			{`INSERT INTO status.managed_clusters (leaf_hub_name, cluster_id, payload, error, deleted_at)
			  VALUES ($1, $2, '{"metadata": {"name": "gone"}}', 'none', '2020-01-01 00:00:00')`, []any{hub, id(3)}},
			{`INSERT INTO local_status.compliance (policy_id, cluster_name, leaf_hub_name, error, compliance)
			  VALUES ($2, 'c1', $1, 'none', 'compliant'), ($2, 'c2', $1, 'none', 'non_compliant')`, []any{hub, id(4)}},
			{`INSERT INTO status.leaf_hub_heartbeats (leaf_hub_name, last_timestamp) VALUES ($1, now() AT TIME ZONE 'UTC')`, []any{hub}},
		} {
			if _, err := pool.Exec(t.Context(), q.sql, q.args...); err != nil {
				t.Fatalf("%s: %v", q.sql, err)
			}
		}
	}
}

// declaredState is what the declared tables hold of a hub.
type declaredState struct {
	live, soft, softRecent, compliance int
	heartbeat                          string
	oldDeletedAt                       bool // the row soft-deleted before kept its time
	own                                int  // stb.managed_clusters
}

func readDeclared(t *testing.T, pool *pgxpool.Pool, hub string) declaredState {
	t.Helper()
	var s declaredState
	err := pool.QueryRow(t.Context(), `
		SELECT
			(SELECT count(*) FROM status.managed_clusters WHERE leaf_hub_name = $1 AND deleted_at IS NULL),
			(SELECT count(*) FROM status.managed_clusters WHERE leaf_hub_name = $1 AND deleted_at IS NOT NULL),
			(SELECT count(*) FROM status.managed_clusters WHERE leaf_hub_name = $1
				AND abs(extract(epoch FROM deleted_at - (now() AT TIME ZONE 'UTC'))) < 300),
			(SELECT count(*) FROM local_status.compliance WHERE leaf_hub_name = $1),
			coalesce((SELECT status FROM status.leaf_hub_heartbeats WHERE leaf_hub_name = $1), ''),
			EXISTS (SELECT 1 FROM status.managed_clusters WHERE leaf_hub_name = $1 AND deleted_at = '2020-01-01 00:00:00'),
			(SELECT count(*) FROM stb.managed_clusters WHERE hub = $1)`, hub).
		Scan(&s.live, &s.soft, &s.softRecent, &s.compliance, &s.heartbeat, &s.oldDeletedAt, &s.own)
	if err != nil {
		t.Fatal(err)
	}
	return s
}

// TestHubRequestDeclaredTables: a delete soft-deletes the hub's live rows
// of a table declared with a soft-delete column (deleted_at set to now in
// UTC, a row soft-deleted before left as it was), updates those of a table
// declared with Set, deletes those of the others, and leaves every other
// hub's rows; the request is recorded, counting the rows removed and
// soft-deleted. A reset skips the tables declared for deletes only. The
// model is upstream's hub management (stolostron/multicluster-global-hub
// manager/pkg/processes/hubmanagement/hub_management.go, cleanup).
func TestHubRequestDeclaredTables(t *testing.T) {
	pool := declaredPool(t)
	ctx := t.Context()
	loadDeclared(t, pool, "hub-a", "hub-b", "hub-c")
	before := readDeclared(t, pool, "hub-b")
	if before != (declaredState{live: 2, soft: 1, compliance: 2, heartbeat: "active", oldDeletedAt: true, own: 1}) {
		t.Fatalf("loaded %+v", before)
	}

	res, err := db.ApplyHubRequest(ctx, pool, db.HubRequest{Hub: "hub-a", Action: db.DeleteHub, RequestedBy: "test", Scope: declaredScope})
	if err != nil {
		t.Fatal(err)
	}
	// stb.managed_clusters 1, two clusters soft-deleted, two compliance
	// rows; the heartbeat's update counts as nothing removed.
	if res.Removed != 5 || res.SoftDeleted != 2 || res.Versions != 1 || res.Tombstone != 3 {
		t.Fatalf("delete = %+v, want 5 rows removed, 2 of them soft-deleted, 1 tombstone at 3", res)
	}
	if got, want := readDeclared(t, pool, "hub-a"), (declaredState{soft: 3, softRecent: 2, heartbeat: "inactive", oldDeletedAt: true}); got != want {
		t.Errorf("hub-a after its delete: %+v, want %+v", got, want)
	}
	if got := readDeclared(t, pool, "hub-b"); got != before {
		t.Errorf("hub-b after hub-a's delete: %+v, want %+v", got, before)
	}
	if d := res.Describe("hub-a", db.DeleteHub); !strings.Contains(d, "5 rows removed (2 of them soft-deleted in the global hub's tables)") {
		t.Errorf("Describe: %s", d)
	}
	var (
		action, by string
		removed    int64
	)
	if err := pool.QueryRow(ctx, `SELECT action, requested_by, removed FROM stb.hub_requests WHERE id = $1 AND hub = 'hub-a'`, res.ID).
		Scan(&action, &by, &removed); err != nil || action != "delete" || by != "test" || removed != 5 {
		t.Errorf("recorded request: %s by %s, %d removed (%v); want delete by test, 5", action, by, removed, err)
	}

	// Again: nothing left to remove, the soft-deleted rows keep their time.
	var stamps []time.Time
	rows, _ := pool.Query(ctx, `SELECT deleted_at FROM status.managed_clusters WHERE leaf_hub_name = 'hub-a' ORDER BY cluster_id`)
	for rows.Next() {
		var at time.Time
		if err := rows.Scan(&at); err != nil {
			t.Fatal(err)
		}
		stamps = append(stamps, at)
	}
	if err := rows.Err(); err != nil {
		t.Fatal(err)
	}
	again, err := db.ApplyHubRequest(ctx, pool, db.HubRequest{Hub: "hub-a", Action: db.DeleteHub, Scope: declaredScope})
	if err != nil || again.Removed != 0 || again.SoftDeleted != 0 || !again.AlreadyDeleted {
		t.Fatalf("second delete = %+v, %v; want nothing removed, already deleted", again, err)
	}
	var same bool
	if err := pool.QueryRow(ctx, `SELECT array_agg(deleted_at ORDER BY cluster_id) = $1 FROM status.managed_clusters WHERE leaf_hub_name = 'hub-a'`,
		stamps).Scan(&same); err != nil || !same {
		t.Errorf("a second delete stamped the soft-deleted rows again (%v)", err)
	}

	// A reset: the same but for the heartbeat, declared for deletes only.
	res, err = db.ApplyHubRequest(ctx, pool, db.HubRequest{Hub: "hub-b", Action: db.ResetHub, RequestedBy: "test", Scope: declaredScope})
	if err != nil || res.Removed != 5 || res.SoftDeleted != 2 || res.Versions != 1 {
		t.Fatalf("reset = %+v, %v; want 5 rows removed, 2 of them soft-deleted, 1 version forgotten", res, err)
	}
	if got, want := readDeclared(t, pool, "hub-b"), (declaredState{soft: 3, softRecent: 2, heartbeat: "active", oldDeletedAt: true}); got != want {
		t.Errorf("hub-b after its reset: %+v, want %+v", got, want)
	}
	if got := readDeclared(t, pool, "hub-c"); got != before {
		t.Errorf("hub-c after the others' requests: %+v, want %+v", got, before)
	}
	if d := res.Describe("hub-b", db.ResetHub); !strings.Contains(d, `hub "hub-b" reset: 5 rows removed (2 of them soft-deleted`) {
		t.Errorf("Describe: %s", d)
	}
}

// A declared table must exist, whichever the action (a table declared for
// deletes only fails a reset too), and may not be both soft-deleted and
// updated; a request that fails changes nothing.
func TestHubRequestDeclaredTablesRefused(t *testing.T) {
	pool := declaredPool(t)
	ctx := t.Context()
	loadDeclared(t, pool, "hub-a")
	before := readDeclared(t, pool, "hub-a")
	for name, bad := range map[string]db.HubTable{
		"missing table, deletes only": {Table: "status.no_such_table", Column: "leaf_hub_name", Actions: []db.HubAction{db.DeleteHub}},
		"soft delete and update":      {Table: "status.leaf_hubs", Column: "leaf_hub_name", DeletedAt: "deleted_at", Set: map[string]string{"payload": "{}"}},
	} {
		scope := db.HubScope{Tables: append(append([]db.HubTable{}, declaredScope.Tables...), bad)}
		for _, action := range db.AllHubActions {
			if _, err := db.ApplyHubRequest(ctx, pool, db.HubRequest{Hub: "hub-a", Action: action, Scope: scope}); err == nil {
				t.Errorf("%s: %s succeeded", name, action)
			}
		}
	}
	if got := readDeclared(t, pool, "hub-a"); got != before {
		t.Errorf("refused requests changed hub-a: %+v, want %+v", got, before)
	}
	var n int
	if err := pool.QueryRow(context.Background(), `SELECT count(*) FROM stb.hub_requests`).Scan(&n); err != nil || n != 0 {
		t.Errorf("%d requests recorded (%v), want none", n, err)
	}
}
