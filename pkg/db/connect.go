package db

import (
	"context"
	"fmt"

	"github.com/jackc/pgx/v5/pgxpool"
)

// DefaultURL is the database every command connects to without
// --database-url: a local server, as `make test` and the demo use.
const DefaultURL = "postgres://postgres@127.0.0.1:5432/postgres?sslmode=disable"

// Connect opens a pool of at most maxConns connections on url and pings the
// server, so that a wrong URL or a server that is down fails at start-up
// with a clear message rather than on the first bundle. maxConns of 0 keeps
// pgxpool's default (pool_max_conns in url, else max(4, CPUs)).
//
// Errors show url with its password redacted.
func Connect(ctx context.Context, url string, maxConns int32) (*pgxpool.Pool, error) {
	if maxConns < 0 {
		return nil, fmt.Errorf("db: maxConns is %d, want at least 0", maxConns)
	}
	if err := CheckURL(url); err != nil {
		return nil, err
	}
	cfg, err := pgxpool.ParseConfig(url)
	if err != nil {
		return nil, fmt.Errorf("db: invalid database URL %s: %w", RedactURL(url), RedactError(err, url))
	}
	if maxConns > 0 {
		cfg.MaxConns = maxConns
		if cfg.MinConns > maxConns {
			cfg.MinConns = maxConns
		}
	}
	pool, err := pgxpool.NewWithConfig(ctx, cfg)
	if err != nil {
		return nil, fmt.Errorf("db: create pool for %s: %w", RedactURL(url), RedactError(err, url))
	}
	if err := pool.Ping(ctx); err != nil {
		pool.Close()
		return nil, fmt.Errorf("db: connect to %s: %w", RedactURL(url), RedactError(err, url))
	}
	return pool, nil
}
