package db

import (
	"context"
	"errors"
	"fmt"
	"io/fs"
	"strconv"
	"strings"

	"github.com/jackc/pgx/v5"
	"github.com/jackc/pgx/v5/pgconn"

	schema "github.com/stbridge/stb/sql"
)

// NotMigratedError is returned by CheckMigrated for a database whose
// schema is not the one this binary writes: never migrated (Version 0),
// or migrated by an older or a newer stb.
type NotMigratedError struct {
	// Version is the database's schema version, 0 when it has none;
	// Want is the newest one embedded in this binary.
	Version, Want int32
}

func (e *NotMigratedError) Error() string {
	switch {
	case e.Version == 0:
		return fmt.Sprintf("db: the database has no STB schema (%s does not exist): run `stb migrate` with the same --database-url, or start the bridge with --migrate", VersionTable)
	case e.Version < e.Want:
		return fmt.Sprintf("db: the database schema is at version %d, this stb needs %d: run `stb migrate` with the same --database-url, or start the bridge with --migrate", e.Version, e.Want)
	default:
		return fmt.Sprintf("db: the database schema is at version %d, newer than the %d this stb knows: run a newer stb", e.Version, e.Want)
	}
}

// LatestVersion is the newest schema version embedded in this binary: the
// number of the last migration file (NNN_name.sql) of package sql.
func LatestVersion() int32 {
	var latest int32
	entries, _ := fs.ReadDir(schema.Migrations, ".")
	for _, e := range entries {
		num, _, ok := strings.Cut(e.Name(), "_")
		if !ok || !strings.HasSuffix(e.Name(), ".sql") {
			continue
		}
		if n, err := strconv.ParseInt(num, 10, 32); err == nil && int32(n) > latest {
			latest = int32(n)
		}
	}
	return latest
}

// CheckMigrated returns a *NotMigratedError unless the database's schema
// version is LatestVersion, so that a bridge started without --migrate on
// a database nobody migrated says what to do instead of failing on the
// first table it reads.
func CheckMigrated(ctx context.Context, q interface {
	QueryRow(ctx context.Context, sql string, args ...any) pgx.Row
}) error {
	want := LatestVersion()
	var have int32
	err := q.QueryRow(ctx, "SELECT version FROM "+VersionTable).Scan(&have)
	var pgErr *pgconn.PgError
	switch {
	case errors.As(err, &pgErr) && pgErr.Code == "42P01": // undefined_table
		return &NotMigratedError{Want: want}
	case errors.Is(err, pgx.ErrNoRows):
		return &NotMigratedError{Want: want}
	case err != nil:
		return fmt.Errorf("db: read the schema version from %s: %w", VersionTable, err)
	case have != want:
		return &NotMigratedError{Version: have, Want: want}
	}
	return nil
}
