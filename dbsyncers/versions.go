package dbsyncers

import (
	"context"
	"errors"
	"fmt"
	"strconv"

	"github.com/jackc/pgx/v5"
	"github.com/jackc/pgx/v5/pgconn"

	"github.com/stbridge/stb/pkg/bundle"
	"github.com/stbridge/stb/pkg/db"
	"github.com/stbridge/stb/pkg/deadletter"
)

// fenceSQL moves the (hub, type) row of stb.bundle_versions forward to
// the version and origin of the bundle being applied, and does nothing when
// the stored version is already newer, or the same for a type that does
// not take equal versions (bundle.TypeInfo.TakesEqual: $8). The bundle's
// family state ($9, bundle.Bundle.FamilyState, opaque) replaces the row's
// when it has one; without one the row keeps what it has. It returns the
// number of rows it wrote: 1 or 0.
//
// Comparing in the WHERE of ON CONFLICT, rather than reading the row first,
// makes the check and the move one atomic step: a concurrent writer of the
// same row (a replica that has not yet noticed it lost the partition)
// waits on the row lock and then compares against the new value.
//
// The hub is recorded in the same round trip, and made active again if it
// was inactive or deleted (an active hub's updated_at is moved at most
// every hubTouchEvery), but selected from the fence CTE so that a stale
// bundle writes nothing at all, not even the hub's updated_at: a deleted
// hub's tombstones keep it deleted against every bundle of its old
// incarnation. Versions are numeric(20,0) and are sent as decimal text,
// which carries every uint64 exactly, including those above MaxInt64.
const fenceSQL = fenceCTE + `SELECT count(*) FROM fence`

// fenceCTE is the fence's writing part, which fenceSQL and fenceOrFailSQL
// end differently.
const fenceCTE = `
WITH fence AS (
	INSERT INTO stb.bundle_versions AS v
		(hub, bundle_type, incarnation, generation, topic, "partition", "offset", applied_at, family_state)
	VALUES ($1, $2, $3::numeric, $4::numeric, $5, $6, $7, now(), $9::jsonb)
	ON CONFLICT (hub, bundle_type) DO UPDATE SET
		incarnation = excluded.incarnation,
		generation  = excluded.generation,
		topic       = excluded.topic,
		"partition" = excluded."partition",
		"offset"    = excluded."offset",
		applied_at  = excluded.applied_at,
		family_state = coalesce(excluded.family_state, v.family_state)
	WHERE (v.incarnation, v.generation) < (excluded.incarnation, excluded.generation)
	   OR ($8::boolean AND (v.incarnation, v.generation) = (excluded.incarnation, excluded.generation))
	RETURNING v.hub
), seen AS (
	INSERT INTO stb.hubs AS h (name)
	SELECT hub FROM fence
	ON CONFLICT (name) DO UPDATE SET
		updated_at  = now(),
		state       = '` + string(db.HubActive) + `',
		state_since = CASE WHEN h.state = '` + string(db.HubActive) + `' THEN h.state_since ELSE now() END
	WHERE h.state <> '` + string(db.HubActive) + `' OR h.updated_at < now() - interval '` + hubTouchEvery + `'
)
`

// hubTouchEvery is how stale an active hub's updated_at may get: writing
// the row with every bundle made a new row version per bundle, a third of
// PostgreSQL's work for a small one (issue 22, steady scenario); nothing
// reads updated_at closer than that (inactivity counts from heartbeats).
const hubTouchEvery = "30 seconds"

// fenceOrFailSQL is the fence of a pipelined batch, whose statements are
// sent before its answer is known: it fails, with division_by_zero
// (staleCode), when it refuses the bundle, so that PostgreSQL skips the
// rest of the batch and rolls back its transaction. It returns 1 when it
// moved.
const fenceOrFailSQL = fenceCTE + `SELECT 1 / count(*) FROM fence`

// staleCode is the SQLSTATE of fenceOrFailSQL refusing its bundle (the
// statement divides by nothing else).
const staleCode = "22012"

// Apply writes bundles, all of one hub and one type, through db, which
// should be the worker's transaction: the version fence and the handler's
// statements must commit or roll back together, or a crash between them
// would either lose the data for good or let an older bundle overwrite it.
//
// The fence takes the version and origin of the last bundle (for a delta
// group, the newest delta). When the stored version is the same or newer,
// Apply returns applied == false and has written nothing: the bundle is
// stale, typically replayed from Kafka after a restart. Otherwise it runs
// the type's handler and returns applied == true.
//
// Errors that retrying cannot cure are *PermanentError; database errors
// are returned wrapped, for the caller to classify by SQLSTATE.
func (r *Registry) Apply(ctx context.Context, db DB, bundles []*bundle.Bundle) (applied bool, err error) {
	s, last, err := r.check(bundles)
	if err != nil {
		return false, err
	}
	return fenceThen(ctx, db, last, s.TakesEqual, func() error { return s.write(ctx, db, bundles) })
}

// fenceThen moves the fence to last's version and, if it moved, writes.
func fenceThen(ctx context.Context, db DB, last *bundle.Bundle, equal bool, write func() error) (applied bool, err error) {
	var n int64
	if err := db.QueryRow(ctx, fenceSQL, fenceArgs(last, equal)...).Scan(&n); err != nil {
		return false, fmt.Errorf("%s bundle %s of hub %q: version fence: %w", last.Type, last.Version, last.Hub, err)
	}
	if n == 0 {
		return false, nil
	}
	if err := write(); err != nil {
		return false, fmt.Errorf("%s bundle %s of hub %q: %w", last.Type, last.Version, last.Hub, err)
	}
	return true, nil
}

func fenceArgs(last *bundle.Bundle, equal bool) []any {
	var state []byte // NULL: the row keeps its state
	if last.FamilyState != nil {
		state = last.FamilyState.EncodeState()
	}
	return []any{
		last.Hub, last.Type,
		strconv.FormatUint(last.Version.Incarnation, 10),
		strconv.FormatUint(last.Version.Generation, 10),
		last.Origin.Topic, last.Origin.Partition, last.Origin.Offset,
		equal, state,
	}
}

// ErrStale is returned by Write when a group sent in a pipelined batch
// turned out stale: its fence refused it, failing, and the batch's
// transaction was rolled back. Nothing of the batch was written: write the
// other groups without that one, or each on its own.
var ErrStale = errors.New("a bundle of the batch was stale: rolled back")

// pipelineBytes bounds the payload of the groups sent in one pipelined
// batch: pgx encodes a batch whole into its connection's buffer, which
// keeps its size, so a batch of 32 jobs of 40 KB would hold more than a
// megabyte per connection (a bridge run with --max-buffered-bytes 2MiB
// had its Go heap grow from 24.5 to 32.9 MiB). Small bundles, whose round
// trips cost the most, still share one batch by the dozen.
const pipelineBytes = 128 << 10

// Conn is what Write needs: a DB that can begin a transaction.
// *pgxpool.Pool, *pgx.Conn and pgx.Tx have these methods.
type Conn interface {
	DB
	Begin(ctx context.Context) (pgx.Tx, error)
}

// Write writes groups of bundles, each as Apply takes them (of different
// units), in order, in one transaction of their own on conn, and returns
// which were applied.
//
// When every group's syncer plans its write without a stage (small
// bundles), and the groups fit in pipelineBytes, the fences and statements
// go out as one batch outside any explicit transaction: PostgreSQL runs a
// pipeline up to its Sync as one implicit transaction, so the batch
// commits or rolls back whole, in one round trip, without BEGIN or COMMIT.
// Otherwise they are written in a transaction begun on conn: consecutive
// pipelined groups still as batches, each staged one on its own, fence
// first (applyPlanned).
func (r *Registry) Write(ctx context.Context, conn Conn, groups [][]*bundle.Bundle) (applied []bool, err error) {
	ws, err := r.plan(groups)
	if err != nil {
		return nil, err
	}
	if oneBatch(ws) {
		return applyPlanned(ctx, conn, ws)
	}
	err = pgx.BeginFunc(ctx, conn, func(tx pgx.Tx) error {
		applied, err = applyPlanned(ctx, tx, ws)
		return err
	})
	if err != nil {
		return nil, err
	}
	return applied, nil
}

// plannedGroup is a group ready to be written: its last bundle, which the
// fence takes, and its write: pipelined when it has no stage, else
// written on its own.
type plannedGroup struct {
	last      *bundle.Bundle
	size      int
	equal     bool // the type takes equal versions
	pipelined bool // write has no stage: its statements join a batch
	write     Write
}

// plan checks every group and plans its write.
func (r *Registry) plan(groups [][]*bundle.Bundle) ([]plannedGroup, error) {
	ws := make([]plannedGroup, len(groups))
	for i, g := range groups {
		s, last, err := r.check(g)
		if err != nil {
			return nil, err
		}
		p := plannedGroup{last: last, equal: s.TakesEqual}
		for _, b := range g {
			p.size += b.Size
		}
		w, err := s.Plan(g)
		if err != nil {
			return nil, fmt.Errorf("%s bundle %s of hub %q: %w", last.Type, last.Version, last.Hub, err)
		}
		p.write, p.pipelined = w, w.Stage == nil
		ws[i] = p
	}
	return ws, nil
}

// oneBatch reports whether the groups go out as one pipelined batch.
func oneBatch(ws []plannedGroup) bool {
	size := 0
	for i, p := range ws {
		if !p.pipelined {
			return false
		}
		if size += p.size; size >= pipelineBytes && i < len(ws)-1 {
			return false
		}
	}
	return true
}

// applyPlanned writes planned groups in order: consecutive pipelined ones
// as batches of up to pipelineBytes, the others alone, fence first.
func applyPlanned(ctx context.Context, db DB, ws []plannedGroup) ([]bool, error) {
	applied := make([]bool, len(ws))
	from, size := 0, 0 // the pipelined groups not sent yet: ws[from:i]
	flush := func(to int) error {
		if from == to {
			return nil
		}
		custom := false
		for _, p := range ws[from:to] {
			custom = custom || p.size > customPlansAbove
		}
		batch := newBatch(custom)
		for _, p := range ws[from:to] {
			batch.Queue(fenceOrFailSQL, fenceArgs(p.last, p.equal)...)
			for _, st := range p.write.Statements {
				batch.Queue(st.SQL, st.Args...)
			}
		}
		err := readPipelined(db.SendBatch(ctx, batch), custom, ws[from:to])
		for i := from; i < to; i++ {
			applied[i] = err == nil
		}
		from, size = to, 0
		return err
	}
	for i, p := range ws {
		if p.pipelined {
			if size += p.size; size >= pipelineBytes {
				if err := flush(i + 1); err != nil {
					return nil, err
				}
			}
			continue
		}
		if err := flush(i); err != nil {
			return nil, err
		}
		from = i + 1
		var err error
		if applied[i], err = fenceThen(ctx, db, p.last, p.equal, func() error { return p.write.Exec(ctx, db) }); err != nil {
			return nil, err
		}
	}
	if err := flush(len(ws)); err != nil {
		return nil, err
	}
	return applied, nil
}

// readPipelined reads the results of a batch of fences and statements. A
// fence that refused its bundle is ErrStale; any other error is returned
// with the group it belongs to. An error ends the batch: PostgreSQL skips
// the rest, whose results all fail with it.
func readPipelined(br pgx.BatchResults, custom bool, groups []plannedGroup) error {
	fail := func(err error) error {
		_ = br.Close()
		return err
	}
	if custom {
		if _, err := br.Exec(); err != nil {
			return fail(fmt.Errorf("set plan_cache_mode: %w", err))
		}
	}
	for _, g := range groups {
		last := g.last
		var one int64
		if err := br.QueryRow().Scan(&one); err != nil {
			var pgErr *pgconn.PgError
			if errors.As(err, &pgErr) && pgErr.Code == staleCode {
				return fail(ErrStale)
			}
			return fail(fmt.Errorf("%s bundle %s of hub %q: version fence: %w", last.Type, last.Version, last.Hub, err))
		}
		for _, st := range g.write.Statements {
			if err := st.result(br); err != nil {
				return fail(fmt.Errorf("%s bundle %s of hub %q: %w", last.Type, last.Version, last.Hub, err))
			}
		}
	}
	if err := br.Close(); err != nil {
		return fmt.Errorf("close batch: %w", err)
	}
	return nil
}

// check returns the syncer and the last bundle of a group Apply can write,
// with every bundle of it decoded.
func (r *Registry) check(bundles []*bundle.Bundle) (*Syncer, *bundle.Bundle, error) {
	if len(bundles) == 0 {
		return nil, nil, &PermanentError{Reason: deadletter.BadGroup, Err: fmt.Errorf("no bundles to apply")}
	}
	first := bundles[0]
	for i, b := range bundles {
		if b == nil {
			return nil, nil, &PermanentError{Reason: deadletter.BadGroup, Err: fmt.Errorf("bundle %d of %d is nil", i, len(bundles))}
		}
		if b.Hub != first.Hub || b.Type != first.Type {
			return nil, nil, &PermanentError{Reason: deadletter.BadGroup, Err: fmt.Errorf(
				"bundle %d is %s of hub %q, bundle 0 is %s of hub %q", i, b.Type, b.Hub, first.Type, first.Hub)}
		}
	}
	s, ok := r.Lookup(first.Type)
	if !ok {
		return nil, nil, &PermanentError{Reason: deadletter.UnknownType, Err: fmt.Errorf("%w %q (hub %q)", bundle.ErrUnknownType, first.Type, first.Hub)}
	}
	// Bundles come raw from the reader; the worker has decoded them
	// (DecodeBundle) unless Apply is called directly (a replay, a test).
	for _, b := range bundles {
		if err := r.DecodeBundle(b); err != nil {
			return nil, nil, fmt.Errorf("%s bundle %s of hub %q: %w", b.Type, b.Version, b.Hub, err)
		}
	}
	return s, bundles[len(bundles)-1], nil
}
