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
	// sql reads hub, policy_id, cluster_name and event_name of every row,
	// ordered so that each hub's rows come together.
	sql string
	// expected returns a hub's events by policy and cluster, each list
	// sorted.
	expected            func(*sim.HubState) map[string]map[string][]string
	missing, unexpected Kind
}

var (
	policyEventTable = eventTable{
		table: "event.policy_events",
		what:  "policy event",
		sql: `
SELECT hub, policy_id, cluster_name, event_name
FROM event.policy_events
ORDER BY hub, policy_id, cluster_name, event_name`,
		expected:   func(st *sim.HubState) map[string]map[string][]string { return st.Events },
		missing:    MissingEvent,
		unexpected: UnexpectedEvent,
	}
	localPolicyEventTable = eventTable{
		table: "event.local_policy_events",
		what:  "replicated-policy event",
		sql: `
SELECT hub, policy_id, cluster_name, event_name
FROM event.local_policy_events
WHERE kind = 'replicated'
ORDER BY hub, policy_id, cluster_name, event_name`,
		expected:   func(st *sim.HubState) map[string]map[string][]string { return st.LocalPolicyEvents },
		missing:    MissingLocalEvent,
		unexpected: UnexpectedLocalEvent,
	}
)

// events compares event.policy_events with the events each hub sent.
func (v *verifier) events(ctx context.Context, db Querier) error {
	return v.eventRows(ctx, db, policyEventTable)
}

// localEvents compares the replicated-policy events of
// event.local_policy_events with those each global-hub agent sent.
func (v *verifier) localEvents(ctx context.Context, db Querier) error {
	return v.eventRows(ctx, db, localPolicyEventTable)
}

// eventRows compares one event table with the events each hub sent: every
// one must have its row, and no other row may be there. The primary key
// makes each row unique, so an event written twice cannot show.
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
			v.report.add(Category{Kind: t.unexpected}, hub, "unexpected %s %s (policy %s, cluster %s)", t.what, name, policy, cluster)
			return nil
		}
		found[[3]string{policy, cluster, name}] = true
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
					v.report.add(Category{Kind: t.missing}, hub, "%s %s (policy %s, cluster %s) is missing", t.what, name, policy, cluster)
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

// hubInfoSQL reads the clusterId each hub's managedhub.info gave.
const hubInfoSQL = `SELECT hub, cluster_id FROM status.hub_info`

// hubInfo compares status.hub_info with the clusterId each global-hub
// agent sent. Rows of hubs that sent none are not differences: the table
// belongs to the global-hub profile, whose other hubs may be elsewhere.
func (v *verifier) hubInfo(ctx context.Context, db Querier) error {
	rows, err := db.Query(ctx, hubInfoSQL)
	if err != nil {
		return err
	}
	got := map[string]string{}
	var hub, id string
	if _, err := pgx.ForEachRow(rows, []any{&hub, &id}, func() error {
		if v.expected(hub, "status.hub_info") != nil {
			got[hub] = id
		}
		return nil
	}); err != nil {
		return err
	}
	for _, hub := range v.hubNames {
		want := v.exp.Hubs[hub].HubClusterID
		if have, ok := got[hub]; want != "" && (!ok || have != want) {
			v.report.add(Category{Kind: WrongHubInfo}, hub, "hub info clusterId %q, want %q", have, want)
		}
	}
	return nil
}
