package verify

import (
	"context"
	"slices"

	"github.com/jackc/pgx/v5"

	"github.com/stbridge/stb/pkg/sim"
)

// eventTable is one table of policy events and where its expected rows
// are in a hub's state.
type eventTable struct {
	table string
	what  string // names one event in a difference
	// sql reads hub, two keys (policy_id and cluster_name, or cluster_id
	// and cluster_name) and event_name of every row, ordered so that each
	// hub's rows come together; keys names the two keys in a difference.
	sql  string
	keys [2]string
	// expected returns a hub's events by the two keys, each list sorted.
	expected            func(*sim.HubState) map[string]map[string][]string
	missing, unexpected Kind
	// run, when not nil, returns the incarnation the run that named an
	// event started at (sim.EventRun): an unexpected event of an earlier
	// run is what that run left, not a difference.
	run func(name string) (uint64, bool)
}

var (
	policyEventTable = eventTable{
		table: "stb.policy_events",
		what:  "policy event",
		sql: `
SELECT hub, policy_id, cluster_name, event_name
FROM stb.policy_events
ORDER BY hub, policy_id, cluster_name, event_name`,
		keys:       [2]string{"policy", "cluster"},
		expected:   func(st *sim.HubState) map[string]map[string][]string { return st.Events },
		missing:    MissingEvent,
		unexpected: UnexpectedEvent,
		run:        sim.EventRun,
	}
	// The global-hub agent's events are in upstream's tables, partitioned
	// by month (reading the parent reads every partition). Their unique
	// keys are (event_name, count, created_at), or (leaf_hub_name,
	// event_name, created_at) for cluster events, so one event may be
	// stored twice, which is a difference.
	localPolicyEventTable = eventTable{
		table: "event.local_policies",
		what:  "replicated-policy event",
		sql: `
SELECT leaf_hub_name, policy_id::text, coalesce(cluster_name, ''), event_name
FROM event.local_policies
ORDER BY leaf_hub_name, policy_id, cluster_name, event_name`,
		keys:       [2]string{"policy", "cluster"},
		expected:   func(st *sim.HubState) map[string]map[string][]string { return st.LocalPolicyEvents },
		missing:    MissingLocalEvent,
		unexpected: UnexpectedLocalEvent,
	}
	// A root policy's event names no cluster: its second key is "".
	rootPolicyEventTable = eventTable{
		table: "event.local_root_policies",
		what:  "root-policy event",
		sql: `
SELECT leaf_hub_name, policy_id::text, ''::text, event_name
FROM event.local_root_policies
ORDER BY leaf_hub_name, policy_id, event_name`,
		keys:       [2]string{"policy", "cluster"},
		expected:   func(st *sim.HubState) map[string]map[string][]string { return st.LocalRootPolicyEvents },
		missing:    MissingRootEvent,
		unexpected: UnexpectedRootEvent,
	}
	clusterEventTable = eventTable{
		table: "event.managed_clusters",
		what:  "managed-cluster event",
		sql: `
SELECT leaf_hub_name, cluster_id::text, cluster_name, event_name
FROM event.managed_clusters
ORDER BY leaf_hub_name, cluster_id, cluster_name, event_name`,
		keys:       [2]string{"cluster id", "cluster"},
		expected:   func(st *sim.HubState) map[string]map[string][]string { return st.ManagedClusterEvents },
		missing:    MissingClusterEvent,
		unexpected: UnexpectedClusterEvent,
	}
)

// events compares one event table with the events each hub sent: every
// one must have its row, once, and no other row may be there. (An event
// whose key has more than its name, its creation time or its count, can be
// stored twice under one name.) Each table has its own field of the
// expected state: STB's own agent kinds fill HubState.Events
// (stb.policy_events), the global-hub agent the others, so a hub of the
// other kind expects no rows.
func (v *verifier) events(t eventTable) check {
	return func(ctx context.Context, db Querier) error {
		return v.eventRows(ctx, db, t)
	}
}

func (v *verifier) eventRows(ctx context.Context, db Querier, t eventTable) error {
	rows, err := db.Query(ctx, t.sql)
	if err != nil {
		return err
	}
	scan := newHubScan(v, t.table, func(hub string, st *sim.HubState, found map[[3]string]bool) {
		v.missingEvents(t, hub, st, found)
	})
	var hub, policy, cluster, name string
	_, err = pgx.ForEachRow(rows, []any{&hub, &policy, &cluster, &name}, func() error {
		st, found := scan.row(hub)
		if st == nil {
			return nil
		}
		if _, ok := slices.BinarySearch(t.expected(st)[policy][cluster], name); !ok {
			if t.run != nil {
				if run, ok := t.run(name); ok && v.earlier(run) {
					v.report.Earlier++
					return nil
				}
			}
			v.report.add(Category{Kind: t.unexpected}, hub, "unexpected %s %s (%s %s, %s %s)", t.what, name, t.keys[0], policy, t.keys[1], cluster)
			return nil
		}
		key := [3]string{policy, cluster, name}
		if found[key] {
			v.report.add(Category{Kind: t.unexpected}, hub, "%s %s (%s %s, %s %s) is stored twice", t.what, name, t.keys[0], policy, t.keys[1], cluster)
		}
		found[key] = true
		return nil
	})
	if err != nil {
		return err
	}
	scan.finish()
	return nil
}

// missingEvents reports the events of hub not in found.
func (v *verifier) missingEvents(t eventTable, hub string, st *sim.HubState, found map[[3]string]bool) {
	byPolicy := t.expected(st)
	if len(found) == countEvents(byPolicy) {
		return // found holds only expected events
	}
	for _, policy := range sortedKeys(byPolicy) {
		clusters := byPolicy[policy]
		for _, cluster := range sortedKeys(clusters) {
			for _, name := range clusters[cluster] {
				if !found[[3]string{policy, cluster, name}] {
					v.report.add(Category{Kind: t.missing}, hub, "%s %s (%s %s, %s %s) is missing", t.what, name, t.keys[0], policy, t.keys[1], cluster)
				}
			}
		}
	}
}

func countEvents(byPolicy map[string]map[string][]string) int {
	n := 0
	for _, clusters := range byPolicy {
		for _, names := range clusters {
			n += len(names)
		}
	}
	return n
}
