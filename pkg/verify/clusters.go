package verify

import (
	"context"
	"encoding/json"
	"fmt"
	"maps"
	"strings"

	"github.com/jackc/pgx/v5"

	"github.com/stbridge/stb/pkg/sim"
)

// clusterTable is a table of managed clusters and the agent kind that
// writes it.
type clusterTable struct {
	table string
	// sql reads every live row with only the part of its payload the
	// expected state describes: hub, cluster name, cluster id and
	// metadata.labels. The order keeps each hub's rows together (an index
	// serves it), so that they are compared one hub at a time and only one
	// hub's names are held at once.
	sql string
	// globalHub: the global-hub agent's hubs write it (else STB's own
	// agent kinds do); a hub of the other kind must have no row in it.
	globalHub bool
}

var (
	stbClusterTable = clusterTable{
		table: "stb.managed_clusters",
		sql: `
SELECT hub, cluster_name, cluster_id, payload->'metadata'->'labels'
FROM stb.managed_clusters
ORDER BY hub, cluster_name`,
	}
	// A soft-deleted row (deleted_at set: the cluster was deleted or left
	// out of a resync, or its hub was deleted) is absent. The key is the
	// cluster's id.k8s.io claim, so one hub may hold two live rows of one
	// name, which is a difference.
	ghClusterTable = clusterTable{
		table: "status.managed_clusters",
		sql: `
SELECT leaf_hub_name, coalesce(cluster_name, ''), cluster_id::text, payload->'metadata'->'labels'
FROM status.managed_clusters
WHERE deleted_at IS NULL
ORDER BY leaf_hub_name, cluster_name, cluster_id`,
		globalHub: true,
	}
)

// clusters compares a table of managed clusters with each hub's last
// snapshot: the table of the hubs' agent kind must hold exactly its
// clusters, the other none.
func (v *verifier) clusters(t clusterTable) check {
	return func(ctx context.Context, db Querier) error {
		rows, err := db.Query(ctx, t.sql)
		if err != nil {
			return err
		}
		ours := t.globalHub == v.gh
		scan := newHubScan(v, t.table, func(hub string, st *sim.HubState, found map[string]bool) {
			if ours {
				v.missingClusters(hub, st, found)
			}
		})
		var (
			hub, name, id string
			labels        []byte
		)
		_, err = pgx.ForEachRow(rows, []any{&hub, &name, &id, &labels}, func() error {
			st, found := scan.row(hub)
			if st == nil {
				return nil
			}
			if !ours {
				v.report.add(Category{Kind: UnexpectedCluster}, hub, "managed cluster %s in %s, which the hub's agent does not write", name, t.table)
				return nil
			}
			want, ok := st.ManagedClusters[name]
			if !ok {
				v.report.add(Category{Kind: UnexpectedCluster}, hub, "unexpected managed cluster %s", name)
				return nil
			}
			if found[name] {
				v.report.add(Category{Kind: UnexpectedCluster}, hub, "managed cluster %s is stored twice (another row has id %q)", name, id)
				return nil
			}
			found[name] = true
			if id != want.UID {
				v.report.add(Category{Kind: WrongClusterID}, hub, "managed cluster %s has id %q, want %q", name, id, want.UID)
			}
			if diff := diffLabels(labels, want.Labels); diff != "" {
				v.report.add(Category{Kind: WrongLabels}, hub, "managed cluster %s labels: %s", name, diff)
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

// missingClusters reports the expected clusters of hub not in found.
func (v *verifier) missingClusters(hub string, st *sim.HubState, found map[string]bool) {
	if len(found) == len(st.ManagedClusters) {
		return // found holds only expected names
	}
	for _, name := range sortedKeys(st.ManagedClusters) {
		if !found[name] {
			v.report.add(Category{Kind: MissingCluster}, hub, "managed cluster %s is missing", name)
		}
	}
}

// diffLabels compares the labels of a row (JSON, or nil when the payload
// has none) with the expected ones and describes the differences, or
// returns "" when they are equal.
func diffLabels(raw []byte, want map[string]string) string {
	var got map[string]string
	if raw != nil {
		if err := json.Unmarshal(raw, &got); err != nil {
			return fmt.Sprintf("%s is not a map of strings: %v", raw, err)
		}
	}
	if maps.Equal(got, want) {
		return ""
	}
	var diffs []string
	for _, k := range sortedKeys(want) {
		g, ok := got[k]
		switch {
		case !ok:
			diffs = append(diffs, fmt.Sprintf("%s missing, want %q", k, want[k]))
		case g != want[k]:
			diffs = append(diffs, fmt.Sprintf("%s=%q, want %q", k, g, want[k]))
		}
	}
	for _, k := range sortedKeys(got) {
		if _, ok := want[k]; !ok {
			diffs = append(diffs, fmt.Sprintf("%s=%q unexpected", k, got[k]))
		}
	}
	return strings.Join(diffs, ", ")
}
