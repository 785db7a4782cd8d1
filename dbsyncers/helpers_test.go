package dbsyncers

import (
	"encoding/json"
	"errors"
	"fmt"
	"testing"
	"time"

	"github.com/jackc/pgx/v5"
	"github.com/jackc/pgx/v5/pgxpool"

	"github.com/stbridge/stb/pkg/bundle"
)

// clusterJSON returns a ManagedCluster object like the ones hubs send,
// with a label that lets tests tell versions of one cluster apart.
func clusterJSON(name, uid, rev string) json.RawMessage {
	return json.RawMessage(fmt.Sprintf(`{
		"apiVersion": "cluster.open-cluster-management.io/v1",
		"kind": "ManagedCluster",
		"metadata": {"name": %q, "uid": %q, "labels": {"rev": %q, "vendor": "OpenShift"}},
		"spec": {"hubAcceptsClient": true},
		"status": {"conditions": [{"type": "ManagedClusterConditionAvailable", "status": "True"}]}
	}`, name, uid, rev))
}

// clustersData returns managedclusters event data holding the objects.
func clustersData(objects ...json.RawMessage) []byte {
	data, err := json.Marshal(map[string]any{"objects": objects})
	if err != nil {
		panic(err)
	}
	return data
}

// mustDecode decodes data with the registry's decoder of typ.
func mustDecode(t testing.TB, typ string, data []byte) any {
	t.Helper()
	s, ok := Default().Lookup(typ)
	if !ok {
		t.Fatalf("no syncer for %q", typ)
	}
	p, err := s.Decode(data)
	if err != nil {
		t.Fatalf("decode %s: %v", typ, err)
	}
	return p
}

// newBundle returns a bundle as the transport reader builds it.
func newBundle(hub, typ string, v bundle.Version, payload any) *bundle.Bundle {
	return &bundle.Bundle{
		Hub: hub, Type: typ, Version: v, Payload: payload,
		Origin:     bundle.Origin{Topic: "status", Partition: 3, Offset: int64(v.Generation)},
		EventTime:  time.Date(2026, 1, 2, 3, 4, 5, 0, time.UTC).Add(time.Duration(v.Generation) * time.Second),
		ReceivedAt: time.Now(),
	}
}

// clusterRow is one row of status.managed_clusters, as tests compare them.
type clusterRow struct {
	ID      string
	Rev     string // payload->metadata->labels->rev
	Updated time.Time
	XMin    string // changes whenever the row is written
}

// readClusters returns the hub's rows of status.managed_clusters by name.
func readClusters(t testing.TB, pool *pgxpool.Pool, hub string) map[string]clusterRow {
	t.Helper()
	rows, err := pool.Query(t.Context(), `
		SELECT cluster_name, cluster_id, coalesce(payload#>>'{metadata,labels,rev}', ''), updated_at, xmin::text
		FROM status.managed_clusters WHERE hub = $1`, hub)
	if err != nil {
		t.Fatal(err)
	}
	defer rows.Close()
	out := map[string]clusterRow{}
	for rows.Next() {
		var name string
		var r clusterRow
		if err := rows.Scan(&name, &r.ID, &r.Rev, &r.Updated, &r.XMin); err != nil {
			t.Fatal(err)
		}
		out[name] = r
	}
	if err := rows.Err(); err != nil {
		t.Fatal(err)
	}
	return out
}

// revs reduces rows to name → rev, the part most tests compare.
func revs(rows map[string]clusterRow) map[string]string {
	out := make(map[string]string, len(rows))
	for name, r := range rows {
		out[name] = r.Rev
	}
	return out
}

// versionRow is one row of status.bundle_versions.
type versionRow struct {
	Version string // "<incarnation>.<generation>"
	Offset  int64
	Applied time.Time
	XMin    string
}

// readVersion returns the stored version row of hub and typ; ok is false
// when there is none.
func readVersion(t testing.TB, pool *pgxpool.Pool, hub, typ string) (versionRow, bool) {
	t.Helper()
	var r versionRow
	err := pool.QueryRow(t.Context(), `
		SELECT incarnation::text || '.' || generation::text, "offset", applied_at, xmin::text
		FROM status.bundle_versions WHERE hub = $1 AND bundle_type = $2`, hub, typ).
		Scan(&r.Version, &r.Offset, &r.Applied, &r.XMin)
	if err != nil {
		if errors.Is(err, pgx.ErrNoRows) {
			return r, false
		}
		t.Fatal(err)
	}
	return r, true
}
