package db_test

import (
	"context"
	"errors"
	"maps"
	"os"
	"slices"
	"strings"
	"testing"

	"github.com/jackc/pgx/v5"
	"go.uber.org/zap"

	"github.com/stbridge/stb/pkg/db"
	"github.com/stbridge/stb/pkg/db/dbtest"
)

// upstreamFixture is our DDL of the database upstream's operator creates
// (see the file's head for what it is and where its facts come from).
const upstreamFixture = "testdata/upstream_operator_schema.sql"

// globalHubSchemas are the schemas of the global hub's own tables.
var globalHubSchemas = []string{"status", "event", "local_spec", "local_status", "history", "security"}

// upstreamDatabase returns a throwaway database holding what upstream's
// operator creates and nothing of STB's.
func upstreamDatabase(t *testing.T) string {
	t.Helper()
	u := dbtest.Empty(t)
	execFile(t, u, upstreamFixture)
	return u
}

// execFile runs a SQL file on the database at url, in one simple-protocol
// round trip, as psql -f would.
func execFile(t *testing.T, url, path string) {
	t.Helper()
	sql, err := os.ReadFile(path)
	if err != nil {
		t.Fatal(err)
	}
	execSQL(t, url, string(sql))
}

func execSQL(t *testing.T, url string, sql ...string) {
	t.Helper()
	conn := connect(t, url)
	for _, s := range sql {
		if _, err := conn.Exec(t.Context(), s); err != nil {
			t.Fatalf("%v\nin: %.300s", err, s)
		}
	}
}

func connect(t *testing.T, url string) *pgx.Conn {
	t.Helper()
	conn, err := pgx.Connect(t.Context(), url)
	if err != nil {
		t.Fatal(err)
	}
	t.Cleanup(func() { conn.Close(context.Background()) })
	return conn
}

// snapshotSQL describes every table and partition of the global hub's six
// schemas (its kind, partition key and bounds; each column with its
// position, type, nullability, default or generation expression; each
// constraint, index and user trigger, as PostgreSQL prints them back), the
// enum types of those schemas, and the functions and procedures of those
// schemas and public that no extension owns: one row per object, keyed by
// kind and name.
const snapshotSQL = `
WITH rel AS (
	SELECT c.oid, n.nspname || '.' || c.relname AS name
	FROM pg_class c JOIN pg_namespace n ON n.oid = c.relnamespace
	WHERE n.nspname = ANY($1) AND c.relkind IN ('r', 'p')
)
SELECT 'table ' || r.name,
       c.relkind::text || coalesce(' ' || pg_get_partkeydef(c.oid), '') || coalesce(' ' || pg_get_expr(c.relpartbound, c.oid), '')
FROM rel r JOIN pg_class c ON c.oid = r.oid
UNION ALL
SELECT 'column ' || r.name || '.' || a.attname,
       a.attnum || ' ' || format_type(a.atttypid, a.atttypmod)
       || CASE WHEN a.attnotnull THEN ' not null' ELSE '' END
       || CASE WHEN a.attgenerated <> '' THEN ' generated ' ELSE ' default ' END
       || coalesce(pg_get_expr(d.adbin, d.adrelid), '')
FROM rel r
JOIN pg_attribute a ON a.attrelid = r.oid AND a.attnum > 0 AND NOT a.attisdropped
LEFT JOIN pg_attrdef d ON d.adrelid = a.attrelid AND d.adnum = a.attnum
UNION ALL
SELECT 'constraint ' || r.name || '.' || co.conname, pg_get_constraintdef(co.oid)
FROM rel r JOIN pg_constraint co ON co.conrelid = r.oid
UNION ALL
SELECT 'index ' || r.name || '.' || ic.relname, pg_get_indexdef(i.indexrelid)
FROM rel r JOIN pg_index i ON i.indrelid = r.oid JOIN pg_class ic ON ic.oid = i.indexrelid
UNION ALL
SELECT 'trigger ' || r.name || '.' || tg.tgname, pg_get_triggerdef(tg.oid)
FROM rel r JOIN pg_trigger tg ON tg.tgrelid = r.oid AND NOT tg.tgisinternal
UNION ALL
SELECT 'type ' || ty.oid::regtype::text, string_agg(e.enumlabel, ',' ORDER BY e.enumsortorder)
FROM pg_type ty JOIN pg_namespace n ON n.oid = ty.typnamespace JOIN pg_enum e ON e.enumtypid = ty.oid
WHERE n.nspname = ANY($1)
GROUP BY ty.oid
UNION ALL
SELECT 'routine ' || p.oid::regprocedure::text, pg_get_functiondef(p.oid)
FROM pg_proc p JOIN pg_namespace n ON n.oid = p.pronamespace
WHERE (n.nspname = ANY($1) OR n.nspname = 'public') AND p.prokind IN ('f', 'p')
  AND NOT EXISTS (SELECT 1 FROM pg_depend dep
                  WHERE dep.classid = 'pg_proc'::regclass AND dep.objid = p.oid AND dep.deptype = 'e')`

// snapshot returns snapshotSQL's rows for the database at url.
func snapshot(t *testing.T, url string) map[string]string {
	t.Helper()
	rows, err := connect(t, url).Query(t.Context(), snapshotSQL, globalHubSchemas)
	if err != nil {
		t.Fatal(err)
	}
	out := map[string]string{}
	var key, def string
	if _, err := pgx.ForEachRow(rows, []any{&key, &def}, func() error {
		if _, dup := out[key]; dup {
			t.Errorf("snapshot: %s twice", key)
		}
		out[key] = def
		return nil
	}); err != nil {
		t.Fatal(err)
	}
	return out
}

// diff lists what differs between two snapshots, one line per object.
func diff(before, after map[string]string) []string {
	var out []string
	for _, k := range slices.Sorted(maps.Keys(before)) {
		switch a, ok := after[k]; {
		case !ok:
			out = append(out, "removed "+k+": "+before[k])
		case a != before[k]:
			out = append(out, "changed "+k+":\n    before: "+before[k]+"\n    after:  "+a)
		}
	}
	for _, k := range slices.Sorted(maps.Keys(after)) {
		if _, ok := before[k]; !ok {
			out = append(out, "added "+k+": "+after[k])
		}
	}
	return out
}

// migrateTwice runs db.Migrate twice in a row: the first must apply every
// migration and the second find nothing to do, both without error.
func migrateTwice(t *testing.T, url string) {
	t.Helper()
	want := latest(t)
	if from, to, err := db.Migrate(t.Context(), url, zap.NewNop()); err != nil || from != 0 || to != want {
		t.Fatalf("first Migrate = %d, %d, %v; want 0, %d, nil", from, to, err, want)
	}
	if from, to, err := db.Migrate(t.Context(), url, zap.NewNop()); err != nil || from != want || to != want {
		t.Fatalf("second Migrate = %d, %d, %v; want %d, %d, nil", from, to, err, want, want)
	}
}

// stbTriggers returns the user triggers named stb_* on the tables of the
// global hub's schemas, as "table.trigger".
func stbTriggers(t *testing.T, url string) []string {
	t.Helper()
	rows, err := connect(t, url).Query(t.Context(), `
		SELECT c.oid::regclass::text || '.' || tg.tgname
		FROM pg_trigger tg JOIN pg_class c ON c.oid = tg.tgrelid JOIN pg_namespace n ON n.oid = c.relnamespace
		WHERE NOT tg.tgisinternal AND tg.tgname LIKE 'stb\_%' AND n.nspname = ANY($1)
		ORDER BY 1`, globalHubSchemas)
	if err != nil {
		t.Fatal(err)
	}
	names, err := pgx.CollectRows(rows, pgx.RowTo[string])
	if err != nil {
		t.Fatal(err)
	}
	return names
}

// TestMigrateOnUpstreamOperatorDatabase: on a database upstream's operator
// created, db.Migrate succeeds twice in a row (the second with nothing to
// do) and leaves every table of the global hub's schemas as it was: the
// same columns, constraints, indexes, partitions and triggers, the same
// enum types and upstream's functions, and no trigger of STB's added to
// them. STB's own tables are there beside them.
func TestMigrateOnUpstreamOperatorDatabase(t *testing.T) {
	t.Parallel()
	u := upstreamDatabase(t)
	before := snapshot(t, u)
	for _, k := range []string{
		"table status.transport", "table status.managed_cluster_migration", "column status.managed_clusters.deleted_at",
		"trigger local_status.compliance.update_compliance_table",
		"trigger status.managed_clusters.update_local_compliance_cluster_id_trigger",
		"trigger status.managed_clusters.update_cluster_event_cluster_id_trigger",
		"trigger event.local_policies.trg_update_history_compliance_by_event",
		"routine history.update_history_compliance_by_event()",
	} {
		if _, ok := before[k]; !ok {
			t.Fatalf("the fixture lacks %s; the snapshot cannot vouch for it", k)
		}
	}

	migrateTwice(t, u)

	if d := diff(before, snapshot(t, u)); len(d) > 0 {
		t.Errorf("Migrate changed upstream's tables (%d differences):\n%s", len(d), strings.Join(d, "\n"))
	}
	if got := stbTriggers(t, u); len(got) > 0 {
		t.Errorf("Migrate added triggers of STB's to upstream's tables: %v", got)
	}
	var owners, versions bool
	if err := connect(t, u).QueryRow(t.Context(),
		`SELECT to_regclass('stb.partition_owners') IS NOT NULL, to_regclass('stb.bundle_versions') IS NOT NULL`).Scan(&owners, &versions); err != nil {
		t.Fatal(err)
	}
	if !owners || !versions {
		t.Errorf("STB's own tables after Migrate: stb.partition_owners %v, stb.bundle_versions %v; want both", owners, versions)
	}
}

// shape is a snapshot without what STB does differently on purpose on
// the tables it creates: the triggers (its own, statement-level, with the
// effect of upstream's row-level ones), the functions behind them, and
// its own indexes (stb_*).
func shape(s map[string]string) map[string]string {
	out := maps.Clone(s)
	maps.DeleteFunc(out, func(k, _ string) bool {
		name := k[strings.LastIndexByte(k, '.')+1:]
		return strings.HasPrefix(k, "trigger ") || strings.HasPrefix(k, "routine ") ||
			(strings.HasPrefix(k, "index ") && strings.HasPrefix(name, "stb_"))
	})
	return out
}

// TestMigrateOnEmptyDatabaseCreatesUpstreamShape: on an empty database
// db.Migrate succeeds twice in a row, and the tables it creates in the
// global hub's schemas are upstream's: the same tables and partitions,
// columns (in their order, with their types, nullability, defaults and
// generated expressions), constraints and indexes as the operator's, so
// that upstream's manager and dashboards read either database alike.
// Only the triggers differ, by design (sql/002_globalhub.sql), and they
// are STB's own (stb_*).
func TestMigrateOnEmptyDatabaseCreatesUpstreamShape(t *testing.T) {
	t.Parallel()
	empty := dbtest.Empty(t)
	migrateTwice(t, empty)
	upstream := upstreamDatabase(t)

	if d := diff(shape(snapshot(t, upstream)), shape(snapshot(t, empty))); len(d) > 0 {
		t.Errorf("the global hub's tables STB creates differ from upstream's operator's (before: upstream, after: STB; %d differences):\n%s",
			len(d), strings.Join(d, "\n"))
	}
	if got := stbTriggers(t, empty); len(got) == 0 {
		t.Error("no stb_* triggers on the tables STB created; the cluster-id and history triggers are missing")
	}
}

// TestUpstreamOperatorAfterMigrate: the operator re-applies its scripts at
// every reconcile, so they may run on a database STB migrated first. They
// must succeed there, and STB must still start on the result.
func TestUpstreamOperatorAfterMigrate(t *testing.T) {
	t.Parallel()
	u := dbtest.Empty(t)
	migrateTwice(t, u)
	execFile(t, u, upstreamFixture)
	want := latest(t)
	if from, to, err := db.Migrate(t.Context(), u, zap.NewNop()); err != nil || from != want || to != want {
		t.Fatalf("Migrate after the operator's scripts = %d, %d, %v; want %d, %d, nil", from, to, err, want, want)
	}
}

// schemaError returns err's *db.SchemaError, failing the test when there
// is none.
func schemaError(t *testing.T, what string, err error) *db.SchemaError {
	t.Helper()
	var se *db.SchemaError
	if !errors.As(err, &se) {
		t.Fatalf("%s: error %v, want a *db.SchemaError", what, err)
	}
	return se
}

// TestCheckSchemaNamesWhatUpstreamLacks: STB never changes the shape of
// upstream's tables, so on an operator's database that lacks a column STB
// writes (an older operator, say) Migrate fails after migrating, and
// again when run a second time, and CheckSchema fails alone, each with a
// *db.SchemaError naming exactly that column. A table missing after the
// migrations ran is named the same way.
func TestCheckSchemaNamesWhatUpstreamLacks(t *testing.T) {
	t.Parallel()
	want := latest(t)

	t.Run("column", func(t *testing.T) {
		t.Parallel()
		u := upstreamDatabase(t)
		execSQL(t, u, `ALTER TABLE status.managed_clusters DROP COLUMN deleted_at`)
		wantMissing := []string{"status.managed_clusters.deleted_at"}

		from, to, err := db.Migrate(t.Context(), u, zap.NewNop())
		if from != 0 || to != want {
			t.Errorf("first Migrate went from %d to %d, want 0 to %d (migrated, then checked)", from, to, want)
		}
		if got := schemaError(t, "first Migrate", err).Missing; !slices.Equal(got, wantMissing) {
			t.Errorf("first Migrate: Missing = %q, want %q", got, wantMissing)
		}
		from, to, err = db.Migrate(t.Context(), u, zap.NewNop())
		if from != want || to != want {
			t.Errorf("second Migrate went from %d to %d, want %d to %d", from, to, want, want)
		}
		if got := schemaError(t, "second Migrate", err).Missing; !slices.Equal(got, wantMissing) {
			t.Errorf("second Migrate: Missing = %q, want %q", got, wantMissing)
		}
		if got := schemaError(t, "CheckSchema", db.CheckSchema(t.Context(), connect(t, u))).Missing; !slices.Equal(got, wantMissing) {
			t.Errorf("CheckSchema: Missing = %q, want %q", got, wantMissing)
		}
	})

	t.Run("table", func(t *testing.T) {
		t.Parallel()
		u := upstreamDatabase(t)
		migrateTwice(t, u)
		if err := db.CheckSchema(t.Context(), connect(t, u)); err != nil {
			t.Fatalf("CheckSchema on the migrated operator's database: %v", err)
		}
		execSQL(t, u, `DROP TABLE security.alert_counts`)
		_, _, err := db.Migrate(t.Context(), u, zap.NewNop())
		if got, wantMissing := schemaError(t, "Migrate", err).Missing, []string{"security.alert_counts"}; !slices.Equal(got, wantMissing) {
			t.Errorf("Missing = %q, want %q", got, wantMissing)
		}
	})
}

// triggerScenario writes, one statement at a time, what makes the global
// hub's triggers act: compliance rows before their cluster is known, the
// cluster arriving, a cluster event that still carries the cluster's uid,
// the cluster written again, a compliance row after its cluster is known,
// a deleted cluster of the same name on another hub, and a day of
// replicated policy events that changes state twice.
var triggerScenario = []string{
	`INSERT INTO local_status.compliance (policy_id, cluster_name, leaf_hub_name, error, compliance) VALUES
		('00000000-0000-0000-0000-0000000000a1', 'c1', 'h1', 'none', 'compliant'),
		('00000000-0000-0000-0000-0000000000a2', 'c1', 'h1', 'none', 'non_compliant'),
		('00000000-0000-0000-0000-0000000000a1', 'c2', 'h1', 'none', 'pending'),
		('00000000-0000-0000-0000-0000000000a1', 'c1', 'h2', 'none', 'unknown')`,
	`INSERT INTO event.managed_clusters (event_namespace, event_name, cluster_name, cluster_id, leaf_hub_name, event_type, created_at)
		VALUES ('c1', 'c1.ev1', 'c1', '00000000-0000-0000-0000-0000000000d1', 'h1', 'Normal', date_trunc('day', now()) + interval '1 minute')`,
	`INSERT INTO status.managed_clusters (leaf_hub_name, cluster_id, payload, error) VALUES
		('h1', '00000000-0000-0000-0000-0000000000c1', '{"metadata":{"name":"c1","uid":"00000000-0000-0000-0000-0000000000d1"}}', 'none')`,
	`INSERT INTO event.managed_clusters (event_namespace, event_name, cluster_name, cluster_id, leaf_hub_name, event_type, created_at)
		VALUES ('c1', 'c1.ev2', 'c1', '00000000-0000-0000-0000-0000000000d1', 'h1', 'Normal', date_trunc('day', now()) + interval '2 minutes')`,
	`UPDATE status.managed_clusters SET payload = payload || '{"status":{}}' WHERE cluster_id = '00000000-0000-0000-0000-0000000000c1'`,
	`INSERT INTO status.managed_clusters (leaf_hub_name, cluster_id, payload, error, deleted_at) VALUES
		('h2', '00000000-0000-0000-0000-0000000000c9', '{"metadata":{"name":"c1","uid":"00000000-0000-0000-0000-0000000000d9"}}', 'none', now())`,
	`INSERT INTO local_status.compliance (policy_id, cluster_name, leaf_hub_name, error, compliance) VALUES
		('00000000-0000-0000-0000-0000000000a3', 'c1', 'h1', 'none', 'compliant'),
		('00000000-0000-0000-0000-0000000000a2', 'c1', 'h2', 'none', 'compliant')`,
	`INSERT INTO event.local_policies (event_name, policy_id, cluster_id, cluster_name, leaf_hub_name, count, compliance, created_at) VALUES
		('p1.ev1', '00000000-0000-0000-0000-0000000000a1', '00000000-0000-0000-0000-0000000000c1', 'c1', 'h1', 1, 'compliant', date_trunc('day', now()) + interval '1 minute')`,
	`INSERT INTO event.local_policies (event_name, policy_id, cluster_id, cluster_name, leaf_hub_name, count, compliance, created_at) VALUES
		('p1.ev2', '00000000-0000-0000-0000-0000000000a1', '00000000-0000-0000-0000-0000000000c1', 'c1', 'h1', 1, 'non_compliant', date_trunc('day', now()) + interval '2 minutes')`,
	`INSERT INTO event.local_policies (event_name, policy_id, cluster_id, cluster_name, leaf_hub_name, count, compliance, created_at) VALUES
		('p1.ev3', '00000000-0000-0000-0000-0000000000a1', '00000000-0000-0000-0000-0000000000c1', 'c1', 'h1', 1, 'compliant', date_trunc('day', now()) + interval '3 minutes')`,
}

// triggerResults reads back what triggerScenario's triggers wrote.
func triggerResults(t *testing.T, url string) map[string][]string {
	t.Helper()
	conn := connect(t, url)
	out := map[string][]string{}
	for name, q := range map[string]string{
		"local_status.compliance": `SELECT leaf_hub_name || '/' || cluster_name || '/' || policy_id || ' ' || coalesce(cluster_id::text, 'NULL')
			FROM local_status.compliance ORDER BY 1`,
		"event.managed_clusters": `SELECT event_name || ' ' || cluster_id FROM event.managed_clusters ORDER BY 1`,
		"history.local_compliance": `SELECT leaf_hub_name || '/' || policy_id || '/' || cluster_id || ' ' || compliance || ' ' ||
			compliance_changed_frequency || ' today=' || (compliance_date = current_date) FROM history.local_compliance ORDER BY 1`,
	} {
		rows, err := conn.Query(t.Context(), q)
		if err != nil {
			t.Fatal(err)
		}
		if out[name], err = pgx.CollectRows(rows, pgx.RowTo[string]); err != nil {
			t.Fatal(err)
		}
	}
	return out
}

// TestGlobalHubTriggersReadTheSame: the same writes leave the same rows on
// a database upstream's operator created (its row-level triggers, STB's
// migrations applied and adding none) and on one STB created (its own
// statement-level triggers): compliance rows get their cluster's id once
// it is known, from the hub's live cluster of that name; cluster events
// take the cluster's id in place of its uid; policy events fold into the
// day's history. The expected rows are spelled out, so that both agreeing
// on nothing would fail too.
func TestGlobalHubTriggersReadTheSame(t *testing.T) {
	t.Parallel()
	upstream := upstreamDatabase(t)
	migrateTwice(t, upstream)
	stb := dbtest.Empty(t)
	migrateTwice(t, stb)
	execSQL(t, upstream, triggerScenario...)
	execSQL(t, stb, triggerScenario...)

	want := map[string][]string{
		"local_status.compliance": {
			"h1/c1/00000000-0000-0000-0000-0000000000a1 00000000-0000-0000-0000-0000000000c1",
			"h1/c1/00000000-0000-0000-0000-0000000000a2 00000000-0000-0000-0000-0000000000c1",
			"h1/c1/00000000-0000-0000-0000-0000000000a3 00000000-0000-0000-0000-0000000000c1",
			"h1/c2/00000000-0000-0000-0000-0000000000a1 NULL",
			// c1 of h2 is written deleted: writing it gives its id to
			// the rows there (upstream's update_local_compliance_cluster_id
			// does not look at deleted_at), but a row written after it
			// only takes the id of a live cluster, and gets none.
			"h2/c1/00000000-0000-0000-0000-0000000000a1 00000000-0000-0000-0000-0000000000c9",
			"h2/c1/00000000-0000-0000-0000-0000000000a2 NULL",
		},
		"event.managed_clusters": {
			"c1.ev1 00000000-0000-0000-0000-0000000000c1",
			"c1.ev2 00000000-0000-0000-0000-0000000000c1",
		},
		"history.local_compliance": {
			"h1/00000000-0000-0000-0000-0000000000a1/00000000-0000-0000-0000-0000000000c1 non_compliant 2 today=true",
		},
	}
	for name, db := range map[string]string{"upstream operator's": upstream, "STB's": stb} {
		got := triggerResults(t, db)
		for table, rows := range want {
			if !slices.Equal(got[table], rows) {
				t.Errorf("on the %s database, %s holds\n  %s\nwant\n  %s", name, table,
					strings.Join(got[table], "\n  "), strings.Join(rows, "\n  "))
			}
		}
	}
}
