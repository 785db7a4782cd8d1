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

// clustersSQL reads every managed cluster row with only the part of its
// payload the expected state describes. The order keeps each hub's rows
// together (the primary key's index serves it), so that they are compared
// one hub at a time and only one hub's names are held at once.
const clustersSQL = `
SELECT hub, cluster_name, cluster_id, payload->'metadata'->'labels'
FROM status.managed_clusters
ORDER BY hub, cluster_name`

// clusters compares status.managed_clusters with each hub's last snapshot.
func (v *verifier) clusters(ctx context.Context, db Querier) error {
	rows, err := db.Query(ctx, clustersSQL)
	if err != nil {
		return err
	}
	scan := newHubScan(v, "status.managed_clusters", v.missingClusters)
	var (
		hub, name, id string
		labels        []byte
	)
	_, err = pgx.ForEachRow(rows, []any{&hub, &name, &id, &labels}, func() error {
		st, found := scan.row(hub)
		if st == nil {
			return nil
		}
		want, ok := st.ManagedClusters[name]
		if !ok {
			v.report.add(Category{Kind: UnexpectedCluster}, hub, "unexpected managed cluster %s", name)
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
