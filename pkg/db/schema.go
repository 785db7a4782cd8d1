package db

import (
	"context"
	"fmt"
	"slices"
	"strings"

	"github.com/jackc/pgx/v5"
)

// GlobalHubColumns are the columns of the global hub's own tables that STB
// writes or reads, table by table (README "The global hub's database").
// On a database upstream's operator created, those tables are upstream's:
// STB checks that each column is there before it writes anything, and
// never changes their shape.
var GlobalHubColumns = map[string][]string{
	"status.transport":           {"name", "payload", "created_at", "updated_at"},
	"status.managed_clusters":    {"leaf_hub_name", "cluster_name", "cluster_id", "payload", "error", "created_at", "updated_at", "deleted_at"},
	"status.leaf_hubs":           {"leaf_hub_name", "cluster_id", "payload", "created_at", "updated_at", "deleted_at"},
	"status.leaf_hub_heartbeats": {"leaf_hub_name", "last_timestamp", "status"},
	"local_spec.policies":        {"leaf_hub_name", "policy_id", "payload", "created_at", "updated_at", "deleted_at"},
	"local_status.compliance":    {"policy_id", "cluster_name", "leaf_hub_name", "error", "compliance", "cluster_id"},
	"event.managed_clusters":     {"event_namespace", "event_name", "cluster_name", "cluster_id", "leaf_hub_name", "message", "reason", "reporting_controller", "reporting_instance", "event_type", "created_at"},
	"event.local_policies":       {"event_name", "event_namespace", "policy_id", "cluster_id", "cluster_name", "leaf_hub_name", "message", "reason", "count", "source", "created_at", "compliance"},
	"event.local_root_policies":  {"event_name", "event_namespace", "policy_id", "leaf_hub_name", "message", "reason", "count", "source", "created_at", "compliance"},
	"history.local_compliance":   {"policy_id", "cluster_id", "leaf_hub_name", "compliance_date", "compliance", "compliance_changed_frequency"},
	"security.alert_counts":      {"hub_name", "low", "medium", "high", "critical", "detail_url", "source", "created_at", "updated_at"},
}

// SchemaError names what a database lacks of what STB writes.
type SchemaError struct {
	// Missing lists "schema.table" or "schema.table.column", sorted.
	Missing []string
}

func (e *SchemaError) Error() string {
	return fmt.Sprintf("db: the database lacks what STB writes: %s (run `stb migrate` on an empty database, "+
		"or upgrade the global hub's operator: STB adopts its tables and never changes their shape)",
		strings.Join(e.Missing, ", "))
}

// CheckSchema checks that every table and column of GlobalHubColumns
// exists, and returns a *SchemaError naming each one that does not.
func CheckSchema(ctx context.Context, db interface {
	Query(ctx context.Context, sql string, args ...any) (pgx.Rows, error)
}) error {
	rows, err := db.Query(ctx, `
		SELECT table_schema || '.' || table_name, column_name
		FROM information_schema.columns
		WHERE table_schema IN ('status', 'event', 'local_spec', 'local_status', 'history', 'security')`)
	if err != nil {
		return fmt.Errorf("db: read the global hub's columns: %w", err)
	}
	have := map[string]map[string]bool{}
	var table, column string
	if _, err := pgx.ForEachRow(rows, []any{&table, &column}, func() error {
		if have[table] == nil {
			have[table] = map[string]bool{}
		}
		have[table][column] = true
		return nil
	}); err != nil {
		return fmt.Errorf("db: read the global hub's columns: %w", err)
	}
	var missing []string
	for t, cols := range GlobalHubColumns {
		if have[t] == nil {
			missing = append(missing, t)
			continue
		}
		for _, c := range cols {
			if !have[t][c] {
				missing = append(missing, t+"."+c)
			}
		}
	}
	if len(missing) > 0 {
		slices.Sort(missing)
		return &SchemaError{Missing: missing}
	}
	return nil
}

// legacyLayout reports whether the database holds the layout of STB
// before its tables moved to schema stb (its fence was
// status.bundle_versions), which the migrations of this binary cannot
// take over.
func legacyLayout(ctx context.Context, conn *pgx.Conn) (bool, error) {
	var legacy bool
	err := conn.QueryRow(ctx, `SELECT to_regclass('status.bundle_versions') IS NOT NULL AND to_regclass('stb.bundle_versions') IS NULL`).Scan(&legacy)
	return legacy, err
}
