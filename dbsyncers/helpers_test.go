package dbsyncers

import (
	"context"
	"encoding/json"
	"errors"
	"fmt"
	"slices"
	"testing"
	"time"

	"github.com/jackc/pgx/v5"
	"github.com/jackc/pgx/v5/pgxpool"

	"github.com/stbridge/stb/pkg/bundle"
	"github.com/stbridge/stb/pkg/deadletter"
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

// clusterRow is one row of stb.managed_clusters, as tests compare them.
type clusterRow struct {
	ID      string
	Rev     string // payload->metadata->labels->rev
	Updated time.Time
	XMin    string // changes whenever the row is written
}

// readClusters returns the hub's rows of stb.managed_clusters by name.
func readClusters(t testing.TB, pool *pgxpool.Pool, hub string) map[string]clusterRow {
	t.Helper()
	rows, err := pool.Query(t.Context(), `
		SELECT cluster_name, cluster_id, coalesce(payload#>>'{metadata,labels,rev}', ''), updated_at, xmin::text
		FROM stb.managed_clusters WHERE hub = $1`, hub)
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

// versionRow is one row of stb.bundle_versions.
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
		FROM stb.bundle_versions WHERE hub = $1 AND bundle_type = $2`, hub, typ).
		Scan(&r.Version, &r.Offset, &r.Applied, &r.XMin)
	if err != nil {
		if errors.Is(err, pgx.ErrNoRows) {
			return r, false
		}
		t.Fatal(err)
	}
	return r, true
}

// complianceRow is one row of stb.compliance, as tests compare them.
type complianceRow struct {
	State string
	XMin  string // changes whenever the row is written
}

// readCompliance returns the hub's rows of stb.compliance by
// "policy/cluster".
func readCompliance(t testing.TB, pool *pgxpool.Pool, hub string) map[string]complianceRow {
	t.Helper()
	rows, err := pool.Query(t.Context(), `
		SELECT policy_id || '/' || cluster_name, compliance, xmin::text
		FROM stb.compliance WHERE hub = $1`, hub)
	if err != nil {
		t.Fatal(err)
	}
	defer rows.Close()
	out := map[string]complianceRow{}
	for rows.Next() {
		var key string
		var r complianceRow
		if err := rows.Scan(&key, &r.State, &r.XMin); err != nil {
			t.Fatal(err)
		}
		out[key] = r
	}
	if err := rows.Err(); err != nil {
		t.Fatal(err)
	}
	return out
}

// states reduces rows to "policy/cluster" → compliance.
func states(rows map[string]complianceRow) map[string]string {
	out := make(map[string]string, len(rows))
	for k, r := range rows {
		out[k] = r.State
	}
	return out
}

// objectsData returns event data {"objects":[...]} of the given objects.
func objectsData(objects ...any) []byte {
	if objects == nil {
		objects = []any{}
	}
	data, err := json.Marshal(map[string]any{"objects": objects})
	if err != nil {
		panic(err)
	}
	return data
}

// placement returns a clusterspolicies object.
func placement(policyID string, clusters ...string) map[string]any {
	if clusters == nil {
		clusters = []string{}
	}
	return map[string]any{"policyId": policyID, "clusters": clusters, "remediationAction": "inform", "resourceVersion": "1"}
}

// policyCompliance returns a compliance object.
func policyCompliance(policyID string, nonCompliant, unknown []string) map[string]any {
	return map[string]any{"policyId": policyID, "nonCompliantClusters": nonCompliant, "unknownComplianceClusters": unknown, "resourceVersion": "1"}
}

// changedRows returns the keys of rows whose xmin differs between two
// reads, or that exist in only one.
func changedRows(before, after map[string]complianceRow) []string {
	var out []string
	for k, a := range after {
		if b, ok := before[k]; !ok || b.XMin != a.XMin {
			out = append(out, k)
		}
	}
	for k := range before {
		if _, ok := after[k]; !ok {
			out = append(out, k)
		}
	}
	slices.Sort(out)
	return out
}

// decodeCase is what every decoder table row has: its name, the event
// data (rows are also fuzz seeds), and the dead-letter reason the
// decoder's error must carry, "" when the data decodes.
type decodeCase struct {
	name, data string
	reason     deadletter.Reason
}

// runDecodeCases runs decode over a table of n rows. A row with a reason
// must fail with an error carrying that reason (the one the message is
// then rejected with, whatever the error says); a row without must decode,
// and check looks at the payload.
func runDecodeCases(t *testing.T, decode func([]byte) (any, error), n int, row func(i int) decodeCase, check func(t *testing.T, i int, payload any)) {
	t.Helper()
	for i := range n {
		c := row(i)
		t.Run(c.name, func(t *testing.T) {
			p, err := decode([]byte(c.data))
			if c.reason != "" {
				var r deadletter.Reasoned
				if !errors.As(err, &r) || r.DeadLetterReason() != c.reason {
					t.Fatalf("decode(%s) error = %v, want one with dead-letter reason %q", c.data, err, c.reason)
				}
				return
			}
			if err != nil {
				t.Fatalf("decode(%s): %v", c.data, err)
			}
			check(t, i, p)
		})
	}
}

// execPlan writes bundles as a syncer with that plan does, without the
// version fence.
func execPlan(ctx context.Context, db DB, plan func([]*bundle.Bundle) (Write, error), bundles []*bundle.Bundle) error {
	w, err := plan(bundles)
	if err != nil {
		return err
	}
	return w.Exec(ctx, db)
}

// decodeData decodes data as the Raw of a bundle of s's type, without
// attributes, with whichever decoder s has.
func (s *Syncer) decodeData(data []byte) (any, error) {
	return s.decode(&bundle.Bundle{Type: s.Name, Raw: data})
}
