package main

import (
	"context"
	"fmt"
	"os"
	"strings"
	"testing"
	"time"

	"github.com/jackc/pgx/v5"

	"github.com/stbridge/stb/pkg/db/dbtest"
)

// TestDemoOwnDatabase: `stb demo` never takes the production
// STB_DATABASE_URL (it did, and recreated stb_demo on that server), uses
// the database --database-name names, and at the end drops it, or with
// --keep-database leaves it and says so (it left stb_demo unmentioned).
func TestDemoOwnDatabase(t *testing.T) {
	t.Setenv("STB_DATABASE_URL", "postgres://prod@127.0.0.1:1/production?connect_timeout=1")
	t.Setenv("STB_DEMO_DATABASE_URL", dbtest.BaseURL())
	name := fmt.Sprintf("stb_test_cmd_demo_%d_%d", os.Getpid(), time.Now().UnixNano()%1e6)
	exists := func() bool {
		t.Helper()
		conn, err := pgx.Connect(context.Background(), dbtest.BaseURL())
		if err != nil {
			t.Fatal(err)
		}
		defer conn.Close(context.Background())
		var n int
		if err := conn.QueryRow(context.Background(), "SELECT count(*) FROM pg_database WHERE datname = $1", name).Scan(&n); err != nil {
			t.Fatal(err)
		}
		return n == 1
	}
	t.Cleanup(func() {
		if err := cleanUpDemo(dbtest.BaseURL(), name, false, &strings.Builder{}); err != nil {
			t.Error(err)
		}
	})
	args := []string{"--hubs", "2", "--clusters", "2", "--generations", "3", "--rate", "0", "--http-addr=", "--admin-addr=", "--database-name", name}
	for _, keep := range []bool{true, false} {
		var out strings.Builder
		a := args
		if keep {
			a = append(a[:len(a):len(a)], "--keep-database")
		}
		if err := runDemo(t.Context(), a, &out); err != nil {
			t.Fatalf("keep %v: %v\n%s", keep, err, out.String())
		}
		if !strings.Contains(out.String(), "verified: ok") || !strings.Contains(out.String(), "/"+name) {
			t.Errorf("keep %v: not verified in %s:\n%s", keep, name, out.String())
		}
		if keep && (!exists() || !strings.Contains(out.String(), "left database "+name)) {
			t.Errorf("--keep-database: database left %v, output:\n%s", exists(), out.String())
		}
		if !keep && (exists() || !strings.Contains(out.String(), "dropped database "+name)) {
			t.Errorf("without --keep-database: database left %v, output:\n%s", exists(), out.String())
		}
	}
}
