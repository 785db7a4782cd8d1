package verify

import (
	"bytes"
	"context"
	"encoding/json"
	"fmt"
	"reflect"
	"strings"

	"github.com/jackc/pgx/v5"

	"github.com/stbridge/stb/pkg/sim"
)

// The tables only the global-hub agent's types fill: the global hub's own
// (README "The global hub's database"), but for stb.cluster_migrations,
// which upstream's manager keeps in memory. A hub of another agent kind
// expects no rows in them. A soft-deleted row (deleted_at set) is absent.

const (
	// A hub's info is its live row with the newest updated_at: when its
	// clusterId changes, the row of the old one stays (the key is
	// (cluster_id, leaf_hub_name)), live, as upstream leaves it.
	hubInfoSQL = `
SELECT DISTINCT ON (leaf_hub_name) leaf_hub_name, cluster_id::text, payload::text
FROM status.leaf_hubs
WHERE deleted_at IS NULL
ORDER BY leaf_hub_name, updated_at DESC, created_at DESC, cluster_id`

	// The namespace and name are the payload's (policy_name is generated
	// from it).
	localPoliciesSQL = `
SELECT leaf_hub_name, policy_id::text, coalesce(payload->'metadata'->>'namespace', ''), coalesce(policy_name, ''), payload::text
FROM local_spec.policies
WHERE deleted_at IS NULL
ORDER BY leaf_hub_name, policy_id`

	alertCountsSQL = `
SELECT hub_name, source, low, medium, high, critical, detail_url
FROM security.alert_counts
ORDER BY hub_name, source`

	migrationsSQL = `
SELECT hub, migration_id, stage, error_message, payload::text
FROM stb.cluster_migrations
ORDER BY hub, migration_id, stage`
)

// hubInfo compares each hub's info in status.leaf_hubs with the last info
// with a clusterId its agent sent: its clusterId and its whole data. A hub
// that sent none (or only infos without a clusterId, which the bridge
// ignores) must have no live row.
func (v *verifier) hubInfo(ctx context.Context, db Querier) error {
	rows, err := db.Query(ctx, hubInfoSQL)
	if err != nil {
		return err
	}
	type row struct{ id, payload string }
	got := map[string]row{}
	var hub, id, payload string
	if _, err := pgx.ForEachRow(rows, []any{&hub, &id, &payload}, func() error {
		if v.expected(hub, "status.leaf_hubs") != nil {
			got[hub] = row{id, payload}
		}
		return nil
	}); err != nil {
		return err
	}
	for _, hub := range v.hubNames {
		st := v.exp.Hubs[hub]
		have, ok := got[hub]
		switch {
		case st.HubClusterID == "" && ok:
			v.report.add(Category{Kind: WrongHubInfo}, hub, "hub info with clusterId %q, but the hub sent no info with a clusterId", have.id)
		case st.HubClusterID == "":
		case !ok:
			v.report.add(Category{Kind: WrongHubInfo}, hub, "no hub info, want clusterId %q", st.HubClusterID)
		case have.id != st.HubClusterID:
			v.report.add(Category{Kind: WrongHubInfo}, hub, "hub info clusterId %q, want %q", have.id, st.HubClusterID)
		default:
			if diff := diffJSON([]byte(have.payload), st.HubInfo); diff != "" {
				v.report.add(Category{Kind: WrongHubInfo}, hub, "hub info payload: %s", diff)
			}
		}
	}
	return nil
}

// localPolicies compares the live rows of local_spec.policies with the
// policies each hub's policy.localspec last gave: the same ids, each with
// its namespace, name and whole object.
func (v *verifier) localPolicies(ctx context.Context, db Querier) error {
	rows, err := db.Query(ctx, localPoliciesSQL)
	if err != nil {
		return err
	}
	scan := newHubScan(v, "local_spec.policies", func(hub string, st *sim.HubState, found map[string]bool) {
		missingKeys(v, hub, st.LocalPolicies, found, MissingLocalPolicy, "local policy %s is missing")
	})
	var hub, id, ns, name, payload string
	_, err = pgx.ForEachRow(rows, []any{&hub, &id, &ns, &name, &payload}, func() error {
		st, found := scan.row(hub)
		if st == nil {
			return nil
		}
		want, ok := st.LocalPolicies[id]
		if !ok {
			v.report.add(Category{Kind: UnexpectedLocalPolicy}, hub, "unexpected local policy %s (%s/%s)", id, ns, name)
			return nil
		}
		found[id] = true
		if ns != want.Namespace || name != want.Name {
			v.report.add(Category{Kind: WrongLocalPolicy}, hub, "local policy %s is %s/%s, want %s/%s", id, ns, name, want.Namespace, want.Name)
		}
		if diff := diffJSON([]byte(payload), want.Payload); diff != "" {
			v.report.add(Category{Kind: WrongLocalPolicy}, hub, "local policy %s (%s/%s): %s", id, ns, name, diff)
		}
		return nil
	})
	if err != nil {
		return err
	}
	scan.finish()
	return nil
}

// alertCounts compares security.alert_counts with the counts each hub's
// ACS Central last reported.
func (v *verifier) alertCounts(ctx context.Context, db Querier) error {
	rows, err := db.Query(ctx, alertCountsSQL)
	if err != nil {
		return err
	}
	scan := newHubScan(v, "security.alert_counts", func(hub string, st *sim.HubState, found map[string]bool) {
		missingKeys(v, hub, st.AlertCounts, found, MissingAlertCounts, "alert counts of %s are missing")
	})
	var (
		hub, source string
		got         sim.AlertCounts
	)
	_, err = pgx.ForEachRow(rows, []any{&hub, &source, &got.Low, &got.Medium, &got.High, &got.Critical, &got.DetailURL}, func() error {
		st, found := scan.row(hub)
		if st == nil {
			return nil
		}
		want, ok := st.AlertCounts[source]
		if !ok {
			v.report.add(Category{Kind: UnexpectedAlertCounts}, hub, "unexpected alert counts of %s", source)
			return nil
		}
		found[source] = true
		if got != want {
			v.report.add(Category{Kind: WrongAlertCounts}, hub, "alert counts of %s are %+v, want %+v", source, got, want)
		}
		return nil
	})
	if err != nil {
		return err
	}
	scan.finish()
	return nil
}

// migrations compares stb.cluster_migrations with the last report of
// each migration stage since each hub's last report with resync set.
func (v *verifier) migrations(ctx context.Context, db Querier) error {
	rows, err := db.Query(ctx, migrationsSQL)
	if err != nil {
		return err
	}
	scan := newHubScan(v, "stb.cluster_migrations", func(hub string, st *sim.HubState, found map[[2]string]bool) {
		if len(found) == countMigrations(st) {
			return
		}
		for _, id := range sortedKeys(st.Migrations) {
			for _, stage := range sortedKeys(st.Migrations[id]) {
				if !found[[2]string{id, stage}] {
					v.report.add(Category{Kind: MissingMigration}, hub, "migration %s, stage %s is missing", id, stage)
				}
			}
		}
	})
	var hub, id, stage, message, payload string
	_, err = pgx.ForEachRow(rows, []any{&hub, &id, &stage, &message, &payload}, func() error {
		st, found := scan.row(hub)
		if st == nil {
			return nil
		}
		want, ok := st.Migrations[id][stage]
		if !ok {
			v.report.add(Category{Kind: UnexpectedMigration}, hub, "unexpected migration %s, stage %s", id, stage)
			return nil
		}
		found[[2]string{id, stage}] = true
		if message != want.ErrorMessage {
			v.report.add(Category{Kind: WrongMigration}, hub, "migration %s, stage %s has error %q, want %q", id, stage, message, want.ErrorMessage)
		}
		if diff := diffJSON([]byte(payload), want.Payload); diff != "" {
			v.report.add(Category{Kind: WrongMigration}, hub, "migration %s, stage %s: %s", id, stage, diff)
		}
		return nil
	})
	if err != nil {
		return err
	}
	scan.finish()
	return nil
}

func countMigrations(st *sim.HubState) int {
	n := 0
	for _, stages := range st.Migrations {
		n += len(stages)
	}
	return n
}

// missingKeys reports the keys of want not in found.
func missingKeys[V any](v *verifier, hub string, want map[string]V, found map[string]bool, kind Kind, format string) {
	if len(found) == len(want) {
		return // found holds only expected keys
	}
	for _, k := range sortedKeys(want) {
		if !found[k] {
			v.report.add(Category{Kind: kind}, hub, format, k)
		}
	}
}

// diffJSON compares two JSON documents by value (jsonb reorders keys and
// spaces them) and describes the first difference, or returns "".
func diffJSON(got, want []byte) string {
	var g, w any
	if err := json.Unmarshal(got, &g); err != nil {
		return fmt.Sprintf("stored payload is not JSON: %v", err)
	}
	if err := json.Unmarshal(want, &w); err != nil {
		return fmt.Sprintf("expected payload is not JSON: %v", err)
	}
	return firstDiff("", g, w)
}

// firstDiff returns where g and w first differ, and how.
func firstDiff(path string, g, w any) string {
	if reflect.DeepEqual(g, w) {
		return ""
	}
	gm, gok := g.(map[string]any)
	wm, wok := w.(map[string]any)
	if gok && wok {
		keys := sortedKeys(wm)
		for k := range gm {
			if _, ok := wm[k]; !ok {
				keys = append(keys, k)
			}
		}
		for _, k := range keys {
			gv, gin := gm[k]
			wv, win := wm[k]
			switch {
			case !gin:
				return fmt.Sprintf("%s.%s missing, want %s", path, k, compact(wv))
			case !win:
				return fmt.Sprintf("%s.%s=%s unexpected", path, k, compact(gv))
			}
			if d := firstDiff(path+"."+k, gv, wv); d != "" {
				return d
			}
		}
	}
	ga, gok := g.([]any)
	wa, wok := w.([]any)
	if gok && wok && len(ga) == len(wa) {
		for i := range wa {
			if d := firstDiff(fmt.Sprintf("%s[%d]", path, i), ga[i], wa[i]); d != "" {
				return d
			}
		}
	}
	if path == "" {
		path = "."
	}
	return fmt.Sprintf("%s is %s, want %s", path, compact(g), compact(w))
}

// compact returns v as JSON, cut short.
func compact(v any) string {
	data, _ := json.Marshal(v)
	const most = 120
	if len(data) > most {
		data = append(bytes.Clone(data[:most]), "…"...)
	}
	return string(data)
}

// hasGlobalHubRows reports whether any expected hub has rows in the
// global-hub agent's tables, for the summary.
func (r *Report) hasGlobalHubRows() bool {
	return r.LocalPolicies+r.AlertCounts+r.Migrations+r.ClusterEvents > 0
}

// globalHubSummary says what the global-hub agent's tables hold.
func (r *Report) globalHubSummary() string {
	var parts []string
	for _, p := range []struct {
		n         int
		one, many string
	}{
		{r.ClusterEvents, "managed-cluster event", "managed-cluster events"},
		{r.LocalPolicies, "local policy", "local policies"},
		{r.AlertCounts, "alert count row", "alert count rows"},
		{r.Migrations, "migration row", "migration rows"},
	} {
		switch {
		case p.n == 1:
			parts = append(parts, "1 "+p.one)
		case p.n > 1:
			parts = append(parts, fmt.Sprintf("%d %s", p.n, p.many))
		}
	}
	return strings.Join(parts, ", ")
}
