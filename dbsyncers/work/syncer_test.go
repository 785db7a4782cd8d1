package work_test

import (
	"errors"
	"testing"
	"time"

	"github.com/jackc/pgx/v5"
	"github.com/jackc/pgx/v5/pgxpool"

	"github.com/stbridge/stb/dbsyncers/work"
	"github.com/stbridge/stb/pkg/bundle"
	"github.com/stbridge/stb/pkg/db/dbtest"
	"github.com/stbridge/stb/pkg/deadletter"
)

// row is one row of work.resource_status as tests compare them.
type row struct {
	Cluster string
	RV, Seq int64
	Deleted bool
	EventID string
	Offset  int64
	XMin    string
}

// readRow returns the row of (source, id); ok is false when there is none.
func readRow(t testing.TB, pool *pgxpool.Pool, source, id string) (row, bool) {
	t.Helper()
	var r row
	err := pool.QueryRow(t.Context(), `
		SELECT cluster, resource_version, sequence_id, deleted, event_id, "offset", xmin::text
		FROM work.resource_status WHERE source = $1 AND resource_id = $2`, source, id).
		Scan(&r.Cluster, &r.RV, &r.Seq, &r.Deleted, &r.EventID, &r.Offset, &r.XMin)
	if errors.Is(err, pgx.ErrNoRows) {
		return r, false
	}
	if err != nil {
		t.Fatal(err)
	}
	return r, true
}

// write writes groups of bundles as a worker does.
func write(t testing.TB, pool *pgxpool.Pool, groups ...[]*bundle.Bundle) {
	t.Helper()
	applied, err := registry(t).Write(t.Context(), pool, groups)
	if err != nil {
		t.Fatalf("write: %v", err)
	}
	for i, a := range applied {
		if !a {
			t.Fatalf("group %d was refused by the (hub, type) fence: the family's version must never be stale", i)
		}
	}
}

// status returns the bundle of a status event of resource id of source s
// on cluster c, read from offset off.
func status(t testing.TB, c, s, id string, gen int64, seq string, off int64, conds []map[string]any) *bundle.Bundle {
	t.Helper()
	return mustRead(t, message(t, statusEvent(t, agentStatus{cluster: c, source: s, resourceID: id, generation: gen, seq: seq, conditions: conds}), false, 0, off))
}

// TestWriteFence checks the per-resource fence against the table: the
// pair (resourceversion, sequenceid) must be strictly greater than the
// stored pair; an equal pair is a copy and writes nothing; a lower one,
// a late copy or an older agent's status, writes nothing either. (Maestro
// disregards a status of another resource version and one whose sequence
// id is not newer: pkg/services/resource.go UpdateStatus.)
func TestWriteFence(t *testing.T) {
	pool, _ := dbtest.New(t)
	s1, s2, s3 := work.SequenceID(baseTime, 1), work.SequenceID(baseTime, 2), work.SequenceID(baseTime.Add(time.Minute), 0)
	write(t, pool, []*bundle.Bundle{status(t, "c1", "maestro", "r1", 2, s2, 10, nil)})
	first, ok := readRow(t, pool, "maestro", "r1")
	if !ok || first.RV != 2 || first.Offset != 10 || first.Cluster != "c1" {
		t.Fatalf("after the first status: %+v, %v", first, ok)
	}
	steps := []struct {
		name       string
		b          *bundle.Bundle
		wantOffset int64 // the offset of the status the row holds after
	}{
		{"a copy (equal pair)", status(t, "c1", "maestro", "r1", 2, s2, 11, nil), 10},
		{"a late, lower sequence id", status(t, "c1", "maestro", "r1", 2, s1, 12, nil), 10},
		{"an older generation with a newer sequence id", status(t, "c1", "maestro", "r1", 1, s3, 13, nil), 10},
		{"a newer sequence id", status(t, "c1", "maestro", "r1", 2, s3, 14, nil), 14},
		{"a newer generation with a lower sequence id", status(t, "c1", "maestro", "r1", 3, s1, 15, nil), 15},
	}
	for _, st := range steps {
		before, _ := readRow(t, pool, "maestro", "r1")
		write(t, pool, []*bundle.Bundle{st.b})
		after, _ := readRow(t, pool, "maestro", "r1")
		if after.Offset != st.wantOffset {
			t.Errorf("%s: row holds the status of offset %d, want %d", st.name, after.Offset, st.wantOffset)
		}
		if st.wantOffset != 14 && st.wantOffset != 15 && after.XMin != before.XMin {
			t.Errorf("%s: the row was rewritten (xmin %s → %s)", st.name, before.XMin, after.XMin)
		}
	}
}

// TestWriteDeleteTombstone: a delete keeps its fence as a tombstone, so a
// late status of a lower pair does not bring the resource back; a status
// of a greater pair (the work applied again) does.
func TestWriteDeleteTombstone(t *testing.T) {
	pool, _ := dbtest.New(t)
	s1, s2, s3 := work.SequenceID(baseTime, 1), work.SequenceID(baseTime, 2), work.SequenceID(baseTime, 3)
	write(t, pool, []*bundle.Bundle{status(t, "c1", "s", "r", 1, s1, 1, nil)})
	write(t, pool, []*bundle.Bundle{status(t, "c1", "s", "r", 1, s2, 2, deleted)})
	if r, _ := readRow(t, pool, "s", "r"); !r.Deleted || r.Offset != 2 {
		t.Fatalf("after the delete: %+v, want a tombstone of offset 2", r)
	}
	var deletedAt *time.Time
	if err := pool.QueryRow(t.Context(), `SELECT deleted_at FROM work.resource_status WHERE resource_id = 'r'`).Scan(&deletedAt); err != nil || deletedAt == nil {
		t.Errorf("deleted_at %v (%v), want the delete's time", deletedAt, err)
	}
	write(t, pool, []*bundle.Bundle{status(t, "c1", "s", "r", 1, s1, 3, nil)}) // a late copy
	if r, _ := readRow(t, pool, "s", "r"); !r.Deleted || r.Offset != 2 {
		t.Errorf("after a late copy of an older status: %+v, want the tombstone kept", r)
	}
	write(t, pool, []*bundle.Bundle{status(t, "c1", "s", "r", 1, s3, 4, nil)})
	if r, _ := readRow(t, pool, "s", "r"); r.Deleted || r.Offset != 4 {
		t.Errorf("after a newer status: %+v, want the resource back", r)
	}

	// The older delete_request, without a sequence id, fences its
	// generation whole.
	del := mustRead(t, message(t, statusEvent(t, agentStatus{typ: work.DeleteRequest, cluster: "c1", source: "s", resourceID: "r", generation: 1, data: ptr("")}), false, 0, 5))
	write(t, pool, []*bundle.Bundle{del})
	write(t, pool, []*bundle.Bundle{status(t, "c1", "s", "r", 1, work.SequenceID(baseTime.Add(time.Hour), 0), 6, nil)})
	if r, _ := readRow(t, pool, "s", "r"); !r.Deleted || r.Offset != 5 {
		t.Errorf("after a delete_request and a status of its generation: %+v, want the tombstone of offset 5", r)
	}
}

// TestWriteClusterMismatch: a status that names another cluster than the
// one its resource is stored for is one dead letter (cluster_mismatch),
// and the other statuses of its group are written. (Maestro refuses it
// too: handleStatusUpdate, "unmatched consumer name".)
func TestWriteClusterMismatch(t *testing.T) {
	pool, _ := dbtest.New(t)
	s1, s2 := work.SequenceID(baseTime, 1), work.SequenceID(baseTime, 2)
	write(t, pool, []*bundle.Bundle{status(t, "c1", "s", "r", 1, s1, 1, nil)})
	bad := status(t, "c2", "s", "r", 1, s2, 7, nil)
	good := status(t, "c2", "s", "other", 1, s2, 8, nil)
	write(t, pool, []*bundle.Bundle{bad, good})
	if r, _ := readRow(t, pool, "s", "r"); r.Cluster != "c1" || r.Offset != 1 {
		t.Errorf("the resource of c1: %+v, want it untouched", r)
	}
	if r, ok := readRow(t, pool, "s", "other"); !ok || r.Cluster != "c2" {
		t.Errorf("the other resource of the group: %+v, %v, want it written", r, ok)
	}
	var n int
	var hub, reason, msg, ceType string
	var offset int64
	err := pool.QueryRow(t.Context(), `
		SELECT count(*) OVER (), hub, reason, error, "offset", headers->>'ce_type'
		FROM stb.dead_letters`).Scan(&n, &hub, &reason, &msg, &offset, &ceType)
	if err != nil {
		t.Fatalf("dead letters: %v", err)
	}
	if n != 1 || hub != "c2" || reason != string(deadletter.ClusterMismatch) || offset != 7 || ceType != work.UpdateRequest {
		t.Errorf("dead letter: %d of hub %q, reason %q, offset %d, type %q; want one of c2, %s, offset 7", n, hub, reason, offset, ceType, deadletter.ClusterMismatch)
	}
	t.Logf("letter: %s", msg)

	// The same status read again (a restart) leaves the one letter.
	write(t, pool, []*bundle.Bundle{status(t, "c2", "s", "r", 1, s2, 7, nil)})
	if err := pool.QueryRow(t.Context(), `SELECT count(*) FROM stb.dead_letters`).Scan(&n); err != nil || n != 1 {
		t.Errorf("%d letters after a replay of the same status (%v), want 1", n, err)
	}
}

// TestMergeKeepsGreatestFence folds a cluster's waiting statuses as a
// conflation unit does (the registry's Mergers), out of order and with
// copies, and writes the fold: per resource the greatest pair wins.
func TestMergeKeepsGreatestFence(t *testing.T) {
	pool, _ := dbtest.New(t)
	mergeFn := registry(t).Mergers()[work.BundleType]
	if mergeFn == nil {
		t.Fatal("work.status has no merge")
	}
	s := func(i int64) string { return work.SequenceID(baseTime, i) }
	bundles := []*bundle.Bundle{
		status(t, "c1", "s", "a", 1, s(5), 1, nil),
		status(t, "c1", "s", "b", 1, s(1), 2, nil),
		status(t, "c1", "s", "a", 1, s(3), 3, nil),      // late
		status(t, "c1", "s", "a", 1, s(5), 4, nil),      // copy: the first stays
		status(t, "c1", "s", "b", 2, s(0), 5, deleted),  // newer generation, a delete
		status(t, "c1", "t", "a", 1, s(1), 6, nil),      // another source's a
		status(t, "c1", "s", "b", 1, s(9), 7, nil),      // older generation
		status(t, "c1", "s", "c", 1, s(2), 8, nil),      // alone
		status(t, "c1", "s", "a", 1, s(4), 9, deleted),  // lower than 5: out
		status(t, "c1", "s", "c", 1, s(2), 10, deleted), // equal pair: a copy, though it says deleted
		status(t, "c1", "s", "c", 1, s(6), 11, nil),     // newer
		status(t, "c1", "s", "d", 0, s(1), 12, deleted), // a first status that is a delete
		status(t, "c1", "s", "d", 0, s(0), 13, nil),     // late
		status(t, "c1", "s", "e", 1, s(1), 14, nil),     // written alone below
		status(t, "c1", "s", "e", 1, s(1), 15, deleted), // a copy of it
		status(t, "c1", "s", "f", 7, s(1), 16, nil),     // one of each, below
		status(t, "c1", "s", "f", 7, s(2), 17, deleted), //
		status(t, "c1", "s", "f", 7, s(3), 18, nil),     //
		status(t, "c1", "s", "g", 1, s(1), 19, nil),     //
		status(t, "c1", "s", "g", 1, s(1), 19, nil),     // the same message twice
		status(t, "c1", "s", "h", 1, s(3), 20, deleted), //
		status(t, "c1", "s", "h", 2, s(1), 21, deleted), // a delete of a newer generation
		status(t, "c1", "s", "h", 2, s(1), 22, nil),     // equal to it
	}
	want := map[string]int64{"s/a": 1, "s/b": 5, "t/a": 6, "s/c": 11, "s/d": 12, "s/e": 14, "s/f": 18, "s/g": 19, "s/h": 21}

	// Fold in halves, as a unit does when its deltas grow, and write the
	// two folds as one group.
	half := len(bundles) / 2
	fold := func(bs []*bundle.Bundle) *bundle.Bundle {
		acc := bs[0].Payload
		for _, b := range bs[1:] {
			acc = mergeFn(acc, b.Payload)
		}
		out := *bs[len(bs)-1]
		out.Payload = acc
		return &out
	}
	write(t, pool, []*bundle.Bundle{fold(bundles[:half]), fold(bundles[half:])})
	for key, off := range want {
		src, id, _ := cut(key)
		r, ok := readRow(t, pool, src, id)
		if !ok || r.Offset != off {
			t.Errorf("%s: row %+v (%v), want the status of offset %d", key, r, ok, off)
		}
	}
	// The same statuses one by one, after the fold: nothing changes.
	before := map[string]string{}
	for key := range want {
		src, id, _ := cut(key)
		r, _ := readRow(t, pool, src, id)
		before[key] = r.XMin
	}
	for _, b := range bundles {
		write(t, pool, []*bundle.Bundle{b})
	}
	for key := range want {
		src, id, _ := cut(key)
		if r, _ := readRow(t, pool, src, id); r.XMin != before[key] {
			t.Errorf("%s: rewritten by a status it already has or a lower one", key)
		}
	}
}

func cut(key string) (string, string, bool) {
	for i := range key {
		if key[i] == '/' {
			return key[:i], key[i+1:], true
		}
	}
	return key, "", false
}
