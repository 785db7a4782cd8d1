package dbsyncers

import (
	"fmt"
	"slices"
	"strings"

	"github.com/stbridge/stb/pkg/bundle"
	"github.com/stbridge/stb/pkg/deadletter"
	"github.com/stbridge/stb/pkg/jsonscan"
)

// ghCompliance is one policy of a global-hub compliance event:
// {"policyId","policy_namespaced_name","compliantClusters",
// "nonCompliantClusters","unknownComplianceClusters",
// "pendingComplianceClusters"}; the agent marshals an empty list as null.
type ghCompliance struct {
	policyID                                  string
	compliant, nonCompliant, unknown, pending []string
}

// GlobalHubCompliancePayload is the decoded data of policy.localcompliance
// and policy.localcompletecompliance events: (policy, cluster, state) rows
// sorted by policy and cluster, one per pair, and the policies listed.
type GlobalHubCompliancePayload struct {
	Rows     complianceRows
	Policies []string
}

// statePrecedence orders the states a cluster listed more than once gets:
// the first wins. A cluster the hub saw fail is non-compliant whatever else
// it says (as in STB's own compliance); not knowing beats not having
// evaluated yet, which beats compliant.
var statePrecedence = []ComplianceState{NonCompliant, UnknownCompliance, PendingCompliance, Compliant}

// decodeGHCompliance reads a JSON array of per-policy objects. withCompliant
// says whether compliantClusters is part of the type (localcompliance) or
// ignored (localcompletecompliance lists only the other states: every
// placed cluster it does not list is compliant).
func decodeGHCompliance(typ string, data []byte, withCompliant bool) (*GlobalHubCompliancePayload, error) {
	if jsonscan.IsNull(data) {
		return nil, badPayload(fmt.Errorf("%s: want a JSON array, got null", typ))
	}
	var policies []ghCompliance
	d := jsonscan.NewDecoder(data)
	i := 0
	err := d.Array(func() error {
		var p ghCompliance
		err := d.Object(func(name []byte) error {
			switch string(name) {
			case "policyId":
				return setString(d, &p.policyID, "policyId")
			case "compliantClusters":
				if !withCompliant {
					return nil
				}
				return setStrings(d, &p.compliant, "compliantClusters")
			case "nonCompliantClusters":
				return setStrings(d, &p.nonCompliant, "nonCompliantClusters")
			case "unknownComplianceClusters":
				return setStrings(d, &p.unknown, "unknownComplianceClusters")
			case "pendingComplianceClusters":
				return setStrings(d, &p.pending, "pendingComplianceClusters")
			}
			return nil
		})
		if err == nil {
			err = checkName("policyId", p.policyID)
		}
		for _, l := range []struct {
			field string
			names []string
		}{{"compliantClusters", p.compliant}, {"nonCompliantClusters", p.nonCompliant}, {"unknownComplianceClusters", p.unknown}, {"pendingComplianceClusters", p.pending}} {
			if err == nil {
				err = checkNames(l.field, l.names)
			}
		}
		if err != nil {
			return fmt.Errorf("object %d: %w", i, err)
		}
		policies = append(policies, p)
		i++
		return nil
	})
	if err == nil {
		err = d.Done()
	}
	if err != nil {
		return nil, badPayload(fmt.Errorf("%s: %w", typ, err))
	}
	return ghComplianceRows(policies), nil
}

// ghComplianceRows normalises the policies into sorted rows, one per
// (policy, cluster); a policy listed twice is taken from its last object.
func ghComplianceRows(policies []ghCompliance) *GlobalHubCompliancePayload {
	last := map[string]int{}
	for i, p := range policies {
		last[p.policyID] = i
	}
	type row struct {
		policy, cluster string
		state           ComplianceState
	}
	var rows []row
	var ids []string
	for i, p := range policies {
		if last[p.policyID] != i {
			continue
		}
		ids = append(ids, p.policyID)
		for s, list := range map[ComplianceState][]string{Compliant: p.compliant, NonCompliant: p.nonCompliant, UnknownCompliance: p.unknown, PendingCompliance: p.pending} {
			for _, c := range list {
				rows = append(rows, row{p.policyID, c, s})
			}
		}
	}
	rank := func(s ComplianceState) int { return slices.Index(statePrecedence, s) }
	slices.SortFunc(rows, func(a, b row) int {
		if c := strings.Compare(a.policy, b.policy); c != 0 {
			return c
		}
		if c := strings.Compare(a.cluster, b.cluster); c != 0 {
			return c
		}
		return rank(a.state) - rank(b.state)
	})
	out := &GlobalHubCompliancePayload{Policies: ids}
	slices.Sort(out.Policies)
	n := len(rows)
	out.Rows = complianceRows{make([]string, 0, n), make([]string, 0, n), make([]string, 0, n)}
	for i, r := range rows {
		if i > 0 && rows[i-1].policy == r.policy && rows[i-1].cluster == r.cluster {
			continue // a state of lower precedence for the same pair
		}
		out.Rows.policyIDs = append(out.Rows.policyIDs, r.policy)
		out.Rows.clusters = append(out.Rows.clusters, r.cluster)
		out.Rows.states = append(out.Rows.states, r.state.String())
	}
	return out
}

// GlobalHubLocalCompliance returns the syncer of policy.localcompliance
// events: complete reports, per policy, of every placed cluster and its
// state. They are the placement as well as the compliance: the hub's rows
// of status.compliance become exactly the listed ones, so a policy the
// report leaves out has no rows (the policy is gone from the hub), and a
// cluster a listed policy leaves out is no longer placed.
func GlobalHubLocalCompliance() Syncer {
	return Syncer{
		TypeInfo: bundle.TypeInfo{Name: GHLocalCompliance, Kind: bundle.Complete},
		Decode: func(data []byte) (any, error) {
			return decodeGHCompliance(GHLocalCompliance, data, true)
		},
		Plan: planGHLocalCompliance,
	}
}

// Statements of the localcompliance handler: the hub's rows not listed go,
// the listed ones are inserted or changed (a row already in its state is
// not written).
const (
	deleteUnlistedComplianceSQL = `
DELETE FROM status.compliance AS t
WHERE t.hub = $1
  AND NOT EXISTS (SELECT 1 FROM unnest($2::text[], $3::text[]) AS s(policy_id, cluster_name)
	WHERE s.policy_id = t.policy_id AND s.cluster_name = t.cluster_name)`

	upsertComplianceSQL = `
INSERT INTO status.compliance AS t (hub, policy_id, cluster_name, compliance)
SELECT $1, s.policy_id, s.cluster_name, s.compliance
FROM unnest($2::text[], $3::text[], $4::text[]) AS s(policy_id, cluster_name, compliance)
ON CONFLICT (hub, policy_id, cluster_name) DO UPDATE SET
	compliance = excluded.compliance,
	updated_at = now()
WHERE t.compliance <> excluded.compliance`
)

func planGHLocalCompliance(bundles []*bundle.Bundle) (Write, error) {
	b := bundles[len(bundles)-1]
	p, err := payloadOf[GlobalHubCompliancePayload](b)
	if err != nil {
		return Write{}, err
	}
	r := p.Rows
	if len(r.policyIDs) != len(r.clusters) || len(r.clusters) != len(r.states) {
		return Write{}, &PermanentError{Reason: deadletter.BadPayload, Err: fmt.Errorf("%s of hub %q: uneven rows", b.Type, b.Hub)}
	}
	return Write{Statements: []Statement{
		{What: "delete compliance the report leaves out", SQL: deleteUnlistedComplianceSQL, Args: []any{b.Hub, r.policyIDs, r.clusters}},
		{What: "upsert listed compliance", SQL: upsertComplianceSQL, Args: []any{b.Hub, r.policyIDs, r.clusters, r.states}},
	}}, nil
}

// GlobalHubLocalCompleteCompliance returns the syncer of
// policy.localcompletecompliance events: complete reports of the clusters
// that are not compliant (non-compliant, unknown, pending), computed on the
// placement of exactly the localcompliance event they name in
// extdependencyversion. Like STB's compliance they are the whole truth for
// the hub: every placed (policy, cluster) they do not list is compliant,
// including the clusters of policies they leave out. They only update:
// placement is localcompliance's.
func GlobalHubLocalCompleteCompliance() Syncer {
	return Syncer{
		TypeInfo: bundle.TypeInfo{
			Name: GHLocalCompleteCompliance, Kind: bundle.Complete,
			DependsOn: GHLocalCompliance, Rule: bundle.Exactly,
		},
		Decode: func(data []byte) (any, error) {
			return decodeGHCompliance(GHLocalCompleteCompliance, data, false)
		},
		Plan: planGHLocalCompleteCompliance,
	}
}

func planGHLocalCompleteCompliance(bundles []*bundle.Bundle) (Write, error) {
	b := bundles[len(bundles)-1]
	p, err := payloadOf[GlobalHubCompliancePayload](b)
	if err != nil {
		return Write{}, err
	}
	return writeCompliance(b.Hub, p.Rows, p.Rows.len() > stageRowsAbove), nil
}
