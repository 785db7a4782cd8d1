package verify

import (
	"context"
	"errors"
	"fmt"
	"maps"
	"slices"
	"strings"

	"github.com/jackc/pgx/v5"

	"github.com/stbridge/stb/pkg/sim"
)

// Querier runs a query; *pgxpool.Pool, *pgx.Conn and pgx.Tx have it. Pass a
// read-only REPEATABLE READ transaction to compare one snapshot of a
// database the bridge is still writing to; with a pool, each table is read
// at its own moment.
type Querier interface {
	Query(ctx context.Context, sql string, args ...any) (pgx.Rows, error)
}

// Verify compares the database with exp and reports every difference. Its
// error is for failures to read the database; differences are in the
// Report, whose OK says whether there were any.
func Verify(ctx context.Context, db Querier, exp *sim.Expected) (*Report, error) {
	if exp == nil {
		return nil, errors.New("verify: no expected state")
	}
	for name, st := range exp.Hubs {
		if st == nil {
			return nil, fmt.Errorf("verify: expected state of hub %q is nil", name)
		}
		for _, byPolicy := range []map[string]map[string][]string{st.Events, st.LocalPolicyEvents, st.LocalRootPolicyEvents, st.ManagedClusterEvents} {
			for policy, clusters := range byPolicy {
				for cluster, names := range clusters {
					if !slices.IsSorted(names) {
						return nil, fmt.Errorf("verify: expected events of hub %q, policy %q, cluster %q are not sorted", name, policy, cluster)
					}
				}
			}
		}
	}
	v := &verifier{
		exp:       exp,
		gh:        exp.GlobalHubAgent(),
		hubNames:  exp.HubNames(),
		report:    &Report{Hubs: len(exp.Hubs)},
		strangers: make(map[string][]string),
	}
	for _, h := range exp.Hubs {
		v.report.Versions += len(h.Versions)
		v.report.Clusters += len(h.ManagedClusters)
		v.report.ComplianceRows += h.ComplianceRows()
		v.report.Events += h.PolicyEvents() + countEvents(h.LocalPolicyEvents) + countEvents(h.LocalRootPolicyEvents)
		v.report.ClusterEvents += countEvents(h.ManagedClusterEvents)
		v.report.LocalPolicies += len(h.LocalPolicies)
		v.report.AlertCounts += len(h.AlertCounts)
		v.report.Migrations += countMigrations(h)
	}
	// Both agent kinds' tables are read whatever the run's: the tables of
	// the other kind must hold no rows of its hubs.
	for _, check := range []struct {
		table string
		run   check
	}{
		{"stb.bundle_versions", v.versions},
		{stbClusterTable.table, v.clusters(stbClusterTable)},
		{ghClusterTable.table, v.clusters(ghClusterTable)},
		{stbComplianceTable.table, v.compliance(stbComplianceTable)},
		{ghComplianceTable.table, v.compliance(ghComplianceTable)},
		{policyEventTable.table, v.events(policyEventTable)},
		{localPolicyEventTable.table, v.events(localPolicyEventTable)},
		{rootPolicyEventTable.table, v.events(rootPolicyEventTable)},
		{clusterEventTable.table, v.events(clusterEventTable)},
		{"status.leaf_hubs", v.hubInfo},
		{"local_spec.policies", v.localPolicies},
		{"security.alert_counts", v.alertCounts},
		{"stb.cluster_migrations", v.migrations},
		{stbHeartbeatTable.table, v.heartbeats(stbHeartbeatTable)},
		{ghHeartbeatTable.table, v.heartbeats(ghHeartbeatTable)},
		{"stb.hubs", v.hubs},
	} {
		if err := check.run(ctx, db); err != nil {
			return nil, fmt.Errorf("verify %s: %w", check.table, err)
		}
	}
	v.reportStrangers()
	v.report.finish()
	return v.report, nil
}

// check compares one table with the expected state.
type check func(context.Context, Querier) error

// verifier holds the state of one Verify call.
type verifier struct {
	exp *sim.Expected
	// gh: the expected hubs ran the global-hub agent
	// (sim.Expected.GlobalHubAgent), so their managed clusters,
	// compliance and heartbeats are in the global hub's own tables, not
	// in STB's.
	gh bool
	// hubNames are the expected hubs, sorted: loops over them report in a
	// stable order, which matters once there are more than MaxMismatches.
	hubNames []string
	report   *Report
	// strangers maps hubs that are not expected to the tables they have
	// rows in, in the order read.
	strangers map[string][]string
}

// expected returns the expected state of hub, or nil, noting the table in
// which a hub that is not expected has rows.
func (v *verifier) expected(hub, table string) *sim.HubState {
	if st, ok := v.exp.Hubs[hub]; ok {
		return st
	}
	tables := v.strangers[hub]
	if len(tables) == 0 || tables[len(tables)-1] != table {
		v.strangers[hub] = append(tables, table)
	}
	return nil
}

// reportStrangers reports the hubs that have rows but are not expected.
func (v *verifier) reportStrangers() {
	for _, hub := range sortedKeys(v.strangers) {
		v.report.add(Category{Kind: UnexpectedHub}, hub, "not expected, but has rows in %s", strings.Join(v.strangers[hub], ", "))
	}
}

// earlier reports whether a version of incarnation inc is older than the
// run the expected state describes: left by an earlier run.
func (v *verifier) earlier(inc uint64) bool {
	return inc < v.exp.FirstIncarnation
}

// sortedKeys returns the keys of m, sorted.
func sortedKeys[V any](m map[string]V) []string {
	return slices.Sorted(maps.Keys(m))
}
