package bench

import (
	"context"
	"fmt"
	"runtime/pprof"
	"sync"
	"sync/atomic"
	"time"

	"github.com/jackc/pgx/v5"
	"github.com/jackc/pgx/v5/pgxpool"

	"github.com/stbridge/stb/dbsyncers"
	"github.com/stbridge/stb/pkg/bundle"
)

// pgxWriter is the write ceiling: the handlers called directly, through
// Registry.Write (version fence included), from as many
// goroutines as the bridge has workers and over a pool of that size. No
// Kafka, no conflation, no dispatcher: only the set-based upserts.
type pgxWriter struct {
	pool    *pgxpool.Pool
	reg     *dbsyncers.Registry
	workers int
}

// pgxResult is what one ceiling write took.
type pgxResult struct {
	Elapsed      time.Duration
	Bundles      int64
	Transactions int64
}

// writeHubs writes the jobs of every hub, each hub in one transaction of
// one Registry.Write, as the bridge writes a batch (its writes stay in
// order; hubs write in parallel).
func (w *pgxWriter) writeHubs(ctx context.Context, hubs [][][]*bundle.Bundle) (pgxResult, error) {
	var (
		next, bundles atomic.Int64
		wg            sync.WaitGroup
		errOnce       sync.Once
		firstErr      error
	)
	start := time.Now()
	ctx = pprof.WithLabels(ctx, pprof.Labels("variant", "pgx ceiling"))
	for range w.workers {
		wg.Go(func() {
			pprof.SetGoroutineLabels(ctx)
			for {
				i := int(next.Add(1) - 1)
				if i >= len(hubs) || ctx.Err() != nil {
					return
				}
				err := func() error {
					applied, err := w.reg.Write(ctx, w.pool, hubs[i])
					if err != nil {
						return err
					}
					for j, job := range hubs[i] {
						if !applied[j] {
							return fmt.Errorf("%s bundle %s of hub %q was fenced: the ceiling database is not fresh",
								job[0].Type, job[len(job)-1].Version, job[0].Hub)
						}
						bundles.Add(int64(len(job)))
					}
					return nil
				}()
				if err != nil {
					errOnce.Do(func() { firstErr = err })
					return
				}
			}
		})
	}
	wg.Wait()
	res := pgxResult{Elapsed: time.Since(start), Bundles: bundles.Load(), Transactions: int64(len(hubs))}
	if firstErr != nil {
		return res, fmt.Errorf("pgx ceiling: %w", firstErr)
	}
	return res, ctx.Err()
}

// writeState writes a final state, every hub's jobs.
func (w *pgxWriter) writeState(ctx context.Context, st *finalState) (pgxResult, error) {
	hubs := make([][][]*bundle.Bundle, 0, len(st.order))
	for _, h := range st.order {
		hubs = append(hubs, st.jobs(h))
	}
	return w.writeHubs(ctx, hubs)
}

// countRows returns the rows of every table that holds hub state — STB's
// own (schema stb, its positions' owners, requests and dead letters
// excluded) and the global hub's (its positions in status.transport
// excluded), each partitioned table counted once: the rows a variant must
// have written.
func countRows(ctx context.Context, db interface {
	Query(ctx context.Context, sql string, args ...any) (pgx.Rows, error)
	QueryRow(ctx context.Context, sql string, args ...any) pgx.Row
}) (int64, error) {
	rows, err := db.Query(ctx, `
		SELECT c.oid::regclass::text FROM pg_class c JOIN pg_namespace n ON n.oid = c.relnamespace
		WHERE n.nspname IN ('stb', 'status', 'event', 'local_spec', 'local_status', 'security')
		  AND c.relkind IN ('r', 'p') AND NOT c.relispartition
		  AND c.oid::regclass::text NOT IN ('status.transport', 'stb.dead_letters', 'stb.partition_owners', 'stb.hub_requests')
		ORDER BY 1`)
	if err != nil {
		return 0, err
	}
	tables, err := pgx.CollectRows(rows, pgx.RowTo[string])
	if err != nil {
		return 0, err
	}
	var total int64
	for _, t := range tables {
		var n int64
		if err := db.QueryRow(ctx, "SELECT count(*) FROM "+t).Scan(&n); err != nil {
			return 0, fmt.Errorf("count %s: %w", t, err)
		}
		total += n
	}
	return total, nil
}
