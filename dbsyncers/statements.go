package dbsyncers

import (
	"context"
	"fmt"

	"github.com/jackc/pgx/v5"
)

// How the handlers send their set-based statements.
//
// Rows travel as arrays of their columns, unnested by the statement; above
// stageRowsAbove rows they are copied into a temporary table instead, and
// the statements read that. Either way the statements of one bundle are
// sent as one batch, so a bundle costs one round trip (three when staged:
// create, copy, batch) whatever its size.

// stageRowsAbove is the number of rows above which a handler copies them
// into a temporary table rather than sending them as arrays. Staging costs
// two more round trips and a temporary table's catalog entries, but the
// rows cross the wire once, not once per statement, and the server reads
// them from a table instead of materialising each unnest. Measured on the
// development machine for placements of 1,000 / 5,000 / 10,000 / 40,000
// pairs: 2.5 / 11 / 20 / 95 ms with arrays, 5.5 / 10 / 14 / 73 ms staged;
// at 135,000 pairs and 121,500 compliance rows staging is 1.1–1.5 times as
// fast (BenchmarkClustersPoliciesStatements, BenchmarkComplianceStatements).
// The threshold sits a little above the crossover so that the common,
// smaller bundles do not create a table each.
const stageRowsAbove = 10_000

// customPlansSQL makes the rest of the transaction plan each statement for
// the parameters it is given. pgx prepares statements once per connection
// and PostgreSQL switches a prepared statement to a generic plan after
// five executions; a generic plan cannot know how long an array parameter
// is and assumes about 100 elements, which for a 135,000-row bundle chose
// plans 60% slower (and could choose nested loops over the whole array).
// Being local to the transaction, it ends with the bundle's.
const customPlansSQL = `SELECT set_config('plan_cache_mode', 'force_custom_plan', true)`

// Statement is one statement of a bundle's write.
type Statement struct {
	// What names the statement in errors.
	What string
	SQL  string
	Args []any
	// Row, optional, reads the statement's one row (pgx.ErrNoRows when
	// it returned none); an error from it fails the write.
	Row func(pgx.Row) error
}

// Write is how a handler writes a group of bundles: Statements, sent as
// one batch after customPlansSQL, preceded by Stage when it is set (rows
// copied into a temporary table that the statements read). A write
// without a stage is sent by Registry.Write with the version
// fence, and with other groups' writes: one round trip for all of them.
type Write struct {
	Stage      func(ctx context.Context, db DB) error
	Statements []Statement
}

// Exec runs w through db: its stage, then its statements as one batch.
func (w Write) Exec(ctx context.Context, db DB) error {
	if w.Stage != nil {
		if err := w.Stage(ctx, db); err != nil {
			return err
		}
	}
	if len(w.Statements) == 0 {
		return nil
	}
	return execBatch(ctx, db, w.Statements...)
}

// customPlansAbove is the payload of a pipelined batch (versions.go)
// above which its statements are planned for their parameters too
// (customPlansSQL). Below it the bundles are small, their arrays short,
// and the generic plans PostgreSQL keeps per connection serve them well:
// planning every statement of every small bundle anew cost PostgreSQL
// more CPU than the writing did at a steady rate (BENCHMARKS.md, issue
// 22). Batches of larger bundles, and every staged write, keep custom
// plans.
const customPlansAbove = 32 << 10

// newBatch returns a batch that starts with customPlansSQL when custom
// is set.
func newBatch(custom bool) *pgx.Batch {
	b := &pgx.Batch{}
	if custom {
		b.Queue(customPlansSQL)
	}
	return b
}

// execBatch sends the statements as one batch, after customPlansSQL, and
// reads their results in order.
func execBatch(ctx context.Context, db DB, stmts ...Statement) error {
	batch := newBatch(true)
	for _, s := range stmts {
		batch.Queue(s.SQL, s.Args...)
	}
	br := db.SendBatch(ctx, batch)
	if _, err := br.Exec(); err != nil {
		_ = br.Close() // the Exec error is the one to report
		return fmt.Errorf("set plan_cache_mode: %w", err)
	}
	for _, s := range stmts {
		if err := s.result(br); err != nil {
			_ = br.Close()
			return err
		}
	}
	if err := br.Close(); err != nil {
		return fmt.Errorf("close batch: %w", err)
	}
	return nil
}

// result reads the statement's result from a batch.
func (s Statement) result(br pgx.BatchResults) error {
	if s.Row == nil {
		if _, err := br.Exec(); err != nil {
			return fmt.Errorf("%s: %w", s.What, err)
		}
		return nil
	}
	return s.Row(br.QueryRow())
}

// stage creates a temporary table with createSQL, which must drop any
// table of that name first and create it ON COMMIT DROP, and copies the
// columns into it.
func stage(ctx context.Context, db DB, createSQL, table string, names []string, cols ...[]string) error {
	if _, err := db.Exec(ctx, createSQL); err != nil {
		return fmt.Errorf("create %s: %w", table, err)
	}
	if _, err := db.CopyFrom(ctx, pgx.Identifier{"pg_temp", table}, names, newTextColumns(cols...)); err != nil {
		return fmt.Errorf("copy into %s: %w", table, err)
	}
	return nil
}

// textColumns feeds parallel text columns to CopyFrom, one row at a time,
// reusing one row buffer: pgx encodes each row before asking for the next.
type textColumns struct {
	cols [][]string
	i    int
	row  []any
}

func newTextColumns(cols ...[]string) *textColumns {
	return &textColumns{cols: cols, i: -1, row: make([]any, len(cols))}
}

func (c *textColumns) Next() bool {
	c.i++
	return c.i < len(c.cols[0])
}

func (c *textColumns) Values() ([]any, error) {
	for j, col := range c.cols {
		c.row[j] = col[c.i]
	}
	return c.row, nil
}

func (c *textColumns) Err() error { return nil }
