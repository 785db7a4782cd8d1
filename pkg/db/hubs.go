package db

import (
	"context"
	"errors"
	"fmt"
	"maps"
	"math"
	"slices"
	"strconv"
	"strings"
	"time"

	"github.com/jackc/pgx/v5"
)

// HubState is where a hub is in its lifecycle (README "Hub lifecycle"),
// as stb.hubs.state stores it; the column's CHECK constraint and
// default say the same (TestSchemaValuesMatchGo).
type HubState string

// The states of a hub.
const (
	// HubActive: the hub sends; any bundle written makes it active again.
	HubActive HubState = "active"
	// HubInactive: no heartbeat of the hub was received for
	// --hub-inactive-after.
	HubInactive HubState = "inactive"
	// HubDeleted: the hub was deleted; its versions are tombstones (but
	// those of key-fenced types, which are gone).
	HubDeleted HubState = "deleted"
)

// AllHubStates lists every state, in the order stb_hubs reports them.
var AllHubStates = []HubState{HubActive, HubInactive, HubDeleted}

// Active reports whether s is HubActive, for templates.
func (s HubState) Active() bool { return s == HubActive }

// Deleted reports whether s is HubDeleted, for templates.
func (s HubState) Deleted() bool { return s == HubDeleted }

// HubAction is what a hub request does, as stb.hub_requests.action
// stores it.
type HubAction string

// The hub requests (README "Hub lifecycle").
const (
	// DeleteHub removes every row of the hub and leaves tombstones in
	// stb.bundle_versions, so that bundles of its incarnation still in
	// Kafka cannot bring it back; a newer incarnation can. The versions of
	// key-fenced types (HubScope.KeyFenced) are removed instead: the hub's
	// next bundle of theirs brings it back.
	DeleteHub HubAction = "delete"
	// ResetHub removes every row of the hub and its versions, so that its
	// next bundles apply whatever their version: for a hub rebuilt from
	// scratch whose incarnation went backwards. The declared tables
	// (HubScope.Tables) it treats as a delete does, but for those declared
	// for deletes only (HubTable.Actions): the global hub's heartbeat row,
	// which a reset leaves as it is.
	ResetHub HubAction = "reset"
)

// AllHubActions lists every action.
var AllHubActions = []HubAction{DeleteHub, ResetHub}

// HubRequestChannel is the NOTIFY channel a committed request is announced
// on, with its id as payload. Bridges LISTEN on it and also poll
// stb.hub_requests, the durable record.
const HubRequestChannel = "stb_hub_requests"

// HubRequest asks for a hub's delete or reset.
type HubRequest struct {
	Hub    string
	Action HubAction
	// RequestedBy says who asked, for the record: "stb hub delete",
	// "--hub-delete-after".
	RequestedBy string
	// InactiveFor, when positive, applies the request only to a hub that
	// has been inactive at least that long when its rows are locked.
	InactiveFor time.Duration
	// Scope is what the status families declare (profiles.HubScope): the
	// types a delete must not tombstone and the tables it must empty of
	// the hub's rows besides those it finds.
	Scope HubScope
}

// HubScope is what a hub request needs to know of the profiles whose
// bundles' versions or tables do not follow STB's pattern: the status
// families', and the global hub's own tables the global-hub profile writes.
type HubScope struct {
	// KeyFenced are the bundle types whose bundles carry no hub-level
	// version, only a constant one that takes equal versions: each of
	// their rows keeps its own fence. A delete removes their
	// stb.bundle_versions rows instead of turning them into tombstones
	// at the constant version, which would refuse every later bundle of
	// the hub, of any incarnation, for good.
	KeyFenced []string
	// Tables hold rows of a hub that the request removes (or
	// soft-deletes, or marks) besides those of the tables it finds by
	// their hub column (hubTablesSQL, schema stb only), in this order,
	// after those.
	Tables []HubTable
}

// HubTable is a table holding rows of a hub, its column naming the hub,
// and what a request does to the hub's rows: it deletes them, unless
// DeletedAt or Set say otherwise. It is a family's table outside schema
// stb or whose hub is a cluster, or one of the global hub's own tables,
// whose hub column is leaf_hub_name or hub_name: those are upstream's, so
// they are declared, one by one, never found by a column's name.
type HubTable struct {
	// Table is the table's name, schema-qualified:
	// "work.resource_status".
	Table string
	// Column names the hub: "cluster", "leaf_hub_name".
	Column string
	// DeletedAt, when set, names the table's soft-delete column
	// ("deleted_at", a timestamp without time zone in UTC, as upstream's
	// tables have it): the request sets it to the current time in UTC on
	// the hub's live rows (where it is NULL) instead of deleting them, as
	// upstream's hub management does. Readers take a row with deleted_at
	// set for absent; the hub's next upsert of it revives it.
	DeletedAt string
	// Set, when not empty, makes the request update the hub's rows
	// instead, each column named to its value (text, taken as the
	// column's type), and count none of them as removed: upstream's hub
	// management marks the hub's heartbeat row inactive so.
	Set map[string]string
	// Actions are the requests that touch the table; empty for every one.
	Actions []HubAction
}

// touches reports whether a request of action touches the table.
func (t HubTable) touches(action HubAction) bool {
	return len(t.Actions) == 0 || slices.Contains(t.Actions, action)
}

// HubResult is what a request did.
type HubResult struct {
	// ID is the request's id in stb.hub_requests; 0 when Skipped.
	ID int64
	// Removed counts the hub's data rows deleted (also those of
	// HubScope.Tables) or soft-deleted; SoftDeleted counts the latter
	// (HubTable.DeletedAt), which stay in their tables with deleted_at
	// set. Versions counts its stb.bundle_versions rows replaced
	// by tombstones or removed: one per type the hub had written, none
	// for the types it never sent. A delete counts in Versions only the
	// tombstones, and the rows of HubScope.KeyFenced types it removed in
	// KeyFenced; a reset removes every row and counts them all in
	// Versions.
	Removed, SoftDeleted, Versions, KeyFenced int64
	// Tombstone is the incarnation a delete's tombstones fence: bundles
	// of it and older are stale. 0, with Versions 0, for a hub that had
	// no stored versions: there is nothing to fence.
	Tombstone uint64
	// AlreadyDeleted: the hub was deleted before (and has not sent a newer
	// incarnation since).
	AlreadyDeleted bool
	// Skipped: InactiveFor was set and the hub was not inactive that long.
	Skipped bool
}

// Describe says what a request of action did to hub, as the command line
// and the console print it.
func (r HubResult) Describe(hub string, action HubAction) string {
	removed := fmt.Sprintf("%d rows removed", r.Removed)
	if r.SoftDeleted > 0 {
		removed += fmt.Sprintf(" (%d of them soft-deleted in the global hub's tables)", r.SoftDeleted)
	}
	switch {
	case r.Skipped:
		return fmt.Sprintf("hub %q: not %s, it was not inactive long enough", hub, action)
	case action == ResetHub:
		return fmt.Sprintf("hub %q reset: %s, %d stored versions forgotten; its next bundles apply whatever their version (request %d)",
			hub, removed, r.Versions, r.ID)
	}
	already := ""
	if r.AlreadyDeleted {
		already = " (it was already deleted)"
	}
	if r.KeyFenced > 0 {
		removed += fmt.Sprintf(", %d versions of types fenced per row forgotten", r.KeyFenced)
	}
	switch {
	case r.Versions == 0 && r.KeyFenced > 0:
		return fmt.Sprintf("hub %q deleted%s: %s; no tombstone, so its next bundle brings it back (request %d)",
			hub, already, removed, r.ID)
	case r.Versions == 0:
		return fmt.Sprintf("hub %q deleted%s: %s; it had no stored versions, so there is no tombstone and its next bundle brings it back (request %d)",
			hub, already, removed, r.ID)
	}
	return fmt.Sprintf("hub %q deleted%s: %s, %d versions now tombstones at incarnation %d; bundles of incarnation %d and older are ignored, a newer incarnation brings the hub back (request %d)",
		hub, already, removed, r.Versions, r.Tombstone, r.Tombstone, r.ID)
}

// TombstoneGeneration is the generation of a tombstone: the largest, so
// that no bundle of the tombstone's incarnation is newer.
const TombstoneGeneration = math.MaxUint64

// hubTablesSQL lists every table of schema stb holding rows of a hub,
// found by their hub column, so that a table a later migration adds is
// covered without being named here. Dead letters stay (they are the record
// of what went wrong; stb deadletters purge removes them); versions and
// requests are handled on their own. Only schema stb: the tables of the
// other schemas are the families' and the global hub's, which
// HubScope.Tables declares, with what to do to them.
const hubTablesSQL = `
SELECT c.oid::regclass::text
FROM pg_attribute a
JOIN pg_class c ON c.oid = a.attrelid
JOIN pg_namespace n ON n.oid = c.relnamespace
WHERE a.attname = 'hub' AND NOT a.attisdropped
  AND c.relkind IN ('r', 'p') AND NOT c.relispartition
  AND n.nspname = 'stb'
  AND c.relname NOT IN ('bundle_versions', 'dead_letters', 'hub_requests')
ORDER BY 1`

// ApplyHubRequest deletes or resets a hub in one transaction and records
// the request, announcing it to the running bridges when it commits. It
// is idempotent: a second delete finds nothing to remove and keeps the
// tombstones.
//
// Bridges may be writing the hub meanwhile. The transaction takes the
// hub's version rows first, in type order, as every bridge's version
// fence takes the row of the type it writes before anything else of the
// hub, then the hub's row of stb.hubs, which the fence takes next: a
// write in progress, also of a type new to the hub, finishes before the
// rows are tombstoned and removed, and one that comes after finds the
// tombstone of its type and writes nothing. A delete leaves tombstones
// only for the types the hub had written (its rows of
// stb.bundle_versions), never for types it never sent, which would
// outlive its return as versions it never had; so a bundle of the old
// incarnation of a type the hub had never written, being written at that
// very moment, can land after the delete (a bridge's memory fences the
// other types too once it applies the request: hubs.Lifecycle). A reset
// has no tombstone: a bundle of the old incarnation written at that
// moment can land after it (README "Hub lifecycle").
//
// The types of req.Scope.KeyFenced get no tombstone either: their version
// rows are removed, and the hub's rows of req.Scope.Tables with them, so
// the hub's next bundle of such a type is written, and the hub is back.
// So is a late copy of an old one: each row's fence went with the row.
//
// The global hub's own tables (declared in req.Scope.Tables by the
// global-hub profile) get what upstream's hub management does to a hub it
// cleans up (stolostron/multicluster-global-hub
// manager/pkg/processes/hubmanagement/hub_management.go, cleanup): its
// managed clusters, hub info and local policies soft-deleted, its
// compliance deleted, its heartbeat row marked inactive; its events and
// compliance history stay. Its alert counts, which upstream's cleanup
// leaves, are deleted. A reset does the same but for the heartbeat
// (internal/profiles, globalHubTables, says why).
func ApplyHubRequest(ctx context.Context, pool interface {
	Begin(context.Context) (pgx.Tx, error)
}, req HubRequest) (HubResult, error) {
	var res HubResult
	switch req.Action {
	case DeleteHub, ResetHub:
	default:
		return res, fmt.Errorf("db: unknown hub action %q", req.Action)
	}
	if req.Hub == "" {
		return res, errors.New("db: hub request without a hub")
	}
	err := pgx.BeginFunc(ctx, pool, func(tx pgx.Tx) error {
		res = HubResult{}
		if err := lockVersions(ctx, tx, req, &res); err != nil {
			return err
		}
		state, skip, err := markHub(ctx, tx, req)
		if err != nil {
			return err
		}
		switch {
		case skip:
			res = HubResult{Skipped: true}
			return errSkip
		case state == HubDeleted && req.Action == DeleteHub:
			res.AlreadyDeleted = true
		}
		if req.Action == DeleteHub {
			if err := leaveTombstones(ctx, tx, req.Hub, req.Scope.KeyFenced, &res); err != nil {
				return err
			}
		}
		if res.Removed, res.SoftDeleted, err = deleteHubRows(ctx, tx, req.Hub, req.Action, req.Scope.Tables); err != nil {
			return err
		}
		var tomb any
		if req.Action == DeleteHub {
			tomb = strconv.FormatUint(res.Tombstone, 10)
		}
		if err := tx.QueryRow(ctx, `
			INSERT INTO stb.hub_requests (hub, action, requested_by, removed, tombstone)
			VALUES ($1, $2, $3, $4, $5::numeric) RETURNING id`,
			req.Hub, string(req.Action), req.RequestedBy, res.Removed, tomb).Scan(&res.ID); err != nil {
			return fmt.Errorf("record the request: %w", err)
		}
		if _, err := tx.Exec(ctx, `SELECT pg_notify($1, $2)`, HubRequestChannel, strconv.FormatInt(res.ID, 10)); err != nil {
			return fmt.Errorf("announce the request: %w", err)
		}
		return nil
	})
	if errors.Is(err, errSkip) {
		return res, nil
	}
	if err != nil {
		return HubResult{}, fmt.Errorf("db: %s hub %q: %w", req.Action, req.Hub, err)
	}
	return res, nil
}

var errSkip = errors.New("skip")

// lockVersions takes the hub's version rows, in type order: a reset
// removes them; a delete holds them until leaveTombstones.
func lockVersions(ctx context.Context, tx pgx.Tx, req HubRequest, res *HubResult) error {
	if req.Action == ResetHub {
		tag, err := tx.Exec(ctx, `
			DELETE FROM stb.bundle_versions WHERE (hub, bundle_type) IN (
				SELECT hub, bundle_type FROM stb.bundle_versions
				WHERE hub = $1 ORDER BY bundle_type FOR UPDATE)`, req.Hub)
		if err != nil {
			return fmt.Errorf("remove versions: %w", err)
		}
		res.Versions = tag.RowsAffected()
		return nil
	}
	if _, err := tx.Exec(ctx, `
		SELECT FROM stb.bundle_versions WHERE hub = $1 ORDER BY bundle_type FOR UPDATE`, req.Hub); err != nil {
		return fmt.Errorf("lock versions: %w", err)
	}
	return nil
}

// leaveTombstonesSQL turns every version row of the hub but those of the
// key-fenced types ($3) into a tombstone at the newest incarnation among
// them and the largest generation, and returns that incarnation once per
// row. It runs once the hub's row of stb.hubs is locked, so that the
// rows of writes that were in progress are there (committed) too. A row
// locked by a writer that started after that lock is skipped: that writer
// waits for the hub's row, which this transaction holds, and waiting for
// its row in turn would deadlock.
const leaveTombstonesSQL = `
WITH v AS (
	SELECT bundle_type, incarnation FROM stb.bundle_versions
	WHERE hub = $1 AND bundle_type <> ALL ($3::text[])
	ORDER BY bundle_type FOR UPDATE SKIP LOCKED
), m AS (
	SELECT max(incarnation) AS inc FROM v
)
UPDATE stb.bundle_versions AS b SET
	incarnation = m.inc, generation = $2::numeric,
	topic = '', "partition" = -1, "offset" = -1, applied_at = now()
FROM v, m
WHERE b.hub = $1 AND b.bundle_type = v.bundle_type
RETURNING m.inc::text`

// dropKeyFencedSQL removes the hub's version rows of the key-fenced types
// ($2), skipping those locked as leaveTombstonesSQL does: a write that
// started after the hub was locked lands after the delete, as the hub's
// next bundle would.
const dropKeyFencedSQL = `
DELETE FROM stb.bundle_versions AS b
USING (
	SELECT bundle_type FROM stb.bundle_versions
	WHERE hub = $1 AND bundle_type = ANY ($2::text[])
	ORDER BY bundle_type FOR UPDATE SKIP LOCKED
) AS v
WHERE b.hub = $1 AND b.bundle_type = v.bundle_type`

// leaveTombstones turns the hub's version rows, one per type it had
// written, into tombstones, but removes those of the keyFenced types: a
// tombstone of theirs would be at their constant version, newer than
// every later bundle of the hub.
func leaveTombstones(ctx context.Context, tx pgx.Tx, hub string, keyFenced []string, res *HubResult) error {
	if keyFenced == nil {
		keyFenced = []string{} // <> ALL (NULL) is never true
	}
	tag, err := tx.Exec(ctx, dropKeyFencedSQL, hub, keyFenced)
	if err != nil {
		return fmt.Errorf("remove versions of key-fenced types: %w", err)
	}
	res.KeyFenced = tag.RowsAffected()
	rows, err := tx.Query(ctx, leaveTombstonesSQL, hub, strconv.FormatUint(TombstoneGeneration, 10), keyFenced)
	if err != nil {
		return fmt.Errorf("leave tombstones: %w", err)
	}
	incs, err := pgx.CollectRows(rows, pgx.RowTo[string])
	if err != nil {
		return fmt.Errorf("leave tombstones: %w", err)
	}
	res.Versions = int64(len(incs))
	if len(incs) > 0 {
		if res.Tombstone, err = strconv.ParseUint(incs[0], 10, 64); err != nil {
			return fmt.Errorf("incarnation %q: %w", incs[0], err)
		}
	}
	return nil
}

// markHub sets the hub's state for the request and returns the state it
// had ("" for a hub without a row), or skip when InactiveFor rules it out.
func markHub(ctx context.Context, tx pgx.Tx, req HubRequest) (prev HubState, skip bool, err error) {
	err = tx.QueryRow(ctx, `SELECT state FROM stb.hubs WHERE name = $1 FOR UPDATE`, req.Hub).Scan(&prev)
	if err != nil && !errors.Is(err, pgx.ErrNoRows) {
		return "", false, fmt.Errorf("lock hub: %w", err)
	}
	if req.InactiveFor > 0 {
		var ok bool
		if err := tx.QueryRow(ctx, `
			SELECT EXISTS (SELECT 1 FROM stb.hubs WHERE name = $1 AND state = $3
				AND state_since <= now() - make_interval(secs => $2))`,
			req.Hub, req.InactiveFor.Seconds(), string(HubInactive)).Scan(&ok); err != nil {
			return "", false, fmt.Errorf("check inactive: %w", err)
		}
		if !ok {
			return "", true, nil
		}
	}
	if req.Action == ResetHub {
		return prev, false, nil
	}
	if _, err := tx.Exec(ctx, `
		INSERT INTO stb.hubs AS h (name, state, state_since) VALUES ($1, $2, now())
		ON CONFLICT (name) DO UPDATE SET
			state = excluded.state, updated_at = now(),
			state_since = CASE WHEN h.state = excluded.state THEN h.state_since ELSE now() END`, req.Hub, string(HubDeleted)); err != nil {
		return "", false, fmt.Errorf("mark deleted: %w", err)
	}
	return prev, false, nil
}

// deleteHubRows removes the hub's rows from every table that has them:
// those found by their hub column, and the declared ones (families, the
// global hub's), as each declares: deleted, soft-deleted or updated. It
// returns the rows deleted or soft-deleted, and the latter.
func deleteHubRows(ctx context.Context, tx pgx.Tx, hub string, action HubAction, declared []HubTable) (removed, soft int64, err error) {
	rows, err := tx.Query(ctx, hubTablesSQL)
	if err != nil {
		return 0, 0, fmt.Errorf("list tables: %w", err)
	}
	found, err := pgx.CollectRows(rows, pgx.RowTo[string])
	if err != nil {
		return 0, 0, fmt.Errorf("list tables: %w", err)
	}
	tables := make([]HubTable, 0, len(found)+len(declared))
	for _, t := range found {
		tables = append(tables, HubTable{Table: t, Column: "hub"})
	}
	for _, t := range declared {
		if t.DeletedAt != "" && len(t.Set) > 0 {
			return 0, 0, fmt.Errorf("table %q: both a soft delete and an update declared", t.Table)
		}
		// The name as regclass::text spells it, quoted as needed; a
		// table that does not exist is an error, not a table skipped,
		// whichever the action.
		var name string
		if err := tx.QueryRow(ctx, `SELECT $1::regclass::text`, t.Table).Scan(&name); err != nil {
			return 0, 0, fmt.Errorf("declared table %q: %w", t.Table, err)
		}
		if t.touches(action) {
			t.Table = name
			tables = append(tables, t)
		}
	}
	for _, t := range tables {
		sql, args := hubRowsSQL(t, hub)
		tag, err := tx.Exec(ctx, sql, args...)
		if err != nil {
			return 0, 0, fmt.Errorf("hub rows of %s: %w", t.Table, err)
		}
		switch {
		case len(t.Set) > 0:
		case t.DeletedAt != "":
			removed += tag.RowsAffected()
			soft += tag.RowsAffected()
		default:
			removed += tag.RowsAffected()
		}
	}
	return removed, soft, nil
}

// hubRowsSQL returns the statement that does to the hub's rows of t what
// t declares, and its arguments; t.Table is quoted as needed.
func hubRowsSQL(t HubTable, hub string) (string, []any) {
	col := pgx.Identifier{t.Column}.Sanitize()
	switch {
	case len(t.Set) > 0:
		args := []any{hub}
		var set []string
		for _, c := range slices.Sorted(maps.Keys(t.Set)) {
			args = append(args, t.Set[c])
			set = append(set, fmt.Sprintf("%s = $%d", pgx.Identifier{c}.Sanitize(), len(args)))
		}
		return "UPDATE " + t.Table + " SET " + strings.Join(set, ", ") + " WHERE " + col + " = $1", args
	case t.DeletedAt != "":
		del := pgx.Identifier{t.DeletedAt}.Sanitize()
		return "UPDATE " + t.Table + " SET " + del + " = now() AT TIME ZONE 'UTC' WHERE " + col + " = $1 AND " + del + " IS NULL", []any{hub}
	}
	return "DELETE FROM " + t.Table + " WHERE " + col + " = $1", []any{hub}
}

// HubRequestRecord is a request as stb.hub_requests holds it.
type HubRequestRecord struct {
	ID     int64
	Hub    string
	Action HubAction
}

// LastHubRequest returns the id of the newest request, 0 when none: a
// bridge reads it before it loads the versions, and then applies the
// requests after it.
func LastHubRequest(ctx context.Context, q interface {
	QueryRow(context.Context, string, ...any) pgx.Row
}) (int64, error) {
	var id int64
	if err := q.QueryRow(ctx, `SELECT coalesce(max(id), 0) FROM stb.hub_requests`).Scan(&id); err != nil {
		return 0, fmt.Errorf("db: last hub request: %w", err)
	}
	return id, nil
}

// HubRequestsAfter returns the requests with an id above after, oldest
// first.
func HubRequestsAfter(ctx context.Context, q Querier, after int64) ([]HubRequestRecord, error) {
	rows, err := q.Query(ctx, `SELECT id, hub, action FROM stb.hub_requests WHERE id > $1 ORDER BY id`, after)
	if err != nil {
		return nil, fmt.Errorf("db: hub requests: %w", err)
	}
	out, err := pgx.CollectRows(rows, func(row pgx.CollectableRow) (HubRequestRecord, error) {
		var r HubRequestRecord
		err := row.Scan(&r.ID, &r.Hub, &r.Action)
		return r, err
	})
	if err != nil {
		return nil, fmt.Errorf("db: hub requests: %w", err)
	}
	return out, nil
}

// LoadHubVersions returns the stored versions of one hub (its tombstones,
// after a delete).
func LoadHubVersions(ctx context.Context, q Querier, hub string) ([]StoredVersion, error) {
	return loadVersions(ctx, q, `
		SELECT `+versionColumns+`
		FROM stb.bundle_versions WHERE hub = $1
		ORDER BY bundle_type`, hub)
}

// MarkInactiveHubs marks inactive every active hub with no heartbeat
// received for after (counting from when it became active, for a hub that
// never sent one) and returns how many it marked. A heartbeat is STB's own
// (stb.hub_heartbeats, received_at) or the global-hub agent's, which only
// the global hub's status.leaf_hub_heartbeats records (last_timestamp, in
// UTC): the newer of the two counts.
func MarkInactiveHubs(ctx context.Context, e Execer, after time.Duration) (int64, error) {
	tag, err := e.Exec(ctx, `
		UPDATE stb.hubs h SET state = $2, state_since = now()
		WHERE h.state = $3
		  AND coalesce(greatest(
		          (SELECT hb.received_at FROM stb.hub_heartbeats hb WHERE hb.hub = h.name),
		          (SELECT lh.last_timestamp AT TIME ZONE 'UTC' FROM status.leaf_hub_heartbeats lh WHERE lh.leaf_hub_name = h.name)),
		       h.state_since) < now() - make_interval(secs => $1)`, after.Seconds(), string(HubInactive), string(HubActive))
	if err != nil {
		return 0, fmt.Errorf("db: mark inactive hubs: %w", err)
	}
	return tag.RowsAffected(), nil
}

// HubsInactiveFor returns the hubs inactive for at least d, oldest first.
func HubsInactiveFor(ctx context.Context, q Querier, d time.Duration) ([]string, error) {
	rows, err := q.Query(ctx, `
		SELECT name FROM stb.hubs
		WHERE state = $2 AND state_since <= now() - make_interval(secs => $1)
		ORDER BY state_since`, d.Seconds(), string(HubInactive))
	if err != nil {
		return nil, fmt.Errorf("db: inactive hubs: %w", err)
	}
	out, err := pgx.CollectRows(rows, pgx.RowTo[string])
	if err != nil {
		return nil, fmt.Errorf("db: inactive hubs: %w", err)
	}
	return out, nil
}

// HubStates counts the hubs in each state.
type HubStates struct {
	Active, Inactive, Deleted int64
}

// CountHubStates counts stb.hubs by state.
func CountHubStates(ctx context.Context, q Querier) (HubStates, error) {
	var s HubStates
	rows, err := q.Query(ctx, `SELECT state, count(*) FROM stb.hubs GROUP BY state`)
	if err != nil {
		return s, fmt.Errorf("db: count hubs: %w", err)
	}
	defer rows.Close()
	for rows.Next() {
		var (
			state HubState
			n     int64
		)
		if err := rows.Scan(&state, &n); err != nil {
			return s, fmt.Errorf("db: count hubs: %w", err)
		}
		switch state {
		case HubActive:
			s.Active = n
		case HubInactive:
			s.Inactive = n
		case HubDeleted:
			s.Deleted = n
		}
	}
	if err := rows.Err(); err != nil {
		return s, fmt.Errorf("db: count hubs: %w", err)
	}
	return s, nil
}

// HubStatus is a hub's row of stb.hubs.
type HubStatus struct {
	State HubState
	Since time.Time
}

// LoadHubStatus returns the hub's state; ok is false for a hub without a row.
func LoadHubStatus(ctx context.Context, q interface {
	QueryRow(context.Context, string, ...any) pgx.Row
}, hub string) (st HubStatus, ok bool, err error) {
	err = q.QueryRow(ctx, `SELECT state, state_since FROM stb.hubs WHERE name = $1`, hub).Scan(&st.State, &st.Since)
	if errors.Is(err, pgx.ErrNoRows) {
		return st, false, nil
	}
	if err != nil {
		return st, false, fmt.Errorf("db: hub %q: %w", hub, err)
	}
	return st, true, nil
}

// SearchHubs returns the names in stb.hubs that contain part, sorted,
// at most limit of them.
func SearchHubs(ctx context.Context, q Querier, part string, limit int) ([]string, error) {
	rows, err := q.Query(ctx, `SELECT name FROM stb.hubs WHERE strpos(name, $1) > 0 ORDER BY name LIMIT $2`, part, limit)
	if err != nil {
		return nil, fmt.Errorf("db: search hubs: %w", err)
	}
	names, err := pgx.CollectRows(rows, pgx.RowTo[string])
	if err != nil {
		return nil, fmt.Errorf("db: search hubs: %w", err)
	}
	return names, nil
}

// HubWrite is what stb.bundle_versions says of one type of a hub: the
// version written, how long ago, and from where (Offset -1 for a
// tombstone).
type HubWrite struct {
	Type, Version, Topic string
	Partition            int32
	Offset               int64
	AgeSec               float64
}

// LoadHubWrites returns the hub's rows of stb.bundle_versions, by type:
// how fresh each type of the hub is in the database, whichever replica
// wrote it.
func LoadHubWrites(ctx context.Context, q Querier, hub string) ([]HubWrite, error) {
	rows, err := q.Query(ctx, `
		SELECT bundle_type, incarnation::text || '.' || generation::text, topic, "partition", "offset",
		       extract(epoch FROM now() - applied_at)::float8
		FROM stb.bundle_versions WHERE hub = $1 ORDER BY bundle_type`, hub)
	if err != nil {
		return nil, fmt.Errorf("db: versions of hub %q: %w", hub, err)
	}
	out, err := pgx.CollectRows(rows, func(row pgx.CollectableRow) (HubWrite, error) {
		var w HubWrite
		err := row.Scan(&w.Type, &w.Version, &w.Topic, &w.Partition, &w.Offset, &w.AgeSec)
		return w, err
	})
	if err != nil {
		return nil, fmt.Errorf("db: versions of hub %q: %w", hub, err)
	}
	return out, nil
}
