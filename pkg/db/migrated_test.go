package db_test

import (
	"context"
	"errors"
	"strings"
	"testing"

	"github.com/stbridge/stb/pkg/db"
	"github.com/stbridge/stb/pkg/db/dbtest"
)

// TestCheckMigratedSaysWhatToDo: a database nobody migrated, one at an
// older version and one at a newer version are each refused with the
// versions and what to do; the migrated one passes.
func TestCheckMigratedSaysWhatToDo(t *testing.T) {
	ctx := context.Background()
	want := db.LatestVersion()
	if want < 2 {
		t.Fatalf("LatestVersion = %d, want at least 2 (001_stb.sql, 002_globalhub.sql)", want)
	}

	empty, err := db.Connect(ctx, dbtest.Empty(t), 1)
	if err != nil {
		t.Fatal(err)
	}
	defer empty.Close()
	err = db.CheckMigrated(ctx, empty)
	var nm *db.NotMigratedError
	if !errors.As(err, &nm) || nm.Version != 0 || nm.Want != want || !strings.Contains(err.Error(), "run `stb migrate`") {
		t.Fatalf("unmigrated database: %v, want a NotMigratedError at 0 saying to run stb migrate", err)
	}

	pool, _ := dbtest.New(t)
	if err := db.CheckMigrated(ctx, pool); err != nil {
		t.Fatalf("migrated database refused: %v", err)
	}
	for _, c := range []struct {
		version int32
		says    string
	}{{want - 1, "run `stb migrate`"}, {want + 1, "run a newer stb"}} {
		if _, err := pool.Exec(ctx, "UPDATE "+db.VersionTable+" SET version = $1", c.version); err != nil {
			t.Fatal(err)
		}
		err := db.CheckMigrated(ctx, pool)
		if !errors.As(err, &nm) || nm.Version != c.version || !strings.Contains(err.Error(), c.says) {
			t.Fatalf("schema at %d: %v, want a NotMigratedError saying %q", c.version, err, c.says)
		}
	}
}
