package dbsyncers

import (
	"context"
	"fmt"

	"github.com/stbridge/stb/pkg/bundle"
	"github.com/stbridge/stb/pkg/deadletter"
	"github.com/stbridge/stb/pkg/jsonscan"
)

// ComplianceState is how one cluster complies with one policy.
type ComplianceState uint8

// The states of stb.compliance.compliance, whose CHECK constraint lists
// the same (TestSchemaValuesMatchGo in pkg/db). The zero value is none of
// them and is never written.
const (
	Compliant ComplianceState = iota + 1
	NonCompliant
	UnknownCompliance
	// PendingCompliance: the policy has not been evaluated on the cluster
	// yet. Only the global-hub profile reports it; STB's own compliance
	// and compliancedelta bundles cannot carry it.
	PendingCompliance
)

// AllComplianceStates lists every state.
var AllComplianceStates = []ComplianceState{Compliant, NonCompliant, UnknownCompliance, PendingCompliance}

// String returns the state as stb.compliance stores it.
func (s ComplianceState) String() string {
	switch s {
	case Compliant:
		return "compliant"
	case NonCompliant:
		return "non_compliant"
	case UnknownCompliance:
		return "unknown"
	case PendingCompliance:
		return "pending"
	}
	return fmt.Sprintf("ComplianceState(%d)", uint8(s))
}

// PolicyCompliance is one policy of a compliance bundle: its clusters that
// are not compliant or whose compliance is unknown, both sorted, one per
// name, and disjoint. The policy's other clusters are compliant.
type PolicyCompliance struct {
	PolicyID     string
	NonCompliant []string
	Unknown      []string
}

// CompliancePayload is the decoded data of a compliance bundle: the
// policies it reports on, sorted by id, one per id.
type CompliancePayload struct {
	Policies []PolicyCompliance
}

// Compliance returns the syncer of "compliance" bundles: complete reports
// of how a hub's clusters comply with the policies listed. They build on
// the placement of a clusterspolicies bundle at least as new as the one
// they were computed from (extdependencyversion).
func Compliance() Syncer {
	return Syncer{
		TypeInfo: bundle.TypeInfo{
			Name: "compliance", Kind: bundle.Complete,
			DependsOn: "clusterspolicies", Rule: bundle.AtLeast,
		},
		Decode: decodeCompliance,
		Plan:   planCompliance,
	}
}

// decodeCompliance reads {"objects":[{"policyId","nonCompliantClusters":
// [...],"unknownComplianceClusters":[...],"resourceVersion"}...]}.
//
// A cluster listed both as non-compliant and as unknown is non-compliant:
// the hub saw it fail, which is the state an operator must not miss. A
// policy listed twice is taken from its last object.
func decodeCompliance(data []byte) (any, error) {
	policies := []PolicyCompliance{}
	reset := func() { policies = policies[:0] }
	err := eachObject(data, true, reset, func(_ int, d *jsonscan.Decoder) error {
		var policyID string
		var nonCompliant, unknown []string
		err := d.Object(func(field []byte) error {
			switch string(field) {
			case "policyId":
				return setString(d, &policyID, "policyId")
			case "nonCompliantClusters":
				return setStrings(d, &nonCompliant, "nonCompliantClusters")
			case "unknownComplianceClusters":
				return setStrings(d, &unknown, "unknownComplianceClusters")
			case "resourceVersion":
				var unused string // not stored, but must be a string
				return setString(d, &unused, "resourceVersion")
			}
			return nil
		})
		if err != nil {
			return err
		}
		if err := checkName("policyId", policyID); err != nil {
			return err
		}
		if err := checkNames("nonCompliantClusters", nonCompliant); err != nil {
			return fmt.Errorf("policy %q: %w", policyID, err)
		}
		if err := checkNames("unknownComplianceClusters", unknown); err != nil {
			return fmt.Errorf("policy %q: %w", policyID, err)
		}
		nc := sortedSet(nonCompliant)
		policies = append(policies, PolicyCompliance{PolicyID: policyID, NonCompliant: nc, Unknown: without(sortedSet(unknown), nc)})
		return nil
	})
	if err != nil {
		return nil, badPayload(fmt.Errorf("compliance %w", err))
	}
	return &CompliancePayload{Policies: lastPerPolicy(policies, func(p PolicyCompliance) string { return p.PolicyID })}, nil
}

// complianceRows is a set of (policy, cluster, compliance) rows sorted by
// policy and cluster, one per pair, as parallel columns: the arrays the
// statements unnest, or the columns copied into a temporary table.
type complianceRows struct {
	policyIDs, clusters, states []string
}

func (r *complianceRows) add(policyID, cluster string, s ComplianceState) {
	r.policyIDs = append(r.policyIDs, policyID)
	r.clusters = append(r.clusters, cluster)
	r.states = append(r.states, s.String())
}

func (r *complianceRows) len() int { return len(r.policyIDs) }

// rows returns the listed rows of p in key order, checking that p is
// normalised as the decoder leaves it.
func (p *CompliancePayload) rows() (rows complianceRows, err error) {
	n := 0
	for _, pc := range p.Policies {
		n += len(pc.NonCompliant) + len(pc.Unknown)
	}
	rows = complianceRows{make([]string, 0, n), make([]string, 0, n), make([]string, 0, n)}
	for i, pc := range p.Policies {
		if pc.PolicyID == "" || (i > 0 && p.Policies[i-1].PolicyID >= pc.PolicyID) {
			return rows, fmt.Errorf("policy %d (%q) is empty or out of order", i, pc.PolicyID)
		}
		// Merge the two sorted, disjoint lists into one sorted run.
		nc, unk := pc.NonCompliant, pc.Unknown
		last := ""
		for len(nc) > 0 || len(unk) > 0 {
			var c string
			var s ComplianceState
			if len(unk) == 0 || (len(nc) > 0 && nc[0] < unk[0]) {
				c, s, nc = nc[0], NonCompliant, nc[1:]
			} else {
				c, s, unk = unk[0], UnknownCompliance, unk[1:]
			}
			if c == "" || c <= last {
				return rows, fmt.Errorf("policy %q: cluster %q is empty, listed twice or out of order", pc.PolicyID, c)
			}
			last = c
			rows.add(pc.PolicyID, c, s)
		}
	}
	return rows, nil
}

// Statements of the compliance handler. Rows are matched on the primary
// key; the listed rows come either from unnest over arrays of their
// columns or, for large bundles, from a temporary table filled by COPY.
//
// Both statements only update: placement (which rows exist) is owned by
// clusterspolicies. A listed cluster without a row of its policy is
// skipped, not inserted. The dependency rule guarantees the placement
// this bundle was computed from, or a newer one, is already written, so a
// missing row means a newer placement removed the pair; inserting it
// would bring back a pair the hub no longer places, until its next
// clusterspolicies bundle. Rows already in the wanted state are not
// written at all (no new row version, updated_at kept).
const (
	unnestComplianceRows = `unnest($2::text[], $3::text[], $4::text[]) AS s(policy_id, cluster_name, compliance)`
	unnestListedPairs    = `unnest($2::text[], $3::text[]) AS s(policy_id, cluster_name)`
	stagedComplianceRows = `pg_temp.stb_compliance_rows AS s`

	updateListedHead = `
UPDATE stb.compliance AS t
SET compliance = s.compliance, updated_at = now()
FROM `
	updateListedTail = `
WHERE t.hub = $1 AND t.policy_id = s.policy_id AND t.cluster_name = s.cluster_name
  AND t.compliance <> s.compliance`

	// updateOthersHead..Tail sets every other row of the hub compliant,
	// of the listed policies and of the policies the report leaves out
	// alike: a complete report is the whole truth for its hub, and agents
	// never list a policy whose clusters are all compliant (the hub-of-hubs
	// leaf-hub status sync: "don't send in the bundle a policy where all
	// clusters are compliant"). NOT EXISTS over the listed rows plans as an
	// anti-join against the hub's rows, read through the primary key. It
	// reads all of them (about 100 ms for 135,000) but writes only the
	// ones that change.
	updateOthersHead = `
UPDATE stb.compliance AS t
SET compliance = 'compliant', updated_at = now()
WHERE t.hub = $1 AND t.compliance <> 'compliant'
  AND NOT EXISTS (SELECT 1 FROM `
	updateOthersTail = `
	WHERE s.policy_id = t.policy_id AND s.cluster_name = t.cluster_name)`

	updateListedSQL       = updateListedHead + unnestComplianceRows + updateListedTail
	updateOthersSQL       = updateOthersHead + unnestListedPairs + updateOthersTail
	updateListedStagedSQL = updateListedHead + stagedComplianceRows + updateListedTail
	updateOthersStagedSQL = updateOthersHead + stagedComplianceRows + updateOthersTail

	// createComplianceStageSQL makes the temporary table of the staged
	// path, dropped at commit. Dropping one left by an earlier handler in
	// the same transaction first keeps the handler callable twice in one
	// transaction. Without parameters, pgx sends both statements in one
	// simple-protocol round trip.
	createComplianceStageSQL = `
DROP TABLE IF EXISTS pg_temp.stb_compliance_rows;
CREATE TEMP TABLE stb_compliance_rows (policy_id text, cluster_name text, compliance text) ON COMMIT DROP`
)

// planCompliance writes the last compliance bundle of the group: its
// listed clusters become non_compliant or unknown and every other row of
// the hub compliant, including the rows of policies the bundle does not
// mention (real agents leave fully compliant policies out).
// It is two UPDATEs whatever the size, sent as one batch, after copying the
// listed rows into a temporary table when there are many.
//
// A report built on an older placement than the one written (AtLeast lets
// it through) cannot tell pairs that placement added from compliant ones:
// they become compliant too, until the hub's next report, built on the
// newer placement, says otherwise.
func planCompliance(bundles []*bundle.Bundle) (Write, error) {
	b := bundles[len(bundles)-1]
	p, err := payloadOf[CompliancePayload](b)
	if err != nil {
		return Write{}, err
	}
	rows, err := p.rows()
	if err != nil {
		return Write{}, &PermanentError{Reason: deadletter.BadPayload, Err: fmt.Errorf("compliance of hub %q: %w", b.Hub, err)}
	}
	return writeCompliance(b.Hub, rows, rows.len() > stageRowsAbove), nil
}

// writeCompliance is the two statements of the compliance handler, after
// staging the rows in a temporary table when staged is set.
func writeCompliance(hub string, rows complianceRows, staged bool) Write {
	// An empty report is a hub all of whose placed clusters comply.
	if staged {
		return Write{
			Stage: func(ctx context.Context, db DB) error {
				return stage(ctx, db, createComplianceStageSQL, "stb_compliance_rows",
					[]string{"policy_id", "cluster_name", "compliance"}, rows.policyIDs, rows.clusters, rows.states)
			},
			Statements: []Statement{
				{What: "update listed compliance", SQL: updateListedStagedSQL, Args: []any{hub}},
				{What: "set other clusters compliant", SQL: updateOthersStagedSQL, Args: []any{hub}},
			},
		}
	}
	return Write{Statements: []Statement{
		{What: "update listed compliance", SQL: updateListedSQL, Args: []any{hub, rows.policyIDs, rows.clusters, rows.states}},
		{What: "set other clusters compliant", SQL: updateOthersSQL, Args: []any{hub, rows.policyIDs, rows.clusters}},
	}}
}
