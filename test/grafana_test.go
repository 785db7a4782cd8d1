package test

import (
	"context"

	"github.com/stbridge/stb/pkg/sim"
)

// Queries of upstream's Grafana dashboards, as their panels' rawSql has
// them (stolostron/multicluster-global-hub operator/pkg/controllers/
// grafana/manifests/acm-global-overview.yaml: "Total Managed Clusters",
// "Total Policies", "All Managed Clusters"). They are facts about what the
// global hub's dashboards read: if STB wrote other tables, or the right
// tables with other rows, these would fail or count wrong.
const (
	grafanaTotalManagedClusters = `select COUNT(DISTINCT cluster_id)
from status.managed_clusters
where deleted_at IS NULL AND payload -> 'metadata' -> 'annotations' ->> 'addon.open-cluster-management.io/on-multicluster-hub' IS NULL`

	grafanaTotalPolicies = `select COUNT(DISTINCT policy_id)
from local_spec.policies
WHERE deleted_at IS NULL`

	grafanaAllManagedClusters = `WITH data AS (
SELECT
  cluster_id,
  COUNT(CASE WHEN lc.compliance = 'non_compliant' THEN 1 END) AS "non_compliant",
  COUNT(CASE WHEN lc.compliance = 'unknown' THEN 1 END) AS "unknown",
  COUNT(CASE WHEN lc.compliance = 'pending' THEN 1 END) AS "pending",
  COUNT(CASE WHEN lc.compliance = 'compliant' THEN 1 END) AS "compliant"
FROM
  local_status.compliance lc
GROUP BY (cluster_id)
),
compliance_data AS(
SELECT cluster_id,
CASE
    WHEN non_compliant > 0 THEN 'non_compliant'
    WHEN non_compliant = 0 AND pending > 0 THEN 'pending'
    WHEN non_compliant = 0 AND unknown = 0 AND compliant > 0 THEN 'compliant'
    ELSE 'unknown'
END AS compliance
FROM data
)
SELECT
mc.leaf_hub_name,
console_url as "hub_console_url",
CASE
    WHEN length(grafana_url) =0 THEN NULL
    ELSE grafana_url || '/d/8Qvi3edMz/acm-resource-optimization-cluster?var-cluster=' || cluster_name
END AS hub_obs_url,
cluster_name,
cd.compliance
FROM status.managed_clusters mc
LEFT JOIN status.leaf_hubs lh
ON mc.leaf_hub_name=lh.leaf_hub_name
LEFT JOIN compliance_data cd
ON mc.cluster_id = cd.cluster_id
WHERE mc.deleted_at IS NULL AND lh.deleted_at IS NULL AND mc.payload -> 'metadata' -> 'annotations' ->> 'addon.open-cluster-management.io/on-multicluster-hub' IS NULL`
)

// checkDashboards runs upstream's dashboard queries on a database the
// simulation verified and compares what they count with the expected
// state: every live cluster and policy of every hub, and, per cluster,
// the worst compliance of its policies, as the panel computes it.
func (e *env) checkDashboards(expected string) {
	e.t.Helper()
	exp, err := sim.ReadExpected(expected)
	if err != nil {
		e.t.Fatal(err)
	}
	clusters, policies := 0, 0
	worst := map[string]string{} // hub/cluster → the panel's state
	for hub, st := range exp.Hubs {
		clusters += len(st.ManagedClusters)
		policies += len(st.LocalPolicies)
		for _, byCluster := range st.Compliance {
			for cluster, state := range byCluster {
				worst[hub+"/"+cluster] = worse(worst[hub+"/"+cluster], string(state))
			}
		}
	}
	ctx := context.Background()
	var n int
	if err := e.pool.QueryRow(ctx, grafanaTotalManagedClusters).Scan(&n); err != nil || n != clusters {
		e.t.Errorf("Total Managed Clusters: %d (%v), want %d", n, err, clusters)
	}
	if err := e.pool.QueryRow(ctx, grafanaTotalPolicies).Scan(&n); err != nil || n != policies {
		e.t.Errorf("Total Policies: %d (%v), want %d", n, err, policies)
	}
	rows, err := e.pool.Query(ctx, grafanaAllManagedClusters)
	if err != nil {
		e.t.Fatal(err)
	}
	defer rows.Close()
	seen := 0
	for rows.Next() {
		var hub, cluster string
		var console, obs, state *string
		if err := rows.Scan(&hub, &console, &obs, &cluster, &state); err != nil {
			e.t.Fatal(err)
		}
		seen++
		want, placed := worst[hub+"/"+cluster]
		switch {
		case !placed && state != nil:
			e.t.Errorf("All Managed Clusters: %s/%s is %s, but no policy is placed on it", hub, cluster, *state)
		case placed && (state == nil || *state != want):
			e.t.Errorf("All Managed Clusters: %s/%s is %v, want %s", hub, cluster, deref(state), want)
		}
	}
	if err := rows.Err(); err != nil {
		e.t.Fatal(err)
	}
	if seen < clusters {
		e.t.Errorf("All Managed Clusters lists %d rows, want at least the %d clusters", seen, clusters)
	}
}

// worse is the panel's order of a cluster's states: non_compliant, then
// pending, then unknown, then compliant ("" for none yet).
func worse(a, b string) string {
	rank := map[string]int{"": 0, "compliant": 1, "unknown": 2, "pending": 3, "non_compliant": 4}
	if rank[b] > rank[a] {
		return b
	}
	return a
}

func deref(s *string) string {
	if s == nil {
		return "NULL"
	}
	return *s
}
