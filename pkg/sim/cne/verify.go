package cne

import (
	"context"
	"fmt"
	"strings"

	"github.com/jackc/pgx/v5"
)

// Querier runs a query (*pgxpool.Pool, *pgx.Conn, pgx.Tx).
type Querier interface {
	Query(ctx context.Context, sql string, args ...any) (pgx.Rows, error)
}

// Report is what Verify found.
type Report struct {
	Rows, Nodes, DeadLetters int
	// Mismatches lists the differences, at most maxMismatches of them.
	Mismatches []string
	// Differences counts them all.
	Differences int
}

const maxMismatches = 20

// OK reports whether the database matched.
func (r *Report) OK() bool { return r.Differences == 0 }

// Summary says what differs.
func (r *Report) Summary() string {
	s := strings.Join(r.Mismatches, "\n")
	if r.Differences > len(r.Mismatches) {
		s += fmt.Sprintf("\n… and %d more", r.Differences-len(r.Mismatches))
	}
	return s
}

func (r *Report) add(format string, args ...any) {
	r.Differences++
	if len(r.Mismatches) < maxMismatches {
		r.Mismatches = append(r.Mismatches, fmt.Sprintf(format, args...))
	}
}

// Verify compares stb.cne_state's rows of the expected nodes, and the
// family's dead letters, with exp.
func Verify(ctx context.Context, db Querier, exp *Expected) (*Report, error) {
	rep := &Report{Rows: len(exp.Rows), Nodes: len(exp.Nodes), DeadLetters: exp.DeadLetters}
	rows, err := db.Query(ctx, `
		SELECT event_type, resource_address, data_type, hub, value_type, coalesce(value_text, ''), event_time_ns
		FROM stb.cne_state WHERE hub = ANY ($1)`, exp.Nodes)
	if err != nil {
		return nil, fmt.Errorf("read stb.cne_state: %w", err)
	}
	seen := make(map[string]bool, len(exp.Rows))
	for rows.Next() {
		var typ, addr, dataType string
		var got Row
		if err := rows.Scan(&typ, &addr, &dataType, &got.Node, &got.ValueType, &got.Text, &got.TimeNS); err != nil {
			rows.Close()
			return nil, err
		}
		k := Key(typ, addr, dataType)
		seen[k] = true
		want, ok := exp.Rows[k]
		switch {
		case !ok:
			rep.add("%s: not expected, holds %q", k, got.Text)
		case got.Node != want.Node || got.ValueType != want.ValueType || got.Text != want.Text || got.TimeNS != want.TimeNS:
			rep.add("%s: holds %q (%s) at %d ns, want %q (%s) at %d ns", k, got.Text, got.ValueType, got.TimeNS, want.Text, want.ValueType, want.TimeNS)
		}
	}
	rows.Close()
	if err := rows.Err(); err != nil {
		return nil, fmt.Errorf("read stb.cne_state: %w", err)
	}
	for _, k := range exp.sortedKeys() {
		if !seen[k] {
			rep.add("%s: missing, want %q", k, exp.Rows[k].Text)
		}
	}
	// The bad events' letters: the family names itself in their error.
	var letters int
	lrows, err := db.Query(ctx, `SELECT count(*) FROM stb.dead_letters WHERE topic = $1 AND error LIKE 'cne: %'`, exp.Topic)
	if err != nil {
		return nil, fmt.Errorf("read stb.dead_letters: %w", err)
	}
	for lrows.Next() {
		if err := lrows.Scan(&letters); err != nil {
			lrows.Close()
			return nil, err
		}
	}
	lrows.Close()
	if letters != exp.DeadLetters {
		rep.add("stb.dead_letters: %d letters of the cne family, want %d", letters, exp.DeadLetters)
	}
	return rep, nil
}
