package cne

import (
	"context"
	"fmt"
	"time"

	"github.com/jackc/pgx/v5"
)

// StateRow is one row of stb.cne_state as the console shows it.
type StateRow struct {
	Type, Address, DataType, ValueType string
	// Value is value_text, or the JSON value for a Redfish event.
	Value string
	Time  time.Time
	// Topic, Partition and Offset are where the value was read.
	Topic     string
	Partition int32
	Offset    int64
}

// Querier runs a query (*pgxpool.Pool, pgx.Tx).
type Querier interface {
	Query(ctx context.Context, sql string, args ...any) (pgx.Rows, error)
}

// LoadNode returns up to limit rows of a node, by type, address and data
// type.
func LoadNode(ctx context.Context, q Querier, node string, limit int) ([]StateRow, error) {
	rows, err := q.Query(ctx, `
		SELECT event_type, resource_address, data_type, value_type, coalesce(value_text, left(value::text, 200)),
		       event_time, topic, "partition", "offset"
		FROM stb.cne_state WHERE hub = $1
		ORDER BY event_type, resource_address, data_type LIMIT $2`, node, limit)
	if err != nil {
		return nil, fmt.Errorf("read stb.cne_state: %w", err)
	}
	out, err := pgx.CollectRows(rows, func(r pgx.CollectableRow) (StateRow, error) {
		var s StateRow
		err := r.Scan(&s.Type, &s.Address, &s.DataType, &s.ValueType, &s.Value, &s.Time, &s.Topic, &s.Partition, &s.Offset)
		return s, err
	})
	if err != nil {
		return nil, fmt.Errorf("read stb.cne_state: %w", err)
	}
	return out, nil
}
