package verify

import (
	"context"

	"github.com/jackc/pgx/v5"

	"github.com/stbridge/stb/pkg/sim"
)

// complianceSQL reads every compliance row. The order keeps each hub's
// rows together; the primary key's index serves it.
const complianceSQL = `
SELECT hub, policy_id, cluster_name, compliance
FROM status.compliance
ORDER BY hub, policy_id, cluster_name`

// compliance compares status.compliance with each hub's expected rows:
// exactly the (policy, cluster) pairs of its last placement, each in the
// state its last report and the deltas after it give.
func (v *verifier) compliance(ctx context.Context, db Querier) error {
	rows, err := db.Query(ctx, complianceSQL)
	if err != nil {
		return err
	}
	scan := newHubScan(v, "status.compliance", v.missingCompliance)
	var hub, policy, cluster, state string
	_, err = pgx.ForEachRow(rows, []any{&hub, &policy, &cluster, &state}, func() error {
		st, found := scan.row(hub)
		if st == nil {
			return nil
		}
		want, ok := st.Compliance[policy][cluster]
		if !ok {
			v.report.add(Category{Kind: UnexpectedCompliance}, hub, "unexpected compliance row: policy %s on cluster %s (%s)", policy, cluster, state)
			return nil
		}
		found[[2]string{policy, cluster}] = true
		if sim.ComplianceState(state) != want {
			v.report.add(Category{Kind: WrongCompliance}, hub, "policy %s on cluster %s is %s, want %s", policy, cluster, state, want)
		}
		return nil
	})
	if err != nil {
		return err
	}
	scan.finish()
	return nil
}

// missingCompliance reports the expected compliance rows of hub not in
// found.
func (v *verifier) missingCompliance(hub string, st *sim.HubState, found map[[2]string]bool) {
	if len(found) == st.ComplianceRows() {
		return // found holds only expected pairs
	}
	for _, policy := range sortedKeys(st.Compliance) {
		clusters := st.Compliance[policy]
		for _, cluster := range sortedKeys(clusters) {
			if !found[[2]string{policy, cluster}] {
				v.report.add(Category{Kind: MissingCompliance}, hub, "compliance of policy %s on cluster %s is missing, want %s",
					policy, cluster, clusters[cluster])
			}
		}
	}
}
