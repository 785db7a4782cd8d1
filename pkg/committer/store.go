package committer

import (
	"context"
	"encoding/json"
	"errors"
	"fmt"
	"strconv"

	"github.com/jackc/pgx/v5"
	"github.com/jackc/pgx/v5/pgconn"
)

// DB is what the store needs: *pgxpool.Pool and pgx.Tx both have it.
type DB interface {
	Exec(ctx context.Context, sql string, args ...any) (pgconn.CommandTag, error)
	QueryRow(ctx context.Context, sql string, args ...any) pgx.Row
}

// PGStore keeps positions in status.transport, one row per partition named
// "<topic>@<partition>".
type PGStore struct {
	db DB
}

// NewPGStore returns a store on db. Give it a pool of its own so commits
// never wait behind the workers.
func NewPGStore(db DB) *PGStore { return &PGStore{db: db} }

// RowName is the status.transport name of a partition.
func RowName(topic string, partition int32) string {
	return topic + "@" + strconv.FormatInt(int64(partition), 10)
}

// Save upserts the positions in one statement.
func (s *PGStore) Save(ctx context.Context, ps []Position) error {
	names := make([]string, len(ps))
	payloads := make([]string, len(ps))
	for i, p := range ps {
		b, err := json.Marshal(p)
		if err != nil {
			return err
		}
		names[i] = RowName(p.Topic, p.Partition)
		payloads[i] = string(b)
	}
	_, err := s.db.Exec(ctx, `
INSERT INTO status.transport (name, payload, created_at, updated_at)
SELECT n, p::jsonb, now(), now() FROM unnest($1::text[], $2::text[]) AS t(n, p)
ORDER BY n
ON CONFLICT (name) DO UPDATE SET payload = excluded.payload, updated_at = now()`, names, payloads)
	if err != nil {
		return fmt.Errorf("save positions: %w", err)
	}
	return nil
}

// Load returns the stored position of a partition; ok is false when none is
// stored.
func (s *PGStore) Load(ctx context.Context, topic string, partition int32) (p Position, ok bool, err error) {
	var raw []byte
	err = s.db.QueryRow(ctx, `SELECT payload FROM status.transport WHERE name = $1`, RowName(topic, partition)).Scan(&raw)
	if errors.Is(err, pgx.ErrNoRows) {
		return Position{}, false, nil
	}
	if err != nil {
		return Position{}, false, fmt.Errorf("load position of %s: %w", RowName(topic, partition), err)
	}
	if err := json.Unmarshal(raw, &p); err != nil {
		return Position{}, false, fmt.Errorf("decode position of %s: %w", RowName(topic, partition), err)
	}
	return p, true, nil
}
