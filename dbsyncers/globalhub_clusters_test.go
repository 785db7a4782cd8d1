package dbsyncers

import (
	"encoding/json"
	"maps"
	"slices"
	"strings"
	"testing"
	"time"

	"github.com/jackc/pgx/v5/pgxpool"

	"github.com/stbridge/stb/pkg/bundle"
	"github.com/stbridge/stb/pkg/db/dbtest"
)

// ghClusterRow is one row of status.managed_clusters.
type ghClusterRow struct {
	Hub, Name, Rev, Error string
	Created, Updated      time.Time
	DeletedAt             *time.Time
}

// readGHClusters returns every row of status.managed_clusters by the label
// of its cluster_id (ghLabel).
func readGHClusters(t *testing.T, pool *pgxpool.Pool) map[string]ghClusterRow {
	t.Helper()
	rows, err := pool.Query(t.Context(), `
		SELECT cluster_id::text, leaf_hub_name, cluster_name, coalesce(payload#>>'{metadata,labels,rev}', ''), error::text,
			created_at, updated_at, deleted_at
		FROM status.managed_clusters`)
	if err != nil {
		t.Fatal(err)
	}
	defer rows.Close()
	out := map[string]ghClusterRow{}
	for rows.Next() {
		var id string
		var r ghClusterRow
		if err := rows.Scan(&id, &r.Hub, &r.Name, &r.Rev, &r.Error, &r.Created, &r.Updated, &r.DeletedAt); err != nil {
			t.Fatal(err)
		}
		out[ghLabel(id)] = r
	}
	if err := rows.Err(); err != nil {
		t.Fatal(err)
	}
	return out
}

// ghClusterView is what the cluster tests compare: per hub, its live
// clusters as name → "<id label>/<rev>", and the names of its
// soft-deleted ones.
type ghClusterView struct {
	Live    map[string]map[string]string
	Deleted map[string][]string
}

func viewGHClusters(rows map[string]ghClusterRow) ghClusterView {
	v := ghClusterView{Live: map[string]map[string]string{}, Deleted: map[string][]string{}}
	for id, r := range rows {
		if r.DeletedAt != nil {
			v.Deleted[r.Hub] = append(v.Deleted[r.Hub], r.Name)
			continue
		}
		if v.Live[r.Hub] == nil {
			v.Live[r.Hub] = map[string]string{}
		}
		v.Live[r.Hub][r.Name] = id + "/" + r.Rev
	}
	for _, names := range v.Deleted {
		slices.Sort(names)
	}
	return v
}

func (v ghClusterView) equal(w ghClusterView) bool {
	return maps.EqualFunc(v.Live, w.Live, maps.Equal) && maps.EqualFunc(v.Deleted, w.Deleted, slices.Equal)
}

// TestGlobalHubManagedCluster walks the rules of upstream's managedcluster
// handler (manager/pkg/status/handlers/managedcluster/
// managedcluster_handler.go) on status.managed_clusters, one event after
// the other, the way an agent sends them.
func TestGlobalHubManagedCluster(t *testing.T) {
	t.Parallel()
	pool, _ := dbtest.New(t)
	mc := func(c ...json.RawMessage) []json.RawMessage { return c }
	refs := func(r ...map[string]string) []map[string]string { return r }
	live := func(kv ...string) map[string]string {
		m := map[string]string{}
		for i := 0; i < len(kv); i += 2 {
			m[kv[i]] = kv[i+1]
		}
		return m
	}
	steps := []struct {
		name, upstream, hub string
		data                []byte
		want                ghClusterView
	}{
		{"create upserts each cluster by its id.k8s.io claim; one without it is skipped",
			"managedcluster_handler.go insertOrUpdate; pkg/utils/object.go GetClusterClaimID", "hub1",
			ghGeneric(mc(ghClusterJSON("a", "1"), ghClusterJSON("b", "1"), ghClusterJSON("n", "1", ghClaim{"platform.open-cluster-management.io", "Other"})), nil, nil, nil, nil),
			ghClusterView{Live: map[string]map[string]string{"hub1": live("a", "a/1", "b", "b/1")}, Deleted: map[string][]string{}}},
		{"update changes only what it lists",
			"managedcluster_handler.go insertOrUpdate (OnConflict UpdateAll)", "hub1",
			ghGeneric(nil, mc(ghClusterJSON("a", "2")), nil, nil, nil),
			ghClusterView{Live: map[string]map[string]string{"hub1": live("a", "a/2", "b", "b/1")}, Deleted: map[string][]string{}}},
		{"delete by id soft-deletes (deleted_at), creates in the same event first",
			"managedcluster_handler.go: Where leaf_hub_name, cluster_id .Delete; models.ManagedCluster DeletedAt", "hub1",
			ghGeneric(mc(ghClusterJSON("c", "1"), ghClusterJSON("d", "1")), nil, nil, refs(ghRef(ghUUID("b"), "", "b")), nil),
			ghClusterView{Live: map[string]map[string]string{"hub1": live("a", "a/2", "c", "c/1", "d", "d/1")}, Deleted: map[string][]string{"hub1": {"b"}}}},
		{"a reference without id deletes by name",
			"managedcluster_handler.go: else Where leaf_hub_name, cluster_name .Delete", "hub1",
			ghGeneric(nil, nil, nil, refs(ghRef("", "", "d")), nil),
			ghClusterView{Live: map[string]map[string]string{"hub1": live("a", "a/2", "c", "c/1")}, Deleted: map[string][]string{"hub1": {"b", "d"}}}},
		{"a soft-deleted cluster reported again is live again",
			"managedcluster_handler.go insertOrUpdate: UpdateAll sets deleted_at NULL", "hub1",
			ghGeneric(nil, mc(ghClusterJSON("b", "2")), nil, nil, nil),
			ghClusterView{Live: map[string]map[string]string{"hub1": live("a", "a/2", "b", "b/2", "c", "c/1")}, Deleted: map[string][]string{"hub1": {"d"}}}},
		{"resync_metadata soft-deletes every live cluster whose id it does not list, by id only (c is listed by name alone)",
			"managedcluster_handler.go ResyncMetadata; pkg/bundle/generic/generic_bundle.go FoundMetadataById", "hub1",
			ghGeneric(nil, nil, mc(ghClusterJSON("a", "3"), ghClusterJSON("e", "1")), nil,
				refs(ghRef(ghUUID("a"), "", "a"), ghRef(ghUUID("e"), "", "e"), ghRef("", "", "c"))),
			ghClusterView{Live: map[string]map[string]string{"hub1": live("a", "a/3", "e", "e/1")}, Deleted: map[string][]string{"hub1": {"b", "c", "d"}}}},
		{"a cluster that moves to another hub moves its row",
			"managedcluster_handler.go insertOrUpdate: UpdateAll sets leaf_hub_name", "hub2",
			ghGeneric(mc(ghClusterJSON("a", "4")), nil, nil, nil, nil),
			ghClusterView{Live: map[string]map[string]string{"hub1": live("e", "e/1"), "hub2": live("a", "a/4")}, Deleted: map[string][]string{"hub1": {"b", "c", "d"}}}},
		{"the old hub's delete of the moved cluster is its own rows' only",
			"managedcluster_handler.go: deletes Where leaf_hub_name", "hub1",
			ghGeneric(nil, nil, nil, refs(ghRef(ghUUID("a"), "", "a")), nil),
			ghClusterView{Live: map[string]map[string]string{"hub1": live("e", "e/1"), "hub2": live("a", "a/4")}, Deleted: map[string][]string{"hub1": {"b", "c", "d"}}}},
		{"the old hub's resync prunes its own clusters only",
			"managedcluster_handler.go ResyncMetadata: Where leaf_hub_name", "hub1",
			ghGeneric(nil, nil, nil, nil, refs(ghRef(ghUUID("e"), "", "e"))),
			ghClusterView{Live: map[string]map[string]string{"hub1": live("e", "e/1"), "hub2": live("a", "a/4")}, Deleted: map[string][]string{"hub1": {"b", "c", "d"}}}},
		{"an empty bundle changes nothing (no resync_metadata: no resync)",
			"managedcluster_handler.go: len(bundle.ResyncMetadata) > 0", "hub1",
			[]byte(`{}`),
			ghClusterView{Live: map[string]map[string]string{"hub1": live("e", "e/1"), "hub2": live("a", "a/4")}, Deleted: map[string][]string{"hub1": {"b", "c", "d"}}}},
	}
	for i, s := range steps {
		if !ghApply(t, pool, s.hub, GHManagedCluster, bundle.Version{Incarnation: 9, Generation: uint64(i + 1)}, s.data) {
			t.Fatalf("%s: not applied", s.name)
		}
		if got := viewGHClusters(readGHClusters(t, pool)); !got.equal(s.want) {
			t.Fatalf("%s (%s):\n got  %+v\n want %+v", s.name, s.upstream, got, s.want)
		}
	}
	// An older event writes nothing: the fence.
	if ghApply(t, pool, "hub1", GHManagedCluster, bundle.Version{Incarnation: 9, Generation: 1}, steps[0].data) {
		t.Fatal("an older create was applied again")
	}
	for id, r := range readGHClusters(t, pool) {
		// cluster_name is generated from the payload; error is 'none'
		// (models.ManagedCluster Error: database.ErrorNone).
		if r.Name != id || r.Error != "none" {
			t.Errorf("cluster %s: name %q, error %q", id, r.Name, r.Error)
		}
	}
}

// TestGlobalHubManagedClusterResyncFrames: a resync is several frames and
// a resync_metadata frame with one extversion (agent/pkg/status/emitters/
// object_emitter.go): every frame is applied, the later ones too, and only
// the metadata frame prunes.
func TestGlobalHubManagedClusterResyncFrames(t *testing.T) {
	t.Parallel()
	pool, _ := dbtest.New(t)
	ghApply(t, pool, "hub1", GHManagedCluster, bundle.Version{Incarnation: 3, Generation: 1},
		ghGeneric([]json.RawMessage{ghClusterJSON("a", "1"), ghClusterJSON("old", "1")}, nil, nil, nil, nil))
	frames := [][]byte{
		ghGeneric(nil, nil, []json.RawMessage{ghClusterJSON("a", "4")}, nil, nil),
		ghGeneric(nil, nil, []json.RawMessage{ghClusterJSON("f", "6")}, nil, nil),
		ghGeneric(nil, nil, nil, nil, []map[string]string{ghRef(ghUUID("a"), "", "a"), ghRef(ghUUID("f"), "", "f")}),
	}
	for i, f := range frames {
		if !ghApply(t, pool, "hub1", GHManagedCluster, bundle.Version{Incarnation: 3, Generation: 20}, f) {
			t.Fatalf("resync frame %d of one version not applied", i+1)
		}
	}
	want := ghClusterView{Live: map[string]map[string]string{"hub1": {"a": "a/4", "f": "f/6"}}, Deleted: map[string][]string{"hub1": {"old"}}}
	if got := viewGHClusters(readGHClusters(t, pool)); !got.equal(want) {
		t.Fatalf("after a resync of three frames: %+v, want %+v", got, want)
	}
}

// TestGlobalHubManagedClusterTimes: created_at is kept by an update and a
// revival (gorm's UpdateAll leaves autoCreateTime columns out:
// managedcluster_handler.go insertOrUpdate); updated_at and deleted_at
// are the current time in UTC (the columns are timestamp without time
// zone). The pipelined path (Registry.Write) writes the same.
func TestGlobalHubManagedClusterTimes(t *testing.T) {
	t.Parallel()
	pool, _ := dbtest.New(t)
	v := func(g uint64) bundle.Version { return bundle.Version{Incarnation: 1, Generation: g} }
	ghWrite(t, pool, "hub1", GHManagedCluster, v(1), ghGeneric([]json.RawMessage{ghClusterJSON("a", "1")}, nil, nil, nil, nil))
	first := readGHClusters(t, pool)["a"]
	ghUTCNow(t, pool, "created_at", first.Created)
	ghUTCNow(t, pool, "updated_at", first.Updated)
	time.Sleep(10 * time.Millisecond)
	ghWrite(t, pool, "hub1", GHManagedCluster, v(2), ghGeneric(nil, nil, nil, []map[string]string{ghRef(ghUUID("a"), "", "a")}, nil))
	deleted := readGHClusters(t, pool)["a"]
	if deleted.DeletedAt == nil {
		t.Fatal("a delete did not set deleted_at")
	}
	ghUTCNow(t, pool, "deleted_at", *deleted.DeletedAt)
	// A second delete does not move deleted_at (gorm soft-deletes live rows).
	ghWrite(t, pool, "hub1", GHManagedCluster, v(3), ghGeneric(nil, nil, nil, []map[string]string{ghRef("", "", "a")}, nil))
	if again := readGHClusters(t, pool)["a"]; !again.DeletedAt.Equal(*deleted.DeletedAt) {
		t.Fatalf("deleted_at moved from %v to %v", deleted.DeletedAt, again.DeletedAt)
	}
	ghWrite(t, pool, "hub1", GHManagedCluster, v(4), ghGeneric(nil, []json.RawMessage{ghClusterJSON("a", "2")}, nil, nil, nil))
	revived := readGHClusters(t, pool)["a"]
	if revived.DeletedAt != nil || !revived.Created.Equal(first.Created) || !revived.Updated.After(first.Updated) || revived.Rev != "2" {
		t.Fatalf("revived %+v; first %+v", revived, first)
	}
	// An unchanged cluster is not rewritten.
	var xmin1, xmin2 string
	if err := pool.QueryRow(t.Context(), `SELECT xmin::text FROM status.managed_clusters`).Scan(&xmin1); err != nil {
		t.Fatal(err)
	}
	ghWrite(t, pool, "hub1", GHManagedCluster, v(5), ghGeneric(nil, []json.RawMessage{ghClusterJSON("a", "2")}, nil, nil, nil))
	if err := pool.QueryRow(t.Context(), `SELECT xmin::text FROM status.managed_clusters`).Scan(&xmin2); err != nil {
		t.Fatal(err)
	}
	if xmin1 != xmin2 {
		t.Fatal("an unchanged cluster was rewritten")
	}
}

// TestGlobalHubClusterIDsOfCompliance: local_status.compliance rows get
// their cluster_id from the schema's triggers, never from the handler
// (models.LocalStatusCompliance ClusterID default:(-), pkg/database/models/
// local_status.go): from the hub's live cluster of that name when the row
// is written after it, and when the cluster is written after the row.
func TestGlobalHubClusterIDsOfCompliance(t *testing.T) {
	t.Parallel()
	pool, _ := dbtest.New(t)
	v := func(g uint64) bundle.Version { return bundle.Version{Incarnation: 1, Generation: g} }
	ghApply(t, pool, "hub1", GHManagedCluster, v(1), ghGeneric([]json.RawMessage{ghClusterJSON("c1", "1")}, nil, nil, nil, nil))
	ghApply(t, pool, "hub1", GHLocalCompliance, v(1), jsonArray(ghComplianceJSON("p1", []string{"c1", "c2"}, nil, nil, nil)))
	read := func() map[string]string {
		out := map[string]string{}
		for _, s := range ghQueryStrings(t, pool, `SELECT cluster_name || '=' || coalesce(cluster_id::text, 'null') FROM local_status.compliance`) {
			name, id, _ := strings.Cut(s, "=")
			out[name] = ghLabel(id)
		}
		return out
	}
	if got, want := read(), map[string]string{"c1": "c1", "c2": "null"}; !maps.Equal(got, want) {
		t.Fatalf("cluster ids %v, want %v", got, want)
	}
	ghApply(t, pool, "hub1", GHManagedCluster, v(2), ghGeneric([]json.RawMessage{ghClusterJSON("c2", "1")}, nil, nil, nil, nil))
	if got, want := read(), map[string]string{"c1": "c1", "c2": "c2"}; !maps.Equal(got, want) {
		t.Fatalf("after c2 was written: cluster ids %v, want %v", got, want)
	}
}
