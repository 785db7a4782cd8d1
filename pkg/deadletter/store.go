package deadletter

import (
	"context"
	"encoding/json"
	"fmt"
	"strings"
	"time"

	"github.com/jackc/pgx/v5"
	"github.com/jackc/pgx/v5/pgconn"

	"github.com/stbridge/stb/pkg/bundle"
	"github.com/stbridge/stb/pkg/redact"
)

// Row is one stored dead letter, as `stb deadletters` shows and replays it.
type Row struct {
	ID                 int64
	Hub, Type, Version string
	Origin             bundle.Origin
	Reason             Reason
	Error              string
	// Headers are the message's headers (ce_* attributes and others); Data
	// its value, the first MaxDataBytes of it. A letter written after
	// decoding holds the decoded payload instead, and only ce_source and
	// ce_extversion.
	Headers   map[string]string
	Data      []byte
	CreatedAt time.Time
	// ReplayedAt is when the last replay ran (zero if never);
	// ReplayOutcome how it ended: applied, stale or failed (NotReplayed
	// if never).
	ReplayedAt    time.Time
	ReplayOutcome ReplayOutcome
}

// Filter selects dead letters. Zero fields select everything.
type Filter struct {
	Reason Reason
	Hub    string
	// Since keeps letters stored at or after it; Before those stored
	// before it.
	Since, Before time.Time
	// NotApplied leaves out letters a replay already wrote or found stale.
	NotApplied bool
	// IDs, when not empty, selects these rows only.
	IDs []int64
	// After, when positive, keeps the letters whose id is above it: with
	// Limit, one page of a walk through the letters in id order, each
	// page starting after the last id of the one before (keyset paging,
	// so that letters marked or stored meanwhile shift nothing).
	After int64
	// Limit caps the number of rows; 0 is no cap.
	Limit int
	// Newest lists the newest first (and Limit keeps the newest).
	Newest bool
}

// where returns the filter's SQL condition and its arguments.
func (f Filter) where() (string, []any) {
	var conds []string
	var args []any
	add := func(cond string, arg any) {
		args = append(args, arg)
		conds = append(conds, fmt.Sprintf(cond, len(args)))
	}
	if f.Reason != "" {
		add("reason = $%d", string(f.Reason))
	}
	if f.Hub != "" {
		add("hub = $%d", f.Hub)
	}
	if !f.Since.IsZero() {
		add("created_at >= $%d", f.Since)
	}
	if !f.Before.IsZero() {
		add("created_at < $%d", f.Before)
	}
	if len(f.IDs) > 0 {
		add("id = ANY($%d)", f.IDs)
	}
	if f.After > 0 {
		add("id > $%d", f.After)
	}
	if f.NotApplied {
		add("replay_outcome <> ALL($%d)", []string{string(ReplayApplied), string(ReplayStale)})
	}
	if len(conds) == 0 {
		return "true", nil
	}
	return strings.Join(conds, " AND "), args
}

// Querier runs queries: *pgxpool.Pool, *pgx.Conn and pgx.Tx have it.
type Querier interface {
	Query(ctx context.Context, sql string, args ...any) (pgx.Rows, error)
	Exec(ctx context.Context, sql string, args ...any) (pgconn.CommandTag, error)
}

// List returns the dead letters f selects, oldest first: in id order, the
// order they were stored in (created_at is the storing transaction's
// start, which concurrent writers can take out of order). A caller that
// may meet many letters pages with Limit and After, rows being up to
// MaxDataBytes each.
func List(ctx context.Context, db Querier, f Filter) ([]Row, error) {
	where, args := f.where()
	order := "id"
	if f.Newest {
		order = "created_at DESC, id DESC"
	}
	q := `SELECT id, hub, bundle_type, version, topic, "partition", "offset", reason, error, headers, coalesce(data, ''::bytea),
	created_at, coalesce(replayed_at, 'epoch'::timestamptz), replay_outcome
FROM stb.dead_letters WHERE ` + where + ` ORDER BY ` + order
	if f.Limit > 0 {
		q += fmt.Sprintf(" LIMIT %d", f.Limit)
	}
	rows, err := db.Query(ctx, q, args...)
	if err != nil {
		return nil, fmt.Errorf("list dead letters: %w", err)
	}
	var out []Row
	var r Row
	var reason string
	var headers []byte
	_, err = pgx.ForEachRow(rows, []any{&r.ID, &r.Hub, &r.Type, &r.Version, &r.Origin.Topic, &r.Origin.Partition, &r.Origin.Offset,
		&reason, &r.Error, &headers, &r.Data, &r.CreatedAt, &r.ReplayedAt, &r.ReplayOutcome}, func() error {
		row := r
		row.Reason = Reason(reason)
		if err := json.Unmarshal(headers, &row.Headers); err != nil {
			return fmt.Errorf("dead letter %d: headers: %w", row.ID, err)
		}
		if row.ReplayedAt.Equal(time.Unix(0, 0)) {
			row.ReplayedAt = time.Time{}
		}
		row.Data = append([]byte(nil), r.Data...)
		out = append(out, row)
		return nil
	})
	if err != nil {
		return nil, fmt.Errorf("list dead letters: %w", err)
	}
	return out, nil
}

// ReasonCount is how many dead letters a reason has.
type ReasonCount struct {
	Reason          Reason
	Count, LastHour int64
	Newest          time.Time
}

// CountByReason counts the dead letters per reason, most first.
func CountByReason(ctx context.Context, db Querier) ([]ReasonCount, error) {
	rows, err := db.Query(ctx, `SELECT reason, count(*), count(*) FILTER (WHERE created_at > now() - interval '1 hour'), max(created_at)
FROM stb.dead_letters GROUP BY reason ORDER BY count(*) DESC, reason`)
	if err != nil {
		return nil, fmt.Errorf("count dead letters: %w", err)
	}
	var out []ReasonCount
	var c ReasonCount
	var reason string
	_, err = pgx.ForEachRow(rows, []any{&reason, &c.Count, &c.LastHour, &c.Newest}, func() error {
		c.Reason = Reason(reason)
		out = append(out, c)
		return nil
	})
	if err != nil {
		return nil, fmt.Errorf("count dead letters: %w", err)
	}
	return out, nil
}

// Count counts the dead letters f selects, whatever its Limit: what is
// left of a replay that stopped at its cap, for instance.
func Count(ctx context.Context, db Querier, f Filter) (int64, error) {
	where, args := f.where()
	rows, err := db.Query(ctx, `SELECT count(*) FROM stb.dead_letters WHERE `+where, args...)
	if err != nil {
		return 0, fmt.Errorf("count dead letters: %w", err)
	}
	n, err := pgx.CollectExactlyOneRow(rows, pgx.RowTo[int64])
	if err != nil {
		return 0, fmt.Errorf("count dead letters: %w", err)
	}
	return n, nil
}

// CountRecent counts the dead letters stored in the last d (by the
// database's clock): what the console's overview shows for the last hour.
func CountRecent(ctx context.Context, db Querier, d time.Duration) (int64, error) {
	rows, err := db.Query(ctx, `SELECT count(*) FROM stb.dead_letters WHERE created_at > now() - $1::float8 * interval '1 second'`, d.Seconds())
	if err != nil {
		return 0, fmt.Errorf("count recent dead letters: %w", err)
	}
	n, err := pgx.CollectExactlyOneRow(rows, pgx.RowTo[int64])
	if err != nil {
		return 0, fmt.Errorf("count recent dead letters: %w", err)
	}
	return n, nil
}

// Purge deletes the dead letters f selects and returns how many. Without
// Before it refuses: a purge of everything is not what an operator means
// by a filter left out.
func Purge(ctx context.Context, db Querier, f Filter) (int64, error) {
	if f.Before.IsZero() {
		return 0, fmt.Errorf("purge dead letters: a time before which to purge is required")
	}
	where, args := f.where()
	tag, err := db.Exec(ctx, `DELETE FROM stb.dead_letters WHERE `+where, args...)
	if err != nil {
		return 0, fmt.Errorf("purge dead letters: %w", err)
	}
	return tag.RowsAffected(), nil
}

// MarkReplayed records the outcome of a replay of row id. A failed replay
// also replaces the row's reason and error with the new ones.
func MarkReplayed(ctx context.Context, db Querier, id int64, outcome ReplayOutcome, reason Reason, cause error) error {
	if !outcome.Stored() {
		return fmt.Errorf("mark dead letter %d replayed: outcome %q is not stored", id, outcome)
	}
	var err error
	if outcome == ReplayFailed {
		msg := ""
		if cause != nil {
			msg = redact.Cap(clean(cause.Error()), maxHeaderBytes)
		}
		_, err = db.Exec(ctx, `UPDATE stb.dead_letters SET replayed_at = now(), replay_outcome = $2, reason = $3, error = $4 WHERE id = $1`,
			id, string(outcome), string(reason), msg)
	} else {
		_, err = db.Exec(ctx, `UPDATE stb.dead_letters SET replayed_at = now(), replay_outcome = $2 WHERE id = $1`, id, string(outcome))
	}
	if err != nil {
		return fmt.Errorf("mark dead letter %d replayed: %w", id, err)
	}
	return nil
}
