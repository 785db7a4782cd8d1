package db

import (
	"context"
	"errors"
	"fmt"

	"github.com/jackc/pgx/v5"
)

// ErrUnknownHub is returned (wrapped) by HubKnown's callers for a hub the
// database holds nothing of: a typo, most likely.
var ErrUnknownHub = errors.New("unknown hub")

// HubKnown reports whether the database holds anything of hub: its
// lifecycle row (stb.hubs, also for a deleted hub), a stored version or
// tombstone, a row of one of STB's tables found by their hub column, or a
// row of one of scope's tables (the families' and the global hub's, for
// a hub upstream's manager wrote before STB took over). The hub commands
// refuse a hub unknown everywhere rather than record a request that
// matched nothing.
func HubKnown(ctx context.Context, q interface {
	Querier
	QueryRow(ctx context.Context, sql string, args ...any) pgx.Row
}, hub string, scope HubScope) (bool, error) {
	var known bool
	if err := q.QueryRow(ctx, `SELECT EXISTS (SELECT 1 FROM stb.hubs WHERE name = $1)
		OR EXISTS (SELECT 1 FROM stb.bundle_versions WHERE hub = $1)`, hub).Scan(&known); err != nil {
		return false, fmt.Errorf("db: look up hub %q: %w", hub, err)
	}
	if known {
		return true, nil
	}
	rows, err := q.Query(ctx, hubTablesSQL)
	if err != nil {
		return false, fmt.Errorf("db: list the tables of hubs: %w", err)
	}
	tables, err := pgx.CollectRows(rows, pgx.RowTo[string])
	if err != nil {
		return false, fmt.Errorf("db: list the tables of hubs: %w", err)
	}
	type where struct{ table, column string }
	var all []where
	for _, t := range tables {
		all = append(all, where{t, "hub"})
	}
	for _, t := range scope.Tables {
		all = append(all, where{t.Table, t.Column})
	}
	for _, w := range all {
		// The name as the catalog spells it, quoted where it must be; NULL
		// for a declared table this database lacks (a schema that
		// predates it), which is skipped.
		var name *string
		if err := q.QueryRow(ctx, `SELECT to_regclass($1)::text`, w.table).Scan(&name); err != nil {
			return false, fmt.Errorf("db: look for table %s: %w", w.table, err)
		}
		if name == nil {
			continue
		}
		sql := fmt.Sprintf(`SELECT EXISTS (SELECT 1 FROM %s WHERE %s = $1)`, *name, pgx.Identifier{w.column}.Sanitize())
		if err := q.QueryRow(ctx, sql, hub).Scan(&known); err != nil {
			return false, fmt.Errorf("db: look up hub %q in %s: %w", hub, *name, err)
		}
		if known {
			return true, nil
		}
	}
	return false, nil
}
