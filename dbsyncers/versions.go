package dbsyncers

import (
	"context"
	"fmt"
	"strconv"

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
	var n int64
	err = db.QueryRow(ctx, fenceSQL,
		last.Hub, last.Type,
		strconv.FormatUint(last.Version.Incarnation, 10),
		strconv.FormatUint(last.Version.Generation, 10),
		last.Origin.Topic, last.Origin.Partition, last.Origin.Offset,
	).Scan(&n)
	if err != nil {
		return false, fmt.Errorf("%s bundle %s of hub %q: version fence: %w", last.Type, last.Version, last.Hub, err)
	}
	if n == 0 {
		return false, nil
	}
	if err := s.Handle(ctx, db, bundles); err != nil {
		return false, fmt.Errorf("%s bundle %s of hub %q: %w", last.Type, last.Version, last.Hub, err)
	}
	return true, nil
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
