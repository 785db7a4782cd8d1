package verify

import (
	"context"

	"github.com/jackc/pgx/v5"

	"github.com/stbridge/stb/pkg/sim"
)

// complianceTable is a table of compliance rows and the agent kind that
// writes it.
type complianceTable struct {
	table string
	// sql reads hub, policy id, cluster name and state of every row. The
	// order keeps each hub's rows together.
	sql string
	// globalHub: the global-hub agent's hubs write it (else STB's own
	// agent kinds do); a hub of the other kind must have no row in it.
	globalHub bool
}

var (
	// The primary key's index serves the order.
	stbComplianceTable = complianceTable{
		table: "stb.compliance",
		sql: `
SELECT hub, policy_id, cluster_name, compliance
FROM stb.compliance
ORDER BY hub, policy_id, cluster_name`,
	}
	// Upstream's compliance has no soft delete: a row is deleted when its
	// cluster or policy goes.
	ghComplianceTable = complianceTable{
		table: "local_status.compliance",
		sql: `
SELECT leaf_hub_name, policy_id::text, cluster_name, compliance::text
FROM local_status.compliance
ORDER BY leaf_hub_name, policy_id, cluster_name`,
		globalHub: true,
	}
)

// compliance compares a table of compliance rows with each hub's expected
// rows: the table of the hubs' agent kind must hold exactly the (policy,
// cluster) pairs of each hub's last placement, each in the state its last
// report and the deltas after it give; the other table none.
func (v *verifier) compliance(t complianceTable) check {
	return func(ctx context.Context, db Querier) error {
		rows, err := db.Query(ctx, t.sql)
		if err != nil {
			return err
		}
		ours := t.globalHub == v.gh
		scan := newHubScan(v, t.table, func(hub string, st *sim.HubState, found map[[2]string]bool) {
			if ours {
				v.missingCompliance(hub, st, found)
			}
		})
		var hub, policy, cluster, state string
		_, err = pgx.ForEachRow(rows, []any{&hub, &policy, &cluster, &state}, func() error {
			st, found := scan.row(hub)
			if st == nil {
				return nil
			}
			if !ours {
				v.report.add(Category{Kind: UnexpectedCompliance}, hub, "compliance row in %s, which the hub's agent does not write: policy %s on cluster %s (%s)",
					t.table, policy, cluster, state)
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
