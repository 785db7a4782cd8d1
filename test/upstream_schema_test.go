package test

import (
	"context"
	"os/exec"
	"strings"
	"testing"
	"time"

	"github.com/jackc/pgx/v5"

	"github.com/stbridge/stb/pkg/db/dbtest"
)

// stbMigrate runs `stb migrate` on the database at url and returns its
// output and error.
func stbMigrate(t *testing.T, url string) (string, error) {
	t.Helper()
	ctx, cancel := context.WithTimeout(context.Background(), time.Minute)
	defer cancel()
	out, err := exec.CommandContext(ctx, stbBin, "migrate", "--database-url", url).CombinedOutput()
	return string(out), err
}

// TestStbMigrateCoexistsWithUpstreamOperator: the `stb migrate` command
// (pkg/db's tests check db.Migrate itself) succeeds twice in a row on an
// empty database and on one upstream's operator created; on an operator's
// database that lacks a column STB writes, it exits non-zero naming the
// column, and changes nothing of upstream's table.
func TestStbMigrateCoexistsWithUpstreamOperator(t *testing.T) {
	t.Parallel()
	for name, url := range map[string]string{"empty": dbtest.Empty(t), "upstream operator's": upstreamDatabase(t)} {
		for i := 1; i <= 2; i++ {
			if out, err := stbMigrate(t, url); err != nil {
				t.Errorf("stb migrate #%d on the %s database: %v\n%s", i, name, err, out)
			}
		}
	}

	u := upstreamDatabase(t)
	conn, err := pgx.Connect(t.Context(), u)
	if err != nil {
		t.Fatal(err)
	}
	defer conn.Close(context.Background())
	if _, err := conn.Exec(t.Context(), `ALTER TABLE status.managed_clusters DROP COLUMN deleted_at`); err != nil {
		t.Fatal(err)
	}
	out, err := stbMigrate(t, u)
	if ee, ok := err.(*exec.ExitError); !ok || ee.ExitCode() == 0 {
		t.Fatalf("stb migrate on a database without status.managed_clusters.deleted_at: %v, want a non-zero exit\n%s", err, out)
	}
	if !strings.Contains(out, "status.managed_clusters.deleted_at") {
		t.Errorf("stb migrate's failure does not name the missing column:\n%s", out)
	}
	var has bool
	if err := conn.QueryRow(t.Context(), `SELECT EXISTS (SELECT 1 FROM information_schema.columns
		WHERE table_schema = 'status' AND table_name = 'managed_clusters' AND column_name = 'deleted_at')`).Scan(&has); err != nil {
		t.Fatal(err)
	}
	if has {
		t.Error("stb migrate added status.managed_clusters.deleted_at to upstream's table; it must never change its shape")
	}
}
