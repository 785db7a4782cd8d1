package db_test

import (
	"context"
	"sync"
	"testing"

	"github.com/jackc/pgx/v5"
	"github.com/jackc/tern/v2/migrate"
	"go.uber.org/zap"

	"github.com/stbridge/stb/pkg/db"
	"github.com/stbridge/stb/pkg/db/dbtest"
	schema "github.com/stbridge/stb/sql"
)

// latest is the version the embedded migrations end at.
func latest(t *testing.T) int32 {
	t.Helper()
	paths, err := migrate.FindMigrations(schema.Migrations)
	if err != nil {
		t.Fatal(err)
	}
	return int32(len(paths))
}

func TestMigrateIsIdempotent(t *testing.T) {
	t.Parallel()
	u := dbtest.Empty(t)
	want := latest(t)

	from, to, err := db.Migrate(t.Context(), u, zap.NewNop())
	if err != nil || from != 0 || to != want {
		t.Fatalf("first Migrate = %d, %d, %v; want 0, %d, nil", from, to, err, want)
	}
	from, to, err = db.Migrate(t.Context(), u, nil) // a nil logger is allowed
	if err != nil || from != want || to != want {
		t.Fatalf("second Migrate = %d, %d, %v; want %d, %d, nil", from, to, err, want, want)
	}

	conn, err := pgx.Connect(t.Context(), u)
	if err != nil {
		t.Fatal(err)
	}
	defer conn.Close(context.Background())
	for _, table := range []string{"stb.hubs", "stb.hub_heartbeats", "stb.managed_clusters",
		"stb.bundle_versions", "status.transport", "stb.dead_letters"} {
		var ok bool
		if err := conn.QueryRow(t.Context(), "SELECT to_regclass($1) IS NOT NULL", table).Scan(&ok); err != nil || !ok {
			t.Errorf("table %s missing after Migrate (%v)", table, err)
		}
	}
}

// TestMigrateConcurrently starts several bridges on an empty database at
// once, as a Deployment rollout does: all must succeed, and exactly one
// must report having applied the migrations.
func TestMigrateConcurrently(t *testing.T) {
	t.Parallel()
	u := dbtest.Empty(t)
	want := latest(t)

	const n = 4
	type result struct {
		from, to int32
		err      error
	}
	results := make([]result, n)
	var wg sync.WaitGroup
	for i := range n {
		wg.Go(func() {
			f, to, err := db.Migrate(t.Context(), u, zap.NewNop())
			results[i] = result{f, to, err}
		})
	}
	wg.Wait()

	applied := 0
	for i, r := range results {
		if r.err != nil {
			t.Errorf("Migrate %d: %v", i, r.err)
			continue
		}
		if r.to != want {
			t.Errorf("Migrate %d ended at %d, want %d", i, r.to, want)
		}
		if r.from != r.to {
			applied++
		}
	}
	if applied != 1 {
		t.Errorf("%d of %d concurrent Migrate calls applied migrations, want exactly 1: %+v", applied, n, results)
	}
}

// TestMigrateRefusesNewerSchema: an older binary started against a schema a
// newer one migrated must stop, not let tern migrate the schema down.
func TestMigrateRefusesNewerSchema(t *testing.T) {
	t.Parallel()
	u := dbtest.URL(t)
	want := latest(t)
	conn, err := pgx.Connect(t.Context(), u)
	if err != nil {
		t.Fatal(err)
	}
	defer conn.Close(context.Background())
	if _, err := conn.Exec(t.Context(), "UPDATE "+db.VersionTable+" SET version = $1", want+1); err != nil {
		t.Fatal(err)
	}
	if _, _, err := db.Migrate(t.Context(), u, zap.NewNop()); err == nil {
		t.Fatal("Migrate succeeded on a newer schema, want an error")
	}
	var tables int
	if err := conn.QueryRow(t.Context(), "SELECT count(*) FROM pg_tables WHERE schemaname = 'status'").Scan(&tables); err != nil || tables == 0 {
		t.Errorf("status tables after refused Migrate: %d (%v), want them kept", tables, err)
	}
}

// TestMigrationsRoundTrip runs every migration down and up again, so a
// down part that no longer matches its up part is found before an operator
// needs it.
func TestMigrationsRoundTrip(t *testing.T) {
	t.Parallel()
	u := dbtest.URL(t)
	conn, err := pgx.Connect(t.Context(), u)
	if err != nil {
		t.Fatal(err)
	}
	defer conn.Close(context.Background())
	m, err := migrate.NewMigrator(t.Context(), conn, db.VersionTable)
	if err != nil {
		t.Fatal(err)
	}
	if err := m.LoadMigrations(schema.Migrations); err != nil {
		t.Fatal(err)
	}
	if err := m.MigrateTo(t.Context(), 0); err != nil {
		t.Fatalf("migrate down to 0: %v", err)
	}
	if err := m.Migrate(t.Context()); err != nil {
		t.Fatalf("migrate up again: %v", err)
	}
	if v, err := m.GetCurrentVersion(t.Context()); err != nil || v != latest(t) {
		t.Fatalf("version after round trip = %d, %v; want %d", v, err, latest(t))
	}
}
