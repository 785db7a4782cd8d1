package verify

import (
	"context"
	"slices"

	"github.com/jackc/pgx/v5"

	"github.com/stbridge/stb/pkg/sim"
)

// eventsSQL reads the key of every policy event. The order keeps each
// hub's rows together; the primary key's index serves it.
const eventsSQL = `
SELECT hub, policy_id, cluster_name, event_name
FROM event.policy_events
ORDER BY hub, policy_id, cluster_name, event_name`

// events compares event.policy_events with the events each hub sent: every
// one must have its row, and no other row may be there. The primary key
// makes each row unique, so an event written twice cannot show.
func (v *verifier) events(ctx context.Context, db Querier) error {
	rows, err := db.Query(ctx, eventsSQL)
	if err != nil {
		return err
	}
	scan := newHubScan(v, "event.policy_events", v.missingEvents)
	var hub, policy, cluster, name string
	_, err = pgx.ForEachRow(rows, []any{&hub, &policy, &cluster, &name}, func() error {
		st, found := scan.row(hub)
		if st == nil {
			return nil
		}
		if _, ok := slices.BinarySearch(st.Events[policy][cluster], name); !ok {
			v.report.add(Category{Kind: UnexpectedEvent}, hub, "unexpected policy event %s (policy %s, cluster %s)", name, policy, cluster)
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
func (v *verifier) missingEvents(hub string, st *sim.HubState, found map[[3]string]bool) {
	if len(found) == st.PolicyEvents() {
		return // found holds only expected events
	}
	for _, policy := range sortedKeys(st.Events) {
		clusters := st.Events[policy]
		for _, cluster := range sortedKeys(clusters) {
			for _, name := range clusters[cluster] {
				if !found[[3]string{policy, cluster, name}] {
					v.report.add(Category{Kind: MissingEvent}, hub, "policy event %s (policy %s, cluster %s) is missing", name, policy, cluster)
				}
			}
		}
	}
}
