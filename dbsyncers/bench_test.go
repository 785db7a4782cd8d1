package dbsyncers

import (
	"encoding/json"
	"fmt"
	"testing"

	"github.com/jackc/pgx/v5"

	"github.com/stbridge/stb/pkg/bundle"
	"github.com/stbridge/stb/pkg/db/dbtest"
)

// benchClusters is the size of a large hub (docs/design.md, Performance).
const benchClusters = 3000

// benchClusterJSON returns a ManagedCluster object of about 1.5 KiB, the
// size of a real one with its labels, claims and conditions.
func benchClusterJSON(name, rev string) json.RawMessage {
	return json.RawMessage(fmt.Sprintf(`{
	"apiVersion": "cluster.open-cluster-management.io/v1", "kind": "ManagedCluster",
	"metadata": {"name": %[1]q, "uid": "uid-%[1]s", "resourceVersion": %[2]q,
		"labels": {"cloud": "Amazon", "region": "us-east-1", "vendor": "OpenShift", "openshiftVersion": "4.16.3",
			"cluster.open-cluster-management.io/clusterset": "default", "name": %[1]q, "rev": %[2]q}},
	"spec": {"hubAcceptsClient": true, "leaseDurationSeconds": 60,
		"managedClusterClientConfigs": [{"url": "https://api.%[1]s.example.com:6443", "caBundle": "LS0tLS1CRUdJTiBDRVJUSUZJQ0FURS0tLS0tCk1JSURNakNDQWhxZ0F3SUJBZ0lJ"}]},
	"status": {"version": {"kubernetes": "v1.29.6"},
		"capacity": {"cpu": "96", "memory": "394Gi", "pods": "750"},
		"allocatable": {"cpu": "93", "memory": "380Gi", "pods": "750"},
		"clusterClaims": [{"name": "id.k8s.io", "value": "uid-%[1]s"}, {"name": "platform.open-cluster-management.io", "value": "AWS"},
			{"name": "product.open-cluster-management.io", "value": "OpenShift"}, {"name": "region.open-cluster-management.io", "value": "us-east-1"}],
		"conditions": [
			{"type": "HubAcceptedManagedCluster", "status": "True", "reason": "HubClusterAdminAccepted", "message": "Accepted by hub cluster admin", "lastTransitionTime": "2026-01-02T03:04:05Z"},
			{"type": "ManagedClusterJoined", "status": "True", "reason": "ManagedClusterJoined", "message": "Managed cluster joined", "lastTransitionTime": "2026-01-02T03:04:05Z"},
			{"type": "ManagedClusterConditionAvailable", "status": "True", "reason": "ManagedClusterAvailable", "message": "Managed cluster is available", "lastTransitionTime": "2026-01-02T03:04:05Z"}]}
}`, name, rev))
}

// benchPayload returns a decoded snapshot of benchClusters clusters named
// prefix-NNNNN, all at revision rev.
func benchPayload(b *testing.B, prefix, rev string) any {
	objects := make([]json.RawMessage, benchClusters)
	for i := range objects {
		objects[i] = benchClusterJSON(fmt.Sprintf("%s-%05d", prefix, i), rev)
	}
	return mustDecode(b, "managedclusters", clustersData(objects...))
}

// BenchmarkManagedClustersHandle measures the handler of a 3,000-cluster
// hub in a worker's transaction, alternating between two snapshots:
// identical ones (reads only), every cluster changed (3,000 updates), and
// disjoint names (3,000 deletes and 3,000 inserts).
func BenchmarkManagedClustersHandle(b *testing.B) {
	pool, _ := dbtest.New(b)
	cases := []struct {
		name  string
		pair  [2]any
		write int // rows written per iteration
	}{
		{"unchanged", [2]any{benchPayload(b, "c", "1"), benchPayload(b, "c", "1")}, 0},
		{"all_changed", [2]any{benchPayload(b, "c", "1"), benchPayload(b, "c", "2")}, benchClusters},
		{"all_replaced", [2]any{benchPayload(b, "c", "1"), benchPayload(b, "d", "1")}, 2 * benchClusters},
	}
	for _, bc := range cases {
		b.Run(bc.name, func(b *testing.B) {
			hub := "bench-" + bc.name
			handle := func(payload any) {
				bundles := []*bundle.Bundle{{Hub: hub, Type: "managedclusters", Payload: payload}}
				if err := pgx.BeginFunc(b.Context(), pool, func(tx pgx.Tx) error {
					return execPlan(b.Context(), tx, planManagedClusters, bundles)
				}); err != nil {
					b.Fatal(err)
				}
			}
			handle(bc.pair[1]) // so the first iteration writes as much as the others
			n := 0
			for b.Loop() {
				handle(bc.pair[n%2])
				n++
			}
			b.ReportMetric(float64(benchClusters*n)/b.Elapsed().Seconds(), "clusters/s")
			if bc.write > 0 {
				b.ReportMetric(float64(bc.write*n)/b.Elapsed().Seconds(), "rows_written/s")
			}
		})
	}
}

// BenchmarkDecodeManagedClusters measures the reader's side of the same
// bundle: about 5 MiB of JSON.
func BenchmarkDecodeManagedClusters(b *testing.B) {
	objects := make([]json.RawMessage, benchClusters)
	for i := range objects {
		objects[i] = benchClusterJSON(fmt.Sprintf("c-%05d", i), "1")
	}
	data := clustersData(objects...)
	b.SetBytes(int64(len(data)))
	for b.Loop() {
		if _, err := decodeManagedClusters(data); err != nil {
			b.Fatal(err)
		}
	}
}
