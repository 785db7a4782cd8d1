package db

import (
	"context"
	"fmt"

	"github.com/jackc/pgx/v5"
	"github.com/jackc/tern/v2/migrate"
	"go.uber.org/zap"

	schema "github.com/stbridge/stb/sql"
)

// VersionTable is where tern records how far the schema has been migrated.
// It lives in public, not in status, because it must exist before the
// first migration creates the status schema and must survive that
// migration's down part dropping it.
const VersionTable = "public.stb_schema_version"

// migrateLock is the pg_advisory_lock key Migrate holds for its whole run
// ("STB_MIGR" in ASCII). tern takes a lock of its own, but only around each
// of its steps and under a key shared by every tern user of the database;
// holding ours from before tern creates its version table until after the
// last migration serialises bridges that start together, so each reports
// the versions it really moved between.
const migrateLock int64 = 0x5354425f4d494752

// Migrate brings the database at url to the newest schema embedded in
// package sql and returns the versions it found and left; from == to when
// there was nothing to do. It is safe to call from several processes at
// once: the second one waits, then finds nothing to do.
//
// It uses a connection of its own rather than a pool's, because the
// advisory lock belongs to the session and is released by closing it, also
// when ctx is cancelled halfway. Migrate refuses a database whose schema is
// newer than this binary knows, instead of letting tern roll it back.
func Migrate(ctx context.Context, url string, logger *zap.Logger) (from, to int32, err error) {
	if logger == nil {
		logger = zap.NewNop()
	}
	if err := CheckURL(url); err != nil {
		return 0, 0, err
	}
	conn, err := pgx.Connect(ctx, url)
	if err != nil {
		return 0, 0, fmt.Errorf("db: migrate: connect to %s: %w", RedactURL(url), RedactError(err, url))
	}
	// Closing the session releases the advisory lock.
	defer conn.Close(context.WithoutCancel(ctx))

	if _, err := conn.Exec(ctx, "SELECT pg_advisory_lock($1)", migrateLock); err != nil {
		return 0, 0, fmt.Errorf("db: migrate: take advisory lock: %w", err)
	}

	switch legacy, err := legacyLayout(ctx, conn); {
	case err != nil:
		return 0, 0, fmt.Errorf("db: migrate: look for an earlier layout: %w", err)
	case legacy:
		return 0, 0, fmt.Errorf("db: migrate: the database holds STB's tables from before they moved to schema stb "+
			"(status.bundle_versions exists): this STB writes the global hub's own tables and cannot take that layout over; "+
			"migrate into a new database (its positions and versions start again from Kafka) or drop the old schemas status and event and %s", VersionTable)
	}

	m, err := migrate.NewMigrator(ctx, conn, VersionTable)
	if err != nil {
		return 0, 0, fmt.Errorf("db: migrate: prepare %s: %w", VersionTable, err)
	}
	if err := m.LoadMigrations(schema.Migrations); err != nil {
		return 0, 0, fmt.Errorf("db: migrate: load embedded migrations: %w", err)
	}
	if len(m.Migrations) == 0 {
		return 0, 0, fmt.Errorf("db: migrate: no migrations embedded")
	}
	latest := m.Migrations[len(m.Migrations)-1].Sequence

	from, err = m.GetCurrentVersion(ctx)
	if err != nil {
		return 0, 0, fmt.Errorf("db: migrate: read current version: %w", err)
	}
	if from > latest {
		return from, from, fmt.Errorf("db: migrate: database schema is at version %d, newer than the %d this binary knows; run a newer stb", from, latest)
	}
	if from == latest {
		logger.Debug("database schema is up to date", zap.Int32("version", from))
		return from, from, CheckSchema(ctx, conn)
	}

	m.OnStart = func(seq int32, name, direction, _ string) {
		logger.Info("applying migration",
			zap.Int32("sequence", seq), zap.String("name", name), zap.String("direction", direction))
	}
	if err := m.Migrate(ctx); err != nil {
		return from, from, fmt.Errorf("db: migrate from version %d: %w", from, err)
	}
	to, err = m.GetCurrentVersion(ctx)
	if err != nil {
		return from, from, fmt.Errorf("db: migrate: read new version: %w", err)
	}
	logger.Info("database schema migrated", zap.Int32("from", from), zap.Int32("to", to))
	if err := CheckSchema(ctx, conn); err != nil {
		return from, to, err
	}
	return from, to, nil
}
