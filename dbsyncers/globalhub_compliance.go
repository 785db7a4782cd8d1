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

// ghCompliance is one policy of a global-hub compliance event
// (pkg/bundle/grc): {"policyId","policy_namespaced_name",
// "compliantClusters","nonCompliantClusters","unknownComplianceClusters",
// "pendingComplianceClusters"}; the agent marshals an empty list as null.
type ghCompliance struct {
	policyID                                  string
	compliant, nonCompliant, unknown, pending []string
}

// GlobalHubCompliancePayload is the decoded data of policy.localcompliance
// and policy.localcompletecompliance events: (policy, cluster, state) rows
// sorted by policy and cluster, one per pair, and the policies listed,
// sorted. Policy ids are the root policies' uids, in the form PostgreSQL
// prints a uuid; states are local_status.compliance_type's.
type GlobalHubCompliancePayload struct {
	Rows     complianceRows
	Policies []string
}

// statePrecedence orders the states a cluster listed more than once gets:
// the first wins. A cluster the hub saw fail is non-compliant whatever else
// it says (as in STB's own compliance); not knowing beats not having
// evaluated yet, which beats compliant. (The agent lists each cluster of a
// policy once; upstream's handler would fail on a repeat within one
// batch of its upsert.)
var statePrecedence = []ComplianceState{NonCompliant, UnknownCompliance, PendingCompliance, Compliant}

// decodeGHCompliance reads a JSON array of per-policy objects. withCompliant
// says whether compliantClusters is part of the type (localcompliance) or
// ignored (localcompletecompliance lists only the other states: every
// placed cluster it does not list is compliant).
//
// A policyId that is not a UUID is a bad payload: local_status.compliance.
// policy_id is a uuid, and upstream's upsert of it fails its batch (which
// its manager retries for ever); it is the uid of one of the hub's root
// policies, always a UUID.
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
		if err == nil {
			p.policyID, err = checkUUID("policyId", p.policyID)
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
	ids := []string{}
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

// ghRows returns p's rows, checking that they are even (as the decoder
// leaves them).
func ghRows(b *bundle.Bundle) (*GlobalHubCompliancePayload, error) {
	p, err := payloadOf[GlobalHubCompliancePayload](b)
	if err != nil {
		return nil, err
	}
	r := p.Rows
	if len(r.policyIDs) != len(r.clusters) || len(r.clusters) != len(r.states) {
		return nil, &PermanentError{Reason: deadletter.BadPayload, Err: fmt.Errorf("%s of hub %q: uneven rows", b.Type, b.Hub)}
	}
	return p, nil
}

// The rows a compliance statement reads: arrays of their columns unnested
// from the parameter numbered first on, or, for large bundles, a temporary
// table filled by COPY (statements.go). Policy ids and states travel as
// text and are cast where they meet the table's uuid and enum columns.
func ghRowsUnnest(first int) string {
	return fmt.Sprintf("unnest($%d::text[], $%d::text[], $%d::text[]) AS s(policy_id, cluster_name, compliance)", first, first+1, first+2)
}

func ghPairsUnnest(first int) string {
	return fmt.Sprintf("unnest($%d::text[], $%d::text[]) AS s(policy_id, cluster_name)", first, first+1)
}

const (
	ghStagedRows = `pg_temp.stb_gh_compliance_rows AS s`

	// createGHComplianceStageSQL makes the temporary table of the staged
	// path, dropped at commit (see createComplianceStageSQL).
	createGHComplianceStageSQL = `
DROP TABLE IF EXISTS pg_temp.stb_gh_compliance_rows;
CREATE TEMP TABLE stb_gh_compliance_rows (policy_id text, cluster_name text, compliance text) ON COMMIT DROP`
)

// stageGHRows is the Stage of a staged compliance write.
func stageGHRows(r complianceRows) func(ctx context.Context, db DB) error {
	return func(ctx context.Context, db DB) error {
		return stage(ctx, db, createGHComplianceStageSQL, "stb_gh_compliance_rows",
			[]string{"policy_id", "cluster_name", "compliance"}, r.policyIDs, r.clusters, r.states)
	}
}

// GlobalHubLocalCompliance returns the syncer of policy.localcompliance
// events into local_status.compliance (manager/pkg/status/handlers/policy/
// local_compliance_handler.go): complete reports, per policy, of every
// placed cluster and its state. They are the placement as well as the
// compliance: for each listed policy the hub's rows become exactly the
// listed ones, and a policy the report leaves out has no rows of the hub
// left (the policy is gone from the hub).
func GlobalHubLocalCompliance() Syncer {
	return Syncer{
		TypeInfo: bundle.TypeInfo{Name: GHLocalCompliance, Kind: bundle.Complete},
		Decode: func(data []byte) (any, error) {
			return decodeGHCompliance(GHLocalCompliance, data, true)
		},
		Plan: planGHLocalCompliance,
	}
}

// Statements of the localcompliance handler, as one batch: the hub's rows
// the report does not list go, then the listed ones are inserted or
// changed.
var (
	// ghDeleteUnlisted* delete, of the hub ($1), every row the report does
	// not list: the clusters a listed policy no longer lists (upstream:
	// the "delete" transaction over allClustersOnDB, per policy), and the
	// rows of the policies it does not list at all.
	//
	// For the latter upstream deletes `WHERE policy_id = ?` alone ("delete
	// the policy isn't contained on the bundle": tx.Where(&models.
	// LocalStatusCompliance{PolicyID: policyID}).Delete, local_compliance_
	// handler.go), which removes the policy's rows of EVERY hub. We delete
	// only this hub's: a hub must not be able to delete another hub's rows,
	// and the policy ids it reports are the uids of its own root policies,
	// so the rows of another hub with the same id are that hub's to remove.
	ghDeleteUnlistedHead = `
DELETE FROM local_status.compliance AS t
WHERE t.leaf_hub_name = $1
  AND NOT EXISTS (SELECT 1 FROM `
	ghDeleteUnlistedTail = `
	WHERE s.policy_id::uuid = t.policy_id AND s.cluster_name = t.cluster_name)`
	ghDeleteUnlistedSQL       = ghDeleteUnlistedHead + ghPairsUnnest(2) + ghDeleteUnlistedTail
	ghDeleteUnlistedStagedSQL = ghDeleteUnlistedHead + ghStagedRows + ghDeleteUnlistedTail

	// ghUpsertListed* is upstream's batch upsert of the listed rows
	// (models.LocalStatusCompliance, pkg/database/models/local_status.go,
	// OnConflict UpdateAll: error 'none' and the state). cluster_id is not
	// written: the schema's triggers give it the cluster_id of the hub's
	// live cluster of that name, as upstream's do. A row already in that
	// state is not rewritten.
	ghUpsertListedHead = `
INSERT INTO local_status.compliance AS t (policy_id, cluster_name, leaf_hub_name, error, compliance)
SELECT s.policy_id::uuid, s.cluster_name, $1, 'none'::status.error_type, s.compliance::local_status.compliance_type
FROM `
	ghUpsertListedTail = `
ON CONFLICT (policy_id, cluster_name, leaf_hub_name) DO UPDATE SET
	error      = excluded.error,
	compliance = excluded.compliance
WHERE (t.error, t.compliance) IS DISTINCT FROM (excluded.error, excluded.compliance)`
	ghUpsertListedSQL       = ghUpsertListedHead + ghRowsUnnest(2) + ghUpsertListedTail
	ghUpsertListedStagedSQL = ghUpsertListedHead + ghStagedRows + ghUpsertListedTail
)

func planGHLocalCompliance(bundles []*bundle.Bundle) (Write, error) {
	b := bundles[len(bundles)-1]
	p, err := ghRows(b)
	if err != nil {
		return Write{}, err
	}
	r := p.Rows
	if r.len() > stageRowsAbove {
		return Write{
			Stage: stageGHRows(r),
			Statements: []Statement{
				{What: "delete local compliance the report leaves out", SQL: ghDeleteUnlistedStagedSQL, Args: []any{b.Hub}},
				{What: "upsert listed local compliance", SQL: ghUpsertListedStagedSQL, Args: []any{b.Hub}},
			},
		}, nil
	}
	return Write{Statements: []Statement{
		{What: "delete local compliance the report leaves out", SQL: ghDeleteUnlistedSQL, Args: []any{b.Hub, r.policyIDs, r.clusters}},
		{What: "upsert listed local compliance", SQL: ghUpsertListedSQL, Args: []any{b.Hub, r.policyIDs, r.clusters, r.states}},
	}}, nil
}

// GlobalHubLocalCompleteCompliance returns the syncer of
// policy.localcompletecompliance events (manager/pkg/status/handlers/
// policy/local_complete_handler.go): complete reports of the clusters that
// are not compliant (non-compliant, unknown, pending), computed on the
// placement of exactly the localcompliance event they name in
// extdependencyversion (the dependency rule, ExactMatch upstream). They
// are the whole truth for the hub: every placed (policy, cluster) they do
// not list is compliant, including the clusters of policies they leave
// out. They only update local_status.compliance: placement is
// localcompliance's.
func GlobalHubLocalCompleteCompliance() Syncer {
	return Syncer{
		// Its dependency on GHLocalCompliance, applied on exactly the
		// version it names, is the type table's (GlobalHub sets it).
		TypeInfo: bundle.TypeInfo{Name: GHLocalCompleteCompliance, Kind: bundle.Complete},
		Decode: func(data []byte) (any, error) {
			return decodeGHCompliance(GHLocalCompleteCompliance, data, false)
		},
		Plan: planGHLocalCompleteCompliance,
	}
}

// Statements of the localcompletecompliance handler, as one batch. Both
// only UPDATE (upstream: tx.Updates of each row, which changes nothing
// when the row does not exist): a listed cluster without a row of its
// policy is skipped, not inserted.
var (
	// ghCompleteListed* give the listed rows of the hub ($1) their state
	// and error 'none' (upstream writes the listed clusters whose stored
	// state differs, with Error: database.ErrorNone).
	ghCompleteListedHead = `
UPDATE local_status.compliance AS t
SET compliance = s.compliance::local_status.compliance_type, error = 'none'::status.error_type
FROM `
	ghCompleteListedTail = `
WHERE t.leaf_hub_name = $1 AND t.policy_id = s.policy_id::uuid AND t.cluster_name = s.cluster_name
  AND t.compliance <> s.compliance::local_status.compliance_type`
	ghCompleteListedSQL       = ghCompleteListedHead + ghRowsUnnest(2) + ghCompleteListedTail
	ghCompleteListedStagedSQL = ghCompleteListedHead + ghStagedRows + ghCompleteListedTail

	// ghCompleteOthers* set compliant every other row of the hub that is
	// not: of a listed policy (upstream: its rows not compliant in the
	// database and not listed, "compliant", with Error 'none'), and of the
	// policies the report leaves out ("update policies not in the event -
	// all is Compliant": Where policy_id and leaf_hub_name, only the
	// compliance set, so their error stays). $2 lists the listed policies.
	ghCompleteOthersHead = `
UPDATE local_status.compliance AS t
SET compliance = 'compliant',
	error = CASE WHEN t.policy_id = ANY($2::text[]::uuid[]) THEN 'none'::status.error_type ELSE t.error END
WHERE t.leaf_hub_name = $1 AND t.compliance <> 'compliant'
  AND NOT EXISTS (SELECT 1 FROM `
	ghCompleteOthersTail = `
	WHERE s.policy_id::uuid = t.policy_id AND s.cluster_name = t.cluster_name)`
	ghCompleteOthersSQL       = ghCompleteOthersHead + ghPairsUnnest(3) + ghCompleteOthersTail
	ghCompleteOthersStagedSQL = ghCompleteOthersHead + ghStagedRows + ghCompleteOthersTail
)

// planGHLocalCompleteCompliance is STB's compliance handler (compliance.go,
// writeCompliance) on local_status.compliance: two UPDATEs whatever the
// size, after copying the listed rows into a temporary table when there
// are many.
func planGHLocalCompleteCompliance(bundles []*bundle.Bundle) (Write, error) {
	b := bundles[len(bundles)-1]
	p, err := ghRows(b)
	if err != nil {
		return Write{}, err
	}
	r := p.Rows
	if r.len() > stageRowsAbove {
		return Write{
			Stage: stageGHRows(r),
			Statements: []Statement{
				{What: "update listed local compliance", SQL: ghCompleteListedStagedSQL, Args: []any{b.Hub}},
				{What: "set other local compliance compliant", SQL: ghCompleteOthersStagedSQL, Args: []any{b.Hub, p.Policies}},
			},
		}, nil
	}
	return Write{Statements: []Statement{
		{What: "update listed local compliance", SQL: ghCompleteListedSQL, Args: []any{b.Hub, r.policyIDs, r.clusters, r.states}},
		{What: "set other local compliance compliant", SQL: ghCompleteOthersSQL, Args: []any{b.Hub, p.Policies, r.policyIDs, r.clusters}},
	}}, nil
}
