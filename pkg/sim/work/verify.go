package work

import (
	"context"
	"fmt"
	"sort"
	"strings"

	"github.com/jackc/pgx/v5"
)

// Querier runs a query; *pgxpool.Pool and pgx.Tx have it.
type Querier interface {
	Query(ctx context.Context, sql string, args ...any) (pgx.Rows, error)
}

// Report is what Verify found.
type Report struct {
	// Rows is the number of rows expected; Missing, Extra and Different
	// describe the rows that are not as expected (at most a few each).
	Rows                      int
	Missing, Extra, Different []string
	// Counts of each, all of them.
	MissingN, ExtraN, DifferentN int
}

// OK reports whether the database matched.
func (r *Report) OK() bool { return r.MissingN+r.ExtraN+r.DifferentN == 0 }

// Summary says what differed.
func (r *Report) Summary() string {
	var b strings.Builder
	fmt.Fprintf(&b, "%d rows expected: %d missing, %d unexpected, %d different\n", r.Rows, r.MissingN, r.ExtraN, r.DifferentN)
	for _, l := range [][]string{r.Missing, r.Extra, r.Different} {
		for _, s := range l {
			fmt.Fprintf(&b, "  %s\n", s)
		}
	}
	return b.String()
}

const keepExamples = 5

// Verify compares work.resource_status's rows of exp's clusters with
// exp's rows: the fence pair, the tombstone and the status hash.
func Verify(ctx context.Context, db Querier, exp *Expected) (*Report, error) {
	rows, err := db.Query(ctx, `
		SELECT source, resource_id, cluster, resource_version, sequence_id::text, deleted, coalesce(status_hash, '')
		FROM work.resource_status WHERE cluster = ANY($1)`, exp.Clusters)
	if err != nil {
		return nil, fmt.Errorf("verify work.resource_status: %w", err)
	}
	got, err := pgx.CollectRows(rows, func(r pgx.CollectableRow) (Row, error) {
		var x Row
		err := r.Scan(&x.Source, &x.ResourceID, &x.Cluster, &x.ResourceVersion, &x.SequenceID, &x.Deleted, &x.StatusHash)
		return x, err
	})
	if err != nil {
		return nil, fmt.Errorf("verify work.resource_status: %w", err)
	}
	key := func(r Row) string { return r.Source + "/" + r.ResourceID }
	stored := make(map[string]Row, len(got))
	for _, r := range got {
		stored[key(r)] = r
	}
	rep := &Report{Rows: len(exp.Rows)}
	add := func(list *[]string, n *int, s string) {
		*n++
		if len(*list) < keepExamples {
			*list = append(*list, s)
		}
	}
	for _, want := range exp.Rows {
		r, ok := stored[key(want)]
		delete(stored, key(want))
		switch {
		case !ok:
			add(&rep.Missing, &rep.MissingN, fmt.Sprintf("missing: %+v", want))
		case r != want:
			add(&rep.Different, &rep.DifferentN, fmt.Sprintf("different: %s holds %+v, want %+v", key(want), r, want))
		}
	}
	extra := make([]string, 0, len(stored))
	for k := range stored {
		extra = append(extra, k)
	}
	sort.Strings(extra)
	for _, k := range extra {
		add(&rep.Extra, &rep.ExtraN, fmt.Sprintf("unexpected: %+v", stored[k]))
	}
	return rep, nil
}
