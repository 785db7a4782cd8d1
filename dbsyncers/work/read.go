package work

import (
	"context"
	"fmt"
	"time"

	"github.com/jackc/pgx/v5"
)

// Querier runs a query; *pgxpool.Pool, *pgx.Conn and pgx.Tx have it.
type Querier interface {
	Query(ctx context.Context, sql string, args ...any) (pgx.Rows, error)
}

// ClusterCount is one cluster's rows of work.resource_status.
type ClusterCount struct {
	Cluster         string
	Resources, Gone int64 // rows, of which tombstones
	LastUpdate      time.Time
}

// Clusters returns the clusters with stored statuses, the most recently
// updated first, at most limit. It reads the whole table: the console
// calls it under a deadline.
func Clusters(ctx context.Context, db Querier, limit int) ([]ClusterCount, error) {
	rows, err := db.Query(ctx, `
		SELECT cluster, count(*), count(*) FILTER (WHERE deleted), max(updated_at)
		FROM work.resource_status GROUP BY cluster ORDER BY max(updated_at) DESC, cluster LIMIT $1`, limit)
	if err != nil {
		return nil, fmt.Errorf("work clusters: %w", err)
	}
	return pgx.CollectRows(rows, func(r pgx.CollectableRow) (ClusterCount, error) {
		var c ClusterCount
		err := r.Scan(&c.Cluster, &c.Resources, &c.Gone, &c.LastUpdate)
		return c, err
	})
}

// Row is a stored status as the console lists it.
type Row struct {
	Source, ResourceID, Agent string
	ResourceVersion           int64
	SequenceID                int64
	Deleted                   bool
	StatusHash                string
	EventType                 string
	EventTime, UpdatedAt      time.Time
	// Conditions are the status's work conditions, "Type=Status" each.
	Conditions []string
}

// Latest returns a cluster's statuses, the most recently updated first, at
// most limit.
func Latest(ctx context.Context, db Querier, cluster string, limit int) ([]Row, error) {
	rows, err := db.Query(ctx, `
		SELECT source, resource_id, agent, resource_version, sequence_id, deleted, coalesce(status_hash, ''),
			event_type, coalesce(event_time, updated_at), updated_at,
			coalesce(ARRAY(SELECT (c->>'type') || '=' || (c->>'status') FROM jsonb_array_elements(
				CASE WHEN jsonb_typeof(status->'conditions') = 'array' THEN status->'conditions' ELSE '[]' END) c), '{}')
		FROM work.resource_status WHERE cluster = $1 ORDER BY updated_at DESC, source, resource_id LIMIT $2`, cluster, limit)
	if err != nil {
		return nil, fmt.Errorf("work statuses of %q: %w", cluster, err)
	}
	return pgx.CollectRows(rows, func(r pgx.CollectableRow) (Row, error) {
		var x Row
		err := r.Scan(&x.Source, &x.ResourceID, &x.Agent, &x.ResourceVersion, &x.SequenceID, &x.Deleted, &x.StatusHash,
			&x.EventType, &x.EventTime, &x.UpdatedAt, &x.Conditions)
		return x, err
	})
}
