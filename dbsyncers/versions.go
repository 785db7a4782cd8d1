package dbsyncers

import (
	"context"
	"errors"
	"fmt"
	"strconv"

	"github.com/jackc/pgx/v5"

	"github.com/stbridge/stb/pkg/bundle"
	"github.com/stbridge/stb/pkg/deadletter"
)

// fenceSQL moves the (hub, type) row of status.bundle_versions forward to
// the version and origin of the bundle being applied, and does nothing when
// the stored version is already the same or newer. It returns the number
// of rows it wrote: 1 or 0.
//
// Comparing in the WHERE of ON CONFLICT, rather than reading the row first,
// makes the check and the move one atomic step: a concurrent writer of the
// same row (a replica that has not yet noticed it lost the partition)
// waits on the row lock and then compares against the new value.
//
// The hub is recorded in the same round trip, and made active again if it
// was inactive or deleted, but selected from the fence CTE so that a stale
// bundle writes nothing at all, not even the hub's updated_at: a deleted
// hub's tombstones keep it deleted against every bundle of its old
// incarnation. Versions are numeric(20,0) and are sent as decimal text,
// which carries every uint64 exactly, including those above MaxInt64.
const fenceSQL = `
WITH fence AS (
	INSERT INTO status.bundle_versions AS v
		(hub, bundle_type, incarnation, generation, topic, "partition", "offset", applied_at)
	VALUES ($1, $2, $3::numeric, $4::numeric, $5, $6, $7, now())
	ON CONFLICT (hub, bundle_type) DO UPDATE SET
		incarnation = excluded.incarnation,
		generation  = excluded.generation,
		topic       = excluded.topic,
		"partition" = excluded."partition",
		"offset"    = excluded."offset",
		applied_at  = excluded.applied_at
	WHERE (v.incarnation, v.generation) < (excluded.incarnation, excluded.generation)
	RETURNING v.hub
), seen AS (
	INSERT INTO status.hubs AS h (name)
	SELECT hub FROM fence
	ON CONFLICT (name) DO UPDATE SET
		updated_at  = now(),
		state       = 'active',
		state_since = CASE WHEN h.state = 'active' THEN h.state_since ELSE now() END
)
SELECT count(*) FROM fence`

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
	return fenceThen(ctx, db, last, func() error { return s.write(ctx, db, bundles) })
}

// fenceThen moves the fence to last's version and, if it moved, writes.
func fenceThen(ctx context.Context, db DB, last *bundle.Bundle, write func() error) (applied bool, err error) {
	var n int64
	if err := db.QueryRow(ctx, fenceSQL, fenceArgs(last)...).Scan(&n); err != nil {
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

func fenceArgs(last *bundle.Bundle) []any {
	return []any{
		last.Hub, last.Type,
		strconv.FormatUint(last.Version.Incarnation, 10),
		strconv.FormatUint(last.Version.Generation, 10),
		last.Origin.Topic, last.Origin.Partition, last.Origin.Offset,
	}
}

// ErrStale is returned by ApplyBatch when a group it sent with its
// statements turned out stale: the fence wrote nothing but the statements
// ran, so the transaction must be rolled back (and the other groups
// written without that one, or each on its own).
var ErrStale = errors.New("a bundle sent with its statements was stale: roll back")

// pipelineBytes bounds the payload of the groups sent in one pipelined
// batch: pgx encodes a batch whole into its connection's buffer, which
// keeps its size, so a batch of 32 jobs of 40 KB would hold more than a
// megabyte per connection (a bridge run with --max-buffered-bytes 2MiB
// had its Go heap grow from 24.5 to 32.9 MiB). Small bundles, whose round
// trips cost the most, still share one batch by the dozen.
const pipelineBytes = 128 << 10

// ApplyBatch writes groups of bundles, each as Apply takes them, in
// order, through db, which should be the worker's transaction, and returns
// which were applied.
//
// Consecutive groups whose syncer has a Plan without a stage go out as one
// pipelined batch (up to pipelineBytes of payload): each one's version
// fence followed by its statements, all in one round trip. The statements are sent before the fence's answer
// is known: a stale group (one the fence refuses, rare once conflation has
// dropped what the database already holds) has been written too, and
// ApplyBatch returns ErrStale after reading the batch's results; the
// caller rolls back. Any other group (a staged bundle, a syncer with only
// a Handle) is written on its own, as Apply does, after the batch before
// it.
func (r *Registry) ApplyBatch(ctx context.Context, db DB, groups [][]*bundle.Bundle) (applied []bool, err error) {
	applied = make([]bool, len(groups))
	var pending []pipelinedWrite
	pendingBytes := 0
	flush := func() error {
		if len(pending) == 0 {
			return nil
		}
		pendingBytes = 0
		batch := newBatch()
		for _, p := range pending {
			batch.Queue(fenceSQL, fenceArgs(p.last)...)
			for _, st := range p.stmts {
				batch.Queue(st.SQL, st.Args...)
			}
		}
		err := readPipelined(db.SendBatch(ctx, batch), pending)
		pending = pending[:0]
		return err
	}
	for i, g := range groups {
		s, last, err := r.check(g)
		if err != nil {
			return nil, err
		}
		write := func() error { return s.Handle(ctx, db, g) }
		if s.Plan != nil {
			w, err := s.Plan(g)
			if err != nil {
				return nil, fmt.Errorf("%s bundle %s of hub %q: %w", last.Type, last.Version, last.Hub, err)
			}
			if w.Stage == nil {
				pending = append(pending, pipelinedWrite{last, w.Statements})
				applied[i] = true
				for _, b := range g {
					pendingBytes += b.Size
				}
				if pendingBytes >= pipelineBytes {
					if err := flush(); err != nil {
						return nil, err
					}
				}
				continue
			}
			write = func() error { return w.Exec(ctx, db) }
		}
		if err := flush(); err != nil {
			return nil, err
		}
		if applied[i], err = fenceThen(ctx, db, last, write); err != nil {
			return nil, err
		}
	}
	if err := flush(); err != nil {
		return nil, err
	}
	return applied, nil
}

// pipelinedWrite is a group sent in ApplyBatch's batch: its last bundle,
// which the fence takes, and its statements.
type pipelinedWrite struct {
	last  *bundle.Bundle
	stmts []Statement
}

// readPipelined reads the results of a batch of fences and statements.
// The first error is returned (a fence's, a statement's), unless a group
// before it was stale: ErrStale then, since the rollback it needs may be
// what the error was about; an error ends the batch, whose later results
// all fail with it.
func readPipelined(br pgx.BatchResults, groups []pipelinedWrite) error {
	fail := func(err error) error {
		_ = br.Close()
		return err
	}
	if _, err := br.Exec(); err != nil {
		return fail(fmt.Errorf("set plan_cache_mode: %w", err))
	}
	stale := false
	for _, g := range groups {
		last := g.last
		var n int64
		if err := br.QueryRow().Scan(&n); err != nil {
			if stale {
				return fail(ErrStale)
			}
			return fail(fmt.Errorf("%s bundle %s of hub %q: version fence: %w", last.Type, last.Version, last.Hub, err))
		}
		stale = stale || n == 0
		for _, st := range g.stmts {
			if err := st.result(br); err != nil {
				if stale {
					return fail(ErrStale)
				}
				return fail(fmt.Errorf("%s bundle %s of hub %q: %w", last.Type, last.Version, last.Hub, err))
			}
		}
	}
	if err := br.Close(); err != nil {
		return fmt.Errorf("close batch: %w", err)
	}
	if stale {
		return ErrStale
	}
	return nil
}

// check returns the syncer and the last bundle of a group Apply can write.
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
	return s, bundles[len(bundles)-1], nil
}
