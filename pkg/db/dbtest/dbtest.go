package dbtest

import (
	"context"
	"crypto/rand"
	"encoding/hex"
	"net/url"
	"os"
	"strings"
	"testing"
	"time"

	"github.com/jackc/pgx/v5"
	"github.com/jackc/pgx/v5/pgxpool"
	"go.uber.org/zap"

	"github.com/stbridge/stb/pkg/db"
)

const (
	// EnvURL names the variable holding the server to create databases on.
	// Its user must be allowed to create databases.
	EnvURL = "STB_TEST_DATABASE_URL"
	// DefaultURL is used when EnvURL is unset: the local server that
	// `make test` (scripts/ensure-postgres.sh) provides.
	DefaultURL = "postgres://postgres@127.0.0.1:5432/postgres?sslmode=disable"

	// PoolSize is the size of the pool New returns: enough for tests that
	// run a few workers side by side.
	PoolSize = 8

	// setupTimeout bounds creating, migrating or dropping one database, so
	// that a hung server fails the test instead of hanging it.
	setupTimeout = 30 * time.Second
	// namePrefix starts every database this package creates, so leftovers
	// of killed test runs are easy to find and drop.
	namePrefix = "stb_test_"
)

// New creates a migrated throwaway database and returns a pool on it and
// its URL. When the test ends the pool is closed and the database dropped.
func New(t testing.TB) (*pgxpool.Pool, string) {
	t.Helper()
	u := URL(t)
	ctx, cancel := context.WithTimeout(context.Background(), setupTimeout)
	defer cancel()
	pool, err := db.Connect(ctx, u, PoolSize)
	if err != nil {
		t.Fatalf("dbtest: %v", err)
	}
	// Registered after Empty's drop, so it runs before it.
	t.Cleanup(pool.Close)
	return pool, u
}

// URL creates a migrated throwaway database, dropped when the test ends,
// and returns its URL, for tests that open their own connections.
func URL(t testing.TB) string {
	t.Helper()
	u := Empty(t)
	ctx, cancel := context.WithTimeout(context.Background(), setupTimeout)
	defer cancel()
	if _, _, err := db.Migrate(ctx, u, zap.NewNop()); err != nil {
		t.Fatalf("dbtest: %v", err)
	}
	return u
}

// Empty creates a throwaway database without any schema, dropped when the
// test ends, and returns its URL; for tests of the migrations themselves.
func Empty(t testing.TB) string {
	t.Helper()
	base := BaseURL()
	name := newName(t)

	ctx, cancel := context.WithTimeout(context.Background(), setupTimeout)
	defer cancel()
	admin := connectAdmin(ctx, t, base)
	defer admin.Close(context.Background())
	if _, err := admin.Exec(ctx, "CREATE DATABASE "+pgx.Identifier{name}.Sanitize()); err != nil {
		t.Fatalf("dbtest: create database %s on %s: %v", name, db.RedactURL(base), err)
	}
	t.Cleanup(func() { drop(t, base, name) })
	return withDatabase(t, base, name)
}

// BaseURL returns the server URL tests create their databases on.
func BaseURL() string {
	if u := os.Getenv(EnvURL); u != "" {
		return u
	}
	return DefaultURL
}

// connectAdmin connects to the base database, failing the test with a
// message that says how to get a server.
func connectAdmin(ctx context.Context, t testing.TB, base string) *pgx.Conn {
	t.Helper()
	conn, err := pgx.Connect(ctx, base)
	if err != nil {
		t.Fatalf("dbtest: cannot reach PostgreSQL at %s ($%s, default %s): %v\n"+
			"Database tests need a real server and never skip: run `make test`, which starts one, "+
			"or scripts/ensure-postgres.sh, or set %s to a server whose user may create databases.",
			db.RedactURL(base), EnvURL, DefaultURL, db.RedactError(err, base), EnvURL)
	}
	return conn
}

// drop removes a database even if a test left connections open on it.
// It runs as a cleanup, after the test's context has been cancelled, so it
// uses a context of its own.
func drop(t testing.TB, base, name string) {
	ctx, cancel := context.WithTimeout(context.Background(), setupTimeout)
	defer cancel()
	conn, err := pgx.Connect(ctx, base)
	if err != nil {
		t.Errorf("dbtest: drop database %s: %v", name, db.RedactError(err, base))
		return
	}
	defer conn.Close(context.Background())
	if _, err := conn.Exec(ctx, "DROP DATABASE IF EXISTS "+pgx.Identifier{name}.Sanitize()+" WITH (FORCE)"); err != nil {
		t.Errorf("dbtest: drop database %s: %v", name, err)
	}
}

// newName returns a fresh database name: the prefix and 16 random hex
// digits, lower case so it needs no quoting.
func newName(t testing.TB) string {
	var b [8]byte
	if _, err := rand.Read(b[:]); err != nil {
		t.Fatalf("dbtest: random name: %v", err)
	}
	return namePrefix + hex.EncodeToString(b[:])
}

// withDatabase returns base with its database replaced by name; base is a
// URL or a keyword/value string.
func withDatabase(t testing.TB, base, name string) string {
	t.Helper()
	if !strings.HasPrefix(base, "postgres://") && !strings.HasPrefix(base, "postgresql://") {
		// In keyword/value strings a later keyword overrides an earlier one.
		return base + " dbname=" + name
	}
	u, err := url.Parse(base)
	if err != nil {
		t.Fatalf("dbtest: parse %s: %v", db.RedactURL(base), db.RedactError(err, base))
	}
	u.Path = "/" + name
	u.RawPath = ""
	return u.String()
}
