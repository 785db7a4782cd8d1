package console

import (
	"context"
	"fmt"
	"time"

	"github.com/jackc/pgx/v5"

	"github.com/stbridge/stb/pkg/db"
	"github.com/stbridge/stb/pkg/deadletter"
)

// The two questions of the overview that no other package asks: which
// hubs have the most dead letters (and why), and which hubs are inactive,
// a page at a time. Both are bounded by a LIMIT and served by the indexes
// of sql/001_stb.sql (dead_letters_hub_idx, hubs_state_idx).

// querier is the one method the queries need; *pgxpool.Pool has it.
type querier interface {
	Query(ctx context.Context, sql string, args ...any) (pgx.Rows, error)
}

// deadLetterHubsShown is how many hubs with dead letters the overview lists.
const deadLetterHubsShown = 10

// LetterHub is a hub with dead letters not yet replayed: how many, the
// newest, and how many per reason, most first.
type LetterHub struct {
	Hub     string          `json:"hub"`
	Letters int64           `json:"letters"`
	Newest  time.Time       `json:"newest"`
	Reasons []ReasonLetters `json:"reasons"`
}

// ReasonLetters is how many of a hub's letters have one reason.
type ReasonLetters struct {
	Reason  deadletter.Reason `json:"reason"`
	Letters int64             `json:"letters"`
}

// loadLetterHubs returns the limit hubs with the most dead letters that
// no replay applied (or found stale), most first, and the number of hubs
// with any.
func loadLetterHubs(ctx context.Context, q querier, limit int) ([]LetterHub, int64, error) {
	rows, err := q.Query(ctx, `
		WITH per AS (
			SELECT hub, reason, count(*) AS n, max(created_at) AS newest
			FROM stb.dead_letters
			WHERE replay_outcome <> ALL($2)
			GROUP BY hub, reason),
		top AS (
			SELECT hub, sum(n)::bigint AS total, max(newest) AS newest, count(*) OVER () AS hubs
			FROM per GROUP BY hub
			ORDER BY total DESC, hub LIMIT $1)
		SELECT t.hub, t.total, t.newest, t.hubs, p.reason, p.n
		FROM top t JOIN per p USING (hub)
		ORDER BY t.total DESC, t.hub, p.n DESC, p.reason`,
		limit, []string{string(deadletter.ReplayApplied), string(deadletter.ReplayStale)})
	if err != nil {
		return nil, 0, fmt.Errorf("hubs with dead letters: %w", err)
	}
	var (
		out      []LetterHub
		hubs     int64
		hub      string
		total, n int64
		newest   time.Time
		reason   string
	)
	_, err = pgx.ForEachRow(rows, []any{&hub, &total, &newest, &hubs, &reason, &n}, func() error {
		if len(out) == 0 || out[len(out)-1].Hub != hub {
			out = append(out, LetterHub{Hub: hub, Letters: total, Newest: newest})
		}
		last := &out[len(out)-1]
		last.Reasons = append(last.Reasons, ReasonLetters{Reason: deadletter.Reason(reason), Letters: n})
		return nil
	})
	if err != nil {
		return nil, 0, fmt.Errorf("hubs with dead letters: %w", err)
	}
	return out, hubs, nil
}

// InactiveHub is a hub of stb.hubs in state inactive, and since when.
type InactiveHub struct {
	Hub   string
	Since time.Time
}

// loadInactiveHubs returns at most limit inactive hubs whose names sort
// after after, by name: one page of the list, the next starting after
// the last name of this one.
func loadInactiveHubs(ctx context.Context, q querier, after string, limit int) ([]InactiveHub, error) {
	rows, err := q.Query(ctx, `
		SELECT name, state_since FROM stb.hubs
		WHERE state = $1 AND name > $2
		ORDER BY name LIMIT $3`, string(db.HubInactive), after, limit)
	if err != nil {
		return nil, fmt.Errorf("inactive hubs: %w", err)
	}
	out, err := pgx.CollectRows(rows, func(row pgx.CollectableRow) (InactiveHub, error) {
		var h InactiveHub
		err := row.Scan(&h.Hub, &h.Since)
		return h, err
	})
	if err != nil {
		return nil, fmt.Errorf("inactive hubs: %w", err)
	}
	return out, nil
}
