package dbsyncers

import (
	"context"
	"fmt"
	"slices"
	"strings"

	"github.com/stbridge/stb/pkg/bundle"
	"github.com/stbridge/stb/pkg/deadletter"
	"github.com/stbridge/stb/pkg/jsonscan"
)

// PolicyClusters is one policy of a clusterspolicies bundle: the clusters
// it is placed on, sorted, one per name.
type PolicyClusters struct {
	PolicyID string
	Clusters []string
}

// ClustersPoliciesPayload is the decoded data of a clusterspolicies bundle:
// every policy of the hub with its clusters, sorted by policy id, one per
// policy. The objects' remediationAction and resourceVersion are checked
// to be strings and dropped: no table has a column for them.
type ClustersPoliciesPayload struct {
	Policies []PolicyClusters
}

// pairs returns the policy and cluster of every pair, sorted, checking
// that p is normalised as the decoder leaves it.
func (p *ClustersPoliciesPayload) pairs() (policyIDs, clusters []string, err error) {
	n := 0
	for _, pc := range p.Policies {
		n += len(pc.Clusters)
	}
	policyIDs, clusters = make([]string, 0, n), make([]string, 0, n)
	for i, pc := range p.Policies {
		if pc.PolicyID == "" || (i > 0 && p.Policies[i-1].PolicyID >= pc.PolicyID) {
			return nil, nil, fmt.Errorf("policy %d (%q) is empty, listed twice or out of order", i, pc.PolicyID)
		}
		for j, c := range pc.Clusters {
			if c == "" || (j > 0 && pc.Clusters[j-1] >= c) {
				return nil, nil, fmt.Errorf("policy %q: cluster %d (%q) is empty, listed twice or out of order", pc.PolicyID, j, c)
			}
			policyIDs = append(policyIDs, pc.PolicyID)
			clusters = append(clusters, c)
		}
	}
	return policyIDs, clusters, nil
}

// ClustersPolicies returns the syncer of "clusterspolicies" bundles:
// complete snapshots of which policies of a hub apply to which of its
// clusters. They decide which rows stb.compliance holds; compliance
// bundles then only say how those rows comply. A hub's placement refers to
// its managed clusters, so it waits until those were written once.
func ClustersPolicies() Syncer {
	return Syncer{
		TypeInfo: bundle.TypeInfo{
			Name: "clusterspolicies", Kind: bundle.Complete,
			DependsOn: "managedclusters", Rule: bundle.AfterProcessed,
		},
		Decode: decodeClustersPolicies,
		Plan:   planClustersPolicies,
	}
}

// decodeClustersPolicies reads {"objects":[{"policyId","clusters":[...],
// "remediationAction","resourceVersion"}...]}. A policy listed twice is
// taken from its last object, as a later entry of a snapshot is the later
// state; a cluster listed twice for one policy counts once.
func decodeClustersPolicies(data []byte) (any, error) {
	policies := []PolicyClusters{}
	reset := func() { policies = policies[:0] }
	err := eachObject(data, true, reset, func(_ int, d *jsonscan.Decoder) error {
		var policyID string
		var clusters []string
		err := d.Object(func(field []byte) error {
			switch string(field) {
			case "policyId":
				return setString(d, &policyID, "policyId")
			case "clusters":
				return setStrings(d, &clusters, "clusters")
			case "remediationAction", "resourceVersion":
				var unused string // not stored, but must be a string
				return setString(d, &unused, string(field))
			}
			return nil
		})
		if err != nil {
			return err
		}
		if err := checkName("policyId", policyID); err != nil {
			return err
		}
		if clusters == nil {
			// Never "placed nowhere": that is said as []. An object without
			// the list (an older agent's shape, say, with compliant,
			// nonCompliant and unknown lists instead) would wipe the
			// policy's placement.
			return fmt.Errorf("policy %q: clusters is missing or null", policyID)
		}
		if err := checkNames("clusters", clusters); err != nil {
			return fmt.Errorf("policy %q: %w", policyID, err)
		}
		policies = append(policies, PolicyClusters{PolicyID: policyID, Clusters: sortedSet(clusters)})
		return nil
	})
	if err != nil {
		return nil, badPayload(fmt.Errorf("clusterspolicies %w", err))
	}
	return &ClustersPoliciesPayload{Policies: lastPerPolicy(policies, func(p PolicyClusters) string { return p.PolicyID })}, nil
}

// lastPerPolicy sorts a decoder's policies by id and keeps the last one of
// each id, in place.
func lastPerPolicy[T any](policies []T, id func(T) string) []T {
	// Stable, so equal ids keep their input order and the last one wins.
	slices.SortStableFunc(policies, func(a, b T) int { return strings.Compare(id(a), id(b)) })
	n := 0
	for i := range policies {
		if i+1 < len(policies) && id(policies[i+1]) == id(policies[i]) {
			continue
		}
		policies[n] = policies[i]
		n++
	}
	clear(policies[n:])
	return policies[:n]
}

// Statements of the clusterspolicies handler. The listed pairs come either
// from unnest over two arrays ($2, $3) or, for large bundles, from a
// temporary table filled by COPY.
const (
	unnestPlacementPairs = `unnest($2::text[], $3::text[]) AS s(policy_id, cluster_name)`
	stagedPlacementPairs = `pg_temp.stb_placement_pairs AS s`

	// deletePlacement removes the hub's (policy, cluster) rows the snapshot
	// no longer lists, whatever their compliance. NOT EXISTS plans as an
	// anti-join.
	deletePlacementHead = `
DELETE FROM stb.compliance AS t
WHERE t.hub = $1
  AND NOT EXISTS (
	SELECT 1 FROM `
	deletePlacementTail = `
	WHERE s.policy_id = t.policy_id AND s.cluster_name = t.cluster_name)`

	// insertPlacement adds the pairs the snapshot newly lists, as
	// 'unknown' until a compliance bundle says otherwise. Existing pairs
	// keep their row and compliance untouched: the anti-join skips them
	// without a write, and ON CONFLICT only guards against a concurrent
	// writer of the same hub.
	insertPlacementHead = `
INSERT INTO stb.compliance AS t (hub, policy_id, cluster_name, compliance)
SELECT $1, s.policy_id, s.cluster_name, 'unknown'
FROM `
	insertPlacementTail = `
WHERE NOT EXISTS (
	SELECT 1 FROM stb.compliance AS c
	WHERE c.hub = $1 AND c.policy_id = s.policy_id AND c.cluster_name = s.cluster_name)
ON CONFLICT (hub, policy_id, cluster_name) DO NOTHING`

	deletePlacementSQL       = deletePlacementHead + unnestPlacementPairs + deletePlacementTail
	insertPlacementSQL       = insertPlacementHead + unnestPlacementPairs + insertPlacementTail
	deletePlacementStagedSQL = deletePlacementHead + stagedPlacementPairs + deletePlacementTail
	insertPlacementStagedSQL = insertPlacementHead + stagedPlacementPairs + insertPlacementTail

	// createPlacementStageSQL: see createComplianceStageSQL.
	createPlacementStageSQL = `
DROP TABLE IF EXISTS pg_temp.stb_placement_pairs;
CREATE TEMP TABLE stb_placement_pairs (policy_id text, cluster_name text) ON COMMIT DROP`
)

// planClustersPolicies makes the hub's rows of stb.compliance exactly
// the snapshot's (policy, cluster) pairs: pairs no longer listed are
// deleted, new ones inserted as 'unknown', and pairs that stay keep their
// compliance. It is one DELETE and one INSERT over the same two arrays
// (policy and cluster of every pair, sorted), sent as one batch: one round
// trip whatever the size. Of several bundles the last is the hub's latest
// state and the only one written.
func planClustersPolicies(bundles []*bundle.Bundle) (Write, error) {
	b := bundles[len(bundles)-1]
	p, err := payloadOf[ClustersPoliciesPayload](b)
	if err != nil {
		return Write{}, err
	}
	policyIDs, clusters, err := p.pairs()
	if err != nil {
		return Write{}, &PermanentError{Reason: deadletter.BadPayload, Err: fmt.Errorf("clusterspolicies of hub %q: %w", b.Hub, err)}
	}
	return writePlacement(b.Hub, policyIDs, clusters, len(policyIDs) > stageRowsAbove), nil
}

// writePlacement is the two statements of the clusterspolicies handler,
// after staging the pairs in a temporary table when staged is set.
func writePlacement(hub string, policyIDs, clusters []string, staged bool) Write {
	if staged {
		return Write{
			Stage: func(ctx context.Context, db DB) error {
				return stage(ctx, db, createPlacementStageSQL, "stb_placement_pairs",
					[]string{"policy_id", "cluster_name"}, policyIDs, clusters)
			},
			Statements: []Statement{
				{What: "delete removed placements", SQL: deletePlacementStagedSQL, Args: []any{hub}},
				{What: "insert new placements", SQL: insertPlacementStagedSQL, Args: []any{hub}},
			},
		}
	}
	return Write{Statements: []Statement{
		{What: "delete removed placements", SQL: deletePlacementSQL, Args: []any{hub, policyIDs, clusters}},
		{What: "insert new placements", SQL: insertPlacementSQL, Args: []any{hub, policyIDs, clusters}},
	}}
}
