package dbsyncers

import (
	"context"
	"slices"
	"strconv"
	"strings"
	"testing"
	"time"

	"github.com/jackc/pgx/v5"
	"github.com/jackc/pgx/v5/pgxpool"

	"github.com/stbridge/stb/pkg/bundle"
	"github.com/stbridge/stb/pkg/db"
	"github.com/stbridge/stb/pkg/db/dbtest"
)

// writeHub applies a full set of bundles of hub at incarnation inc: its
// clusters, placements, compliance, a heartbeat and policy events.
func writeHub(t *testing.T, pool *pgxpool.Pool, hub string, inc uint64) {
	t.Helper()
	v := func(g uint64) bundle.Version { return bundle.Version{Incarnation: inc, Generation: g} }
	mc := newBundle(hub, "managedclusters", v(1), mustDecode(t, "managedclusters", clustersData(clusterJSON("c1", "u1", "1"))))
	cp := newBundle(hub, "clusterspolicies", v(2), mustDecode(t, "clusterspolicies", objectsData(placement("p1", "c1"))))
	comp := newBundle(hub, "compliance", v(3), mustDecode(t, "compliance", objectsData(policyCompliance("p1", []string{"c1"}, nil))))
	comp.Dependency, comp.HasDependency = v(2), true
	hb := newBundle(hub, "heartbeat", v(4), mustDecode(t, "heartbeat", []byte(`{}`)))
	for _, b := range []*bundle.Bundle{mc, cp, comp, hb} {
		if applied, err := apply(t, pool, b); err != nil || !applied {
			t.Fatalf("%s of %s: applied %v, %v", b.Type, hub, applied, err)
		}
	}
}

// rowsOfHub counts the hub's rows in every table with a hub column but
// the versions and the dead letters, found independently of the code
// under test, through information_schema.
func rowsOfHub(t *testing.T, pool *pgxpool.Pool, hub string) map[string]int {
	t.Helper()
	rows, err := pool.Query(t.Context(), `
		SELECT c.table_schema || '.' || c.table_name FROM information_schema.columns c
		JOIN information_schema.tables t USING (table_schema, table_name)
		WHERE c.column_name = 'hub' AND t.table_type = 'BASE TABLE'
		  AND c.table_schema = 'stb'
		  AND c.table_name NOT IN ('bundle_versions', 'dead_letters', 'hub_requests')`)
	if err != nil {
		t.Fatal(err)
	}
	tables, err := pgx.CollectRows(rows, pgx.RowTo[string])
	if err != nil {
		t.Fatal(err)
	}
	if len(tables) < 5 {
		t.Fatalf("found only %d tables with a hub column: %v", len(tables), tables)
	}
	out := map[string]int{}
	for _, table := range tables {
		var n int
		if err := pool.QueryRow(t.Context(), "SELECT count(*) FROM "+table+" WHERE hub = $1", hub).Scan(&n); err != nil {
			t.Fatal(err)
		}
		if n > 0 {
			out[table] = n
		}
	}
	return out
}

func hubState(t *testing.T, pool *pgxpool.Pool, hub string) db.HubState {
	t.Helper()
	st, ok, err := db.LoadHubStatus(t.Context(), pool, hub)
	if err != nil {
		t.Fatal(err)
	}
	if !ok {
		return ""
	}
	return st.State
}

func TestDeleteHubLeavesTombstonesOldBundlesCannotPass(t *testing.T) {
	t.Parallel()
	pool, _ := dbtest.New(t)
	ctx := t.Context()
	writeHub(t, pool, "hub-x", 3)
	writeHub(t, pool, "hub-y", 3)
	before := rowsOfHub(t, pool, "hub-x")
	if len(before) < 3 {
		t.Fatalf("hub-x has rows in only %v", before)
	}
	other := rowsOfHub(t, pool, "hub-y")

	req := db.HubRequest{Hub: "hub-x", Action: db.DeleteHub, RequestedBy: "test"}
	res, err := db.ApplyHubRequest(ctx, pool, req)
	if err != nil {
		t.Fatal(err)
	}
	want := 0
	for _, n := range before {
		want += n
	}
	// Tombstones for the 4 types hub-x wrote, none for the other types.
	if res.Removed != int64(want) || res.Tombstone != 3 || res.Versions != 4 || res.AlreadyDeleted || res.ID == 0 {
		t.Fatalf("delete = %+v; want %d rows removed, 4 tombstones at incarnation 3", res, want)
	}
	if left := rowsOfHub(t, pool, "hub-x"); len(left) != 0 {
		t.Fatalf("rows of the deleted hub left: %v", left)
	}
	if got := rowsOfHub(t, pool, "hub-y"); len(got) != len(other) {
		t.Fatalf("another hub's rows changed: %v, were %v", got, other)
	}
	if s := hubState(t, pool, "hub-x"); s != db.HubDeleted {
		t.Fatalf("stb.hubs state %q, want deleted", s)
	}
	vs, err := db.LoadHubVersions(ctx, pool, "hub-x")
	if err != nil {
		t.Fatal(err)
	}
	var types []string
	for _, sv := range vs {
		types = append(types, sv.Type)
		if sv.Version != (bundle.Version{Incarnation: 3, Generation: db.TombstoneGeneration}) {
			t.Fatalf("%s version %v, want the tombstone 3.max", sv.Type, sv.Version)
		}
	}
	if want := []string{"clusterspolicies", "compliance", "heartbeat", "managedclusters"}; !slices.Equal(types, want) {
		t.Fatalf("tombstones for %v, want only the types the hub wrote: %v", types, want)
	}

	// A bundle of the deleted incarnation still in Kafka writes nothing.
	late := newBundle("hub-x", "managedclusters", bundle.Version{Incarnation: 3, Generation: 99},
		mustDecode(t, "managedclusters", clustersData(clusterJSON("c9", "u9", "1"))))
	if applied, err := apply(t, pool, late); err != nil || applied {
		t.Fatalf("late bundle of the deleted incarnation: applied %v, %v; want fenced", applied, err)
	}
	if left := rowsOfHub(t, pool, "hub-x"); len(left) != 0 || hubState(t, pool, "hub-x") != db.HubDeleted {
		t.Fatalf("a late bundle brought the deleted hub back: %v", left)
	}

	// Deleting again is a no-op that says so.
	again, err := db.ApplyHubRequest(ctx, pool, req)
	if err != nil || !again.AlreadyDeleted || again.Removed != 0 || again.Tombstone != 3 {
		t.Fatalf("second delete = %+v, %v; want already deleted, nothing removed", again, err)
	}

	// A newer incarnation comes back cleanly.
	writeHub(t, pool, "hub-x", 4)
	if s := hubState(t, pool, "hub-x"); s != db.HubActive {
		t.Fatalf("after a newer incarnation, state %q, want active", s)
	}
	if got := rowsOfHub(t, pool, "hub-x"); len(got) != len(before) {
		t.Fatalf("the hub came back with rows in %v, want %v", got, before)
	}
	// and with no version it never had: every tombstone was of a type it
	// sends again. (They were 14 here, one for every type the bridge
	// knows, and the 10 the hub never sent outlived its return, as
	// versions stb verify found unexpected.)
	vs, err = db.LoadHubVersions(ctx, pool, "hub-x")
	if err != nil {
		t.Fatal(err)
	}
	for _, sv := range vs {
		if sv.Version.Incarnation != 4 {
			t.Errorf("after the hub came back, %s at %v: a tombstone of a type it never sent", sv.Type, sv.Version)
		}
	}
}

// TestDeleteOfAHubWithoutVersions: a hub with rows but no stored version
// (nothing to fence) is deleted without tombstones, and the result says so.
func TestDeleteOfAHubWithoutVersions(t *testing.T) {
	t.Parallel()
	pool, _ := dbtest.New(t)
	ctx := t.Context()
	res, err := db.ApplyHubRequest(ctx, pool, db.HubRequest{Hub: "hub-none", Action: db.DeleteHub})
	if err != nil || res.Versions != 0 || res.Tombstone != 0 || res.ID == 0 {
		t.Fatalf("delete of a hub without versions = %+v, %v; want no tombstone", res, err)
	}
	if vs, err := db.LoadHubVersions(ctx, pool, "hub-none"); err != nil || len(vs) != 0 {
		t.Fatalf("versions after the delete: %v, %v; want none", vs, err)
	}
	if d := res.Describe("hub-none", db.DeleteHub); !strings.Contains(d, "no tombstone") {
		t.Fatalf("Describe = %q, want it to say there is no tombstone", d)
	}
}

// TestDeleteWaitsForAWriteInProgress starts a delete while a bridge's
// transaction has written a bundle of the hub and not committed: the
// delete must wait for it and then remove what it wrote, and leave a
// tombstone for its type, whether the hub had written that type before
// (the delete waits on the type's version row) or not (it waits on the
// hub's row, which the fence takes too: tombstones are only for the
// types the hub has rows of, and this one has one once the write ends).
func TestDeleteWaitsForAWriteInProgress(t *testing.T) {
	t.Parallel()
	for _, tc := range []struct {
		name string
		b    func(t *testing.T, hub string) *bundle.Bundle
	}{
		{"a type the hub had", func(t *testing.T, hub string) *bundle.Bundle {
			return newBundle(hub, "managedclusters", bundle.Version{Incarnation: 2, Generation: 50},
				mustDecode(t, "managedclusters", clustersData(clusterJSON("c2", "u2", "1"), clusterJSON("c3", "u3", "1"))))
		}},
		{"a type new to the hub", func(t *testing.T, hub string) *bundle.Bundle {
			return newBundle(hub, "policyevents", bundle.Version{Incarnation: 2, Generation: 50},
				mustDecode(t, "policyevents", objectsData(event("p1", "c1", "e1", "m", ""))))
		}},
	} {
		t.Run(tc.name, func(t *testing.T) {
			t.Parallel()
			deleteDuringWrite(t, tc.b(t, "hub-w"))
		})
	}
}

func deleteDuringWrite(t *testing.T, b *bundle.Bundle) {
	pool, _ := dbtest.New(t)
	ctx := t.Context()
	writeHub(t, pool, b.Hub, 2)

	tx, err := pool.Begin(ctx)
	if err != nil {
		t.Fatal(err)
	}
	defer tx.Rollback(context.Background())
	if applied, err := Default().Apply(ctx, tx, []*bundle.Bundle{b}); err != nil || !applied {
		t.Fatalf("Apply in the open transaction: %v, %v", applied, err)
	}

	done := make(chan error, 1)
	var res db.HubResult
	go func() {
		var err error
		res, err = db.ApplyHubRequest(ctx, pool, db.HubRequest{Hub: b.Hub, Action: db.DeleteHub})
		done <- err
	}()
	// The delete must be blocked on the writer's row lock, not finished.
	deadline := time.Now().Add(10 * time.Second)
	for {
		var waiting int
		if err := pool.QueryRow(ctx, `SELECT count(*) FROM pg_stat_activity
			WHERE wait_event_type = 'Lock' AND datname = current_database()`).Scan(&waiting); err != nil {
			t.Fatal(err)
		}
		if waiting > 0 {
			break
		}
		select {
		case err := <-done:
			t.Fatalf("the delete finished (%v) while a write of the hub was in progress", err)
		default:
		}
		if time.Now().After(deadline) {
			t.Fatal("the delete never waited for the write in progress")
		}
		time.Sleep(10 * time.Millisecond)
	}
	if err := tx.Commit(ctx); err != nil {
		t.Fatal(err)
	}
	if err := <-done; err != nil {
		t.Fatal(err)
	}
	if left := rowsOfHub(t, pool, b.Hub); len(left) != 0 {
		t.Fatalf("rows written by the concurrent write survived the delete: %v", left)
	}
	if res.Tombstone != 2 {
		t.Fatalf("tombstone at incarnation %d, want 2", res.Tombstone)
	}
	v, ok := readVersion(t, pool, b.Hub, b.Type)
	if want := "2." + strconv.FormatUint(db.TombstoneGeneration, 10); !ok || v.Version != want {
		t.Fatalf("%s after the delete: %+v (%v), want the tombstone %s", b.Type, v, ok, want)
	}
}

func TestResetHubTakesAnOlderIncarnation(t *testing.T) {
	t.Parallel()
	pool, _ := dbtest.New(t)
	ctx := t.Context()
	writeHub(t, pool, "hub-r", 7)
	res, err := db.ApplyHubRequest(ctx, pool, db.HubRequest{Hub: "hub-r", Action: db.ResetHub})
	if err != nil || res.Versions != 4 || res.Removed == 0 {
		t.Fatalf("reset = %+v, %v; want 4 versions and the rows removed", res, err)
	}
	if left := rowsOfHub(t, pool, "hub-r"); len(left) != 0 {
		t.Fatalf("rows left after reset: %v", left)
	}
	writeHub(t, pool, "hub-r", 1) // rebuilt from scratch: incarnation went back
	if v, ok := readVersion(t, pool, "hub-r", "managedclusters"); !ok || v.Version != "1.1" {
		t.Fatalf("after reset, managedclusters at %+v, want 1.1", v)
	}
	again, err := db.ApplyHubRequest(ctx, pool, db.HubRequest{Hub: "hub-nobody", Action: db.ResetHub})
	if err != nil || again.Removed != 0 || again.Versions != 0 {
		t.Fatalf("reset of an unknown hub = %+v, %v; want nothing done", again, err)
	}
}

func TestInactiveHubsAndDeleteAfter(t *testing.T) {
	t.Parallel()
	pool, _ := dbtest.New(t)
	ctx := t.Context()
	writeHub(t, pool, "hub-quiet", 1)
	writeHub(t, pool, "hub-live", 1)
	if _, err := pool.Exec(ctx, `UPDATE stb.hub_heartbeats SET received_at = now() - interval '10 minutes' WHERE hub = 'hub-quiet'`); err != nil {
		t.Fatal(err)
	}
	n, err := db.MarkInactiveHubs(ctx, pool, 5*time.Minute)
	if err != nil || n != 1 {
		t.Fatalf("MarkInactiveHubs = %d, %v; want 1", n, err)
	}
	if s := hubState(t, pool, "hub-quiet"); s != db.HubInactive {
		t.Fatalf("quiet hub %q, want inactive", s)
	}
	if s := hubState(t, pool, "hub-live"); s != db.HubActive {
		t.Fatalf("live hub %q, want active", s)
	}
	counts, err := db.CountHubStates(ctx, pool)
	if err != nil || counts != (db.HubStates{Active: 1, Inactive: 1}) {
		t.Fatalf("CountHubStates = %+v, %v", counts, err)
	}

	// --hub-delete-after: only a hub inactive that long is deleted.
	req := db.HubRequest{Action: db.DeleteHub, InactiveFor: time.Hour}
	req.Hub = "hub-quiet"
	if res, err := db.ApplyHubRequest(ctx, pool, req); err != nil || !res.Skipped {
		t.Fatalf("delete of a hub inactive for less than the limit = %+v, %v; want skipped", res, err)
	}
	if _, err := pool.Exec(ctx, `UPDATE stb.hubs SET state_since = now() - interval '2 hours' WHERE name = 'hub-quiet'`); err != nil {
		t.Fatal(err)
	}
	if hubs, err := db.HubsInactiveFor(ctx, pool, time.Hour); err != nil || len(hubs) != 1 || hubs[0] != "hub-quiet" {
		t.Fatalf("HubsInactiveFor = %v, %v", hubs, err)
	}
	req.Hub = "hub-live"
	if res, err := db.ApplyHubRequest(ctx, pool, req); err != nil || !res.Skipped {
		t.Fatalf("delete-after of an active hub = %+v, %v; want skipped", res, err)
	}
	req.Hub = "hub-quiet"
	if res, err := db.ApplyHubRequest(ctx, pool, req); err != nil || res.Skipped || res.Removed == 0 {
		t.Fatalf("delete-after of a hub inactive for 2h = %+v, %v; want deleted", res, err)
	}

	// Its next heartbeat of a newer incarnation makes a hub active again;
	// an inactive one turns active on any bundle.
	if _, err := pool.Exec(ctx, `UPDATE stb.hubs SET state = 'inactive' WHERE name = 'hub-live'`); err != nil {
		t.Fatal(err)
	}
	hb := newBundle("hub-live", "heartbeat", bundle.Version{Incarnation: 1, Generation: 9}, mustDecode(t, "heartbeat", []byte(`{}`)))
	if applied, err := apply(t, pool, hb); err != nil || !applied {
		t.Fatal(applied, err)
	}
	if s := hubState(t, pool, "hub-live"); s != db.HubActive {
		t.Fatalf("after a heartbeat, state %q, want active", s)
	}
}

// familyScope is what profiles.HubScope declares for the work profile,
// which this package cannot import (the family imports it).
var familyScope = db.HubScope{
	KeyFenced: []string{"work.status"},
	Tables:    []db.HubTable{{Table: "work.resource_status", Column: "cluster"}},
}

// writeFamilyRows stores n statuses of cluster in work.resource_status and
// its work.status version at the family's constant 0.0, as the family's
// write leaves them.
func writeFamilyRows(t *testing.T, pool *pgxpool.Pool, cluster string, n int) {
	t.Helper()
	ctx := t.Context()
	if _, err := pool.Exec(ctx, `
		INSERT INTO work.resource_status (source, resource_id, cluster, resource_version, sequence_id, event_type, event_id)
		SELECT 'maestro', $1 || '-' || i, $1, 1, i, 'status.update_request', 'e' || i FROM generate_series(1, $2) i`, cluster, n); err != nil {
		t.Fatal(err)
	}
	if _, err := pool.Exec(ctx, `
		INSERT INTO stb.bundle_versions (hub, bundle_type, incarnation, generation) VALUES ($1, 'work.status', 0, 0)
		ON CONFLICT DO NOTHING`, cluster); err != nil {
		t.Fatal(err)
	}
}

func familyRows(t *testing.T, pool *pgxpool.Pool, cluster string) int {
	t.Helper()
	var n int
	if err := pool.QueryRow(t.Context(), `SELECT count(*) FROM work.resource_status WHERE cluster = $1`, cluster).Scan(&n); err != nil {
		t.Fatal(err)
	}
	return n
}

// TestDeleteOfAHubWithKeyFencedTypes: a hub that sent STB's bundles and
// is also a cluster of a key-fenced family gets the tombstones it had
// before, only for its STB types and at their incarnation; the version of
// the family's type, whose constant 0.0 would make a tombstone that
// refuses every later bundle, is removed instead, and so are the hub's
// rows of the family's table (counted in Removed). Another hub keeps its
// rows, and a reset removes the family's rows too.
func TestDeleteOfAHubWithKeyFencedTypes(t *testing.T) {
	t.Parallel()
	pool, _ := dbtest.New(t)
	ctx := t.Context()
	writeHub(t, pool, "hub-f", 3)
	writeFamilyRows(t, pool, "hub-f", 5)
	writeFamilyRows(t, pool, "hub-g", 2)
	stb := 0
	for _, n := range rowsOfHub(t, pool, "hub-f") {
		stb += n
	}
	res, err := db.ApplyHubRequest(ctx, pool, db.HubRequest{Hub: "hub-f", Action: db.DeleteHub, Scope: familyScope})
	if err != nil {
		t.Fatal(err)
	}
	if res.Removed != int64(stb+5) || res.Versions != 4 || res.KeyFenced != 1 || res.Tombstone != 3 {
		t.Fatalf("delete = %+v; want %d rows removed, 4 tombstones at incarnation 3, 1 key-fenced version forgotten", res, stb+5)
	}
	if n := familyRows(t, pool, "hub-f"); n != 0 {
		t.Errorf("%d rows of the family left", n)
	}
	if n := familyRows(t, pool, "hub-g"); n != 2 {
		t.Errorf("another cluster has %d rows of the family, want its 2", n)
	}
	vs, err := db.LoadHubVersions(ctx, pool, "hub-f")
	if err != nil {
		t.Fatal(err)
	}
	var types []string
	for _, sv := range vs {
		types = append(types, sv.Type)
		if sv.Version != (bundle.Version{Incarnation: 3, Generation: db.TombstoneGeneration}) {
			t.Errorf("%s version %v, want the tombstone 3.max", sv.Type, sv.Version)
		}
	}
	if want := []string{"clusterspolicies", "compliance", "heartbeat", "managedclusters"}; !slices.Equal(types, want) {
		t.Fatalf("versions after the delete %v, want the tombstones of %v and none of work.status", types, want)
	}
	if d := res.Describe("hub-f", db.DeleteHub); !strings.Contains(d, "1 versions of types fenced per row forgotten") ||
		!strings.Contains(d, "4 versions now tombstones at incarnation 3") {
		t.Errorf("Describe = %q", d)
	}

	// A cluster with no other type: no tombstone at all.
	res, err = db.ApplyHubRequest(ctx, pool, db.HubRequest{Hub: "hub-g", Action: db.DeleteHub, Scope: familyScope})
	if err != nil || res.Removed != 2 || res.Versions != 0 || res.KeyFenced != 1 || res.Tombstone != 0 {
		t.Fatalf("delete of a cluster = %+v, %v; want its 2 rows and its version removed, no tombstone", res, err)
	}
	if vs, err := db.LoadHubVersions(ctx, pool, "hub-g"); err != nil || len(vs) != 0 {
		t.Fatalf("versions of the deleted cluster: %v, %v; want none", vs, err)
	}
	if d := res.Describe("hub-g", db.DeleteHub); !strings.Contains(d, "no tombstone, so its next bundle brings it back") {
		t.Errorf("Describe = %q", d)
	}

	// A reset removes the family's rows and forgets every version.
	writeFamilyRows(t, pool, "hub-g", 3)
	res, err = db.ApplyHubRequest(ctx, pool, db.HubRequest{Hub: "hub-g", Action: db.ResetHub, Scope: familyScope})
	if err != nil || res.Removed != 3 || res.Versions != 1 || familyRows(t, pool, "hub-g") != 0 {
		t.Fatalf("reset of a cluster = %+v, %v; want its 3 rows and its version removed", res, err)
	}

	// A table a family declares that does not exist fails the request
	// and changes nothing.
	writeFamilyRows(t, pool, "hub-g", 1)
	bad := familyScope
	bad.Tables = append(slices.Clone(bad.Tables), db.HubTable{Table: "work.no_such_table", Column: "cluster"})
	if _, err := db.ApplyHubRequest(ctx, pool, db.HubRequest{Hub: "hub-g", Action: db.DeleteHub, Scope: bad}); err == nil {
		t.Fatal("a delete with a table that does not exist succeeded")
	}
	if n := familyRows(t, pool, "hub-g"); n != 1 {
		t.Fatalf("a failed delete removed rows: %d left, want 1", n)
	}
}
