package verify

import (
	"context"
	"encoding/json"
	"maps"
	"strings"
	"testing"
	"time"

	"github.com/jackc/pgx/v5"
	"github.com/jackc/pgx/v5/pgxpool"

	"github.com/stbridge/stb/pkg/db/dbtest"
	"github.com/stbridge/stb/pkg/sim"
)

// ghDiscard takes a global-hub run's messages and keeps nothing.
type ghDiscard struct{}

func (ghDiscard) Publish(context.Context, sim.Message) error     { return nil }
func (ghDiscard) PublishGH(context.Context, sim.GHMessage) error { return nil }

// simulateGH runs a global-hub simulation into nowhere.
func simulateGH(t testing.TB, cfg sim.Config) *sim.Expected {
	t.Helper()
	cfg.Agent = sim.AgentGlobalHub
	exp, err := sim.Run(context.Background(), cfg, ghDiscard{}, nil)
	if err != nil {
		t.Fatalf("simulate: %v", err)
	}
	return exp
}

// ghEventMonth is the month the events loadGH writes happened in: the
// event tables are partitioned by month, so it makes sure the month has
// its partitions.
var ghEventMonth = time.Date(2026, 1, 1, 0, 0, 0, 0, time.UTC)

// loadGH writes a global-hub run's expected state into the database as
// the bridge would once it has caught up: the global hub's own tables
// (and stb.cluster_migrations), STB's bookkeeping (stb.hubs), and version
// rows of its types that say nothing verify can check.
func loadGH(t testing.TB, pool *pgxpool.Pool, exp *sim.Expected) {
	t.Helper()
	ctx := context.Background()
	if _, err := pool.Exec(ctx, `SELECT stb.ensure_month_partitions(t, ARRAY[$1::timestamp])
		FROM unnest(ARRAY['event.managed_clusters', 'event.local_policies', 'event.local_root_policies', 'history.local_compliance']) AS t`,
		ghEventMonth); err != nil {
		t.Fatalf("partitions: %v", err)
	}
	b := &pgx.Batch{}
	at := ghEventMonth
	next := func() time.Time { at = at.Add(time.Second); return at }
	for _, hub := range exp.HubNames() {
		st := exp.Hubs[hub]
		b.Queue(`INSERT INTO stb.hubs (name) VALUES ($1)`, hub)
		if st.Heartbeat {
			b.Queue(`INSERT INTO status.leaf_hub_heartbeats (leaf_hub_name, last_timestamp) VALUES ($1, now() AT TIME ZONE 'UTC')`, hub)
		}
		b.Queue(`INSERT INTO stb.bundle_versions (hub, bundle_type, incarnation, generation) VALUES ($1, $2, 3, 17)`,
			hub, sim.TypeGHHeartbeat)
		for name, c := range st.ManagedClusters {
			b.Queue(`INSERT INTO status.managed_clusters (leaf_hub_name, cluster_id, payload, error)
				VALUES ($1, $2, $3::jsonb, 'none')`, hub, c.UID, ghClusterPayload(t, name, c))
		}
		for policy, clusters := range st.Compliance {
			for cluster, state := range clusters {
				b.Queue(`INSERT INTO local_status.compliance (policy_id, cluster_name, leaf_hub_name, error, compliance)
					VALUES ($1, $2, $3, 'none', $4)`, policy, cluster, hub, string(state))
			}
		}
		for id, p := range st.LocalPolicies {
			b.Queue(`INSERT INTO local_spec.policies (leaf_hub_name, policy_id, payload)
				VALUES ($1, $2, $3::jsonb)`, hub, id, string(p.Payload))
		}
		for source, c := range st.AlertCounts {
			b.Queue(`INSERT INTO security.alert_counts (hub_name, source, low, medium, high, critical, detail_url)
				VALUES ($1, $2, $3, $4, $5, $6, $7)`, hub, source, c.Low, c.Medium, c.High, c.Critical, c.DetailURL)
		}
		for id, stages := range st.Migrations {
			for stage, m := range stages {
				b.Queue(`INSERT INTO stb.cluster_migrations (hub, migration_id, stage, error_message, payload)
					VALUES ($1, $2, $3, $4, $5::jsonb)`, hub, id, stage, m.ErrorMessage, string(m.Payload))
			}
		}
		if st.HubClusterID != "" {
			b.Queue(`INSERT INTO status.leaf_hubs (leaf_hub_name, cluster_id, payload) VALUES ($1, $2, $3::jsonb)`,
				hub, st.HubClusterID, string(st.HubInfo))
		}
		for id, byName := range st.ManagedClusterEvents {
			for cluster, names := range byName {
				for _, name := range names {
					b.Queue(`INSERT INTO event.managed_clusters (event_namespace, event_name, cluster_name, cluster_id, leaf_hub_name, event_type, created_at)
						VALUES ($2, $3, $2, $4, $1, 'Normal', $5)`, hub, cluster, name, id, next())
				}
			}
		}
		for policy, byCluster := range st.LocalRootPolicyEvents {
			for _, names := range byCluster {
				for _, name := range names {
					b.Queue(`INSERT INTO event.local_root_policies (event_name, policy_id, leaf_hub_name, count, created_at, compliance)
						VALUES ($1, $2, $3, 1, $4, 'compliant')`, name, policy, hub, next())
				}
			}
		}
		for policy, byCluster := range st.LocalPolicyEvents {
			for cluster, names := range byCluster {
				id := st.ManagedClusters[cluster].UID // a cluster gone since has none
				if id == "" {
					id = "00000000-0000-0000-0000-000000000000"
				}
				for _, name := range names {
					b.Queue(`INSERT INTO event.local_policies (event_name, policy_id, cluster_id, cluster_name, leaf_hub_name, count, created_at, compliance)
						VALUES ($1, $2, $3, $4, $5, 1, $6, 'compliant')`, name, policy, id, cluster, hub, next())
				}
			}
		}
	}
	if err := pool.SendBatch(ctx, b).Close(); err != nil {
		t.Fatalf("load expected state: %v", err)
	}
}

// ghClusterPayload returns a ManagedCluster object as the global-hub agent
// sends it: known by its id.k8s.io claim, which status.managed_clusters
// keys it by.
func ghClusterPayload(t testing.TB, name string, c sim.Cluster) string {
	t.Helper()
	obj := map[string]any{
		"apiVersion": "cluster.open-cluster-management.io/v1",
		"kind":       "ManagedCluster",
		"metadata":   map[string]any{"name": name, "labels": c.Labels},
		"status": map[string]any{"clusterClaims": []map[string]string{
			{"name": sim.ClusterIDClaim, "value": c.UID},
		}},
	}
	data, err := json.Marshal(obj)
	if err != nil {
		t.Fatal(err)
	}
	return string(data)
}

// TestVerifyGlobalHub: the tables of the global-hub agent's types are
// compared row by row, payloads by value; the versions of its types are
// not checked (the bridge maps them onto runs of its own).
func TestVerifyGlobalHub(t *testing.T) {
	pool, _ := dbtest.New(t)
	ctx := context.Background()
	exp := simulateGH(t, sim.Config{Hubs: 5, Clusters: 6, Generations: 30, Seed: 91, RestartProbability: 0.1})
	loadGH(t, pool, exp)
	rep, err := Verify(ctx, pool, exp)
	if err != nil {
		t.Fatalf("Verify: %v", err)
	}
	if !rep.OK() {
		t.Fatalf("Verify of the expected state:\n%s", rep.Summary())
	}
	if rep.LocalPolicies == 0 || rep.AlertCounts == 0 || rep.Migrations == 0 || rep.ClusterEvents == 0 || rep.Events == 0 {
		t.Fatalf("a table left empty: %s", rep.Summary())
	}
	if s := rep.Summary(); !strings.Contains(s, "local policies") || !strings.Contains(s, "managed-cluster events") {
		t.Errorf("summary: %s", s)
	}

	// A hub with every kind of row, and another with hub info.
	var hub, other string
	for _, name := range exp.HubNames() {
		st := exp.Hubs[name]
		if hub == "" && len(st.Migrations) > 0 && len(st.AlertCounts) > 0 && st.HubClusterID != "" && len(st.LocalRootPolicyEvents) > 0 &&
			len(st.LocalPolicyEvents) > 0 && st.ComplianceRows() > 0 && len(st.ManagedClusters) > 0 {
			hub = name
		}
	}
	if hub == "" {
		t.Fatal("no hub has every kind of row; pick another seed")
	}
	st := exp.Hubs[hub]
	policy := sortedKeys(st.LocalPolicies)[0]
	migration := sortedKeys(st.Migrations)[0]
	stage := sortedKeys(st.Migrations[migration])[0]
	source := sortedKeys(st.AlertCounts)[0]
	clusterID := sortedKeys(st.ManagedClusterEvents)[0]
	clusterName := sortedKeys(st.ManagedClusterEvents[clusterID])[0]
	clusterEvent := st.ManagedClusterEvents[clusterID][clusterName][0]
	rootPolicy := sortedKeys(st.LocalRootPolicyEvents)[0]
	rootEvent := st.LocalRootPolicyEvents[rootPolicy][""][0]
	replPolicy := sortedKeys(st.LocalPolicyEvents)[0]
	replCluster := sortedKeys(st.LocalPolicyEvents[replPolicy])[0]
	replEvent := st.LocalPolicyEvents[replPolicy][replCluster][0]
	cluster := sortedKeys(st.ManagedClusters)[0]
	compPolicy := sortedKeys(st.Compliance)[0]
	placed := sortedKeys(st.Compliance[compPolicy])[0]
	state := st.Compliance[compPolicy][placed]
	otherState := sim.Compliant
	if state == sim.Compliant {
		otherState = sim.NonCompliant
	}
	for _, name := range exp.HubNames() {
		if name != hub && exp.Hubs[name].HubClusterID != "" {
			other = name
			break
		}
	}
	const (
		stranger = "0badc0de-0000-4000-8000-000000000001" // a uuid no simulated object has
		oldID    = "0badc0de-0000-4000-8000-000000000002"
	)
	// Upstream's soft delete, as its hub management writes it
	// (stolostron/multicluster-global-hub
	// manager/pkg/processes/hubmanagement/hub_management.go, cleanup).
	const softDelete = `deleted_at = now() AT TIME ZONE 'UTC'`

	type change struct {
		sql  string
		args []any
	}
	tests := []struct {
		name    string
		changes []change
		want    map[Category]int
		line    string
	}{
		{
			name:    "missing local policy",
			changes: []change{{`DELETE FROM local_spec.policies WHERE leaf_hub_name = $1 AND policy_id = $2`, []any{hub, policy}}},
			want:    map[Category]int{{Kind: MissingLocalPolicy}: 1},
			line:    hub + ": local policy " + policy + " is missing",
		},
		{
			name:    "soft-deleted local policy",
			changes: []change{{`UPDATE local_spec.policies SET ` + softDelete + ` WHERE leaf_hub_name = $1 AND policy_id = $2`, []any{hub, policy}}},
			want:    map[Category]int{{Kind: MissingLocalPolicy}: 1},
			line:    hub + ": local policy " + policy + " is missing",
		},
		{
			name: "local policy with another spec",
			changes: []change{{`UPDATE local_spec.policies SET payload = jsonb_set(payload, '{spec,remediationAction}', '"remove"')
				WHERE leaf_hub_name = $1 AND policy_id = $2`, []any{hub, policy}}},
			want: map[Category]int{{Kind: WrongLocalPolicy}: 1},
			line: `.spec.remediationAction is "remove", want`,
		},
		{
			name: "local policy with another name",
			changes: []change{{`UPDATE local_spec.policies SET payload = jsonb_set(payload, '{metadata,name}', '"renamed"')
				WHERE leaf_hub_name = $1 AND policy_id = $2`, []any{hub, policy}}},
			want: map[Category]int{{Kind: WrongLocalPolicy}: 1},
			line: "is default/renamed, want default/",
		},
		{
			name: "unexpected local policy",
			changes: []change{{`INSERT INTO local_spec.policies (leaf_hub_name, policy_id, payload)
				VALUES ($1, $2, '{"metadata": {"namespace": "default", "name": "p"}}')`, []any{hub, stranger}}},
			want: map[Category]int{{Kind: UnexpectedLocalPolicy}: 1},
			line: "unexpected local policy " + stranger + " (default/p)",
		},
		{
			name: "soft-deleted stranger policy",
			changes: []change{{`INSERT INTO local_spec.policies (leaf_hub_name, policy_id, payload, deleted_at)
				VALUES ($1, $2, '{"metadata": {"namespace": "default", "name": "p"}}', now() AT TIME ZONE 'UTC')`, []any{hub, stranger}}},
			want: map[Category]int{},
		},
		{
			name: "wrong alert counts",
			changes: []change{{`UPDATE security.alert_counts SET critical = critical + 1 WHERE hub_name = $1 AND source = $2`,
				[]any{hub, source}}},
			want: map[Category]int{{Kind: WrongAlertCounts}: 1},
		},
		{
			name:    "missing alert counts",
			changes: []change{{`DELETE FROM security.alert_counts WHERE hub_name = $1`, []any{hub}}},
			want:    map[Category]int{{Kind: MissingAlertCounts}: 1},
		},
		{
			name: "migration stage missing",
			changes: []change{{`DELETE FROM stb.cluster_migrations WHERE hub = $1 AND migration_id = $2 AND stage = $3`,
				[]any{hub, migration, stage}}},
			want: map[Category]int{{Kind: MissingMigration}: 1},
		},
		{
			name: "migration kept after a resync",
			changes: []change{{`INSERT INTO stb.cluster_migrations (hub, migration_id, stage, payload)
				VALUES ($1, 'forgotten', 'Validating', '{}')`, []any{hub}}},
			want: map[Category]int{{Kind: UnexpectedMigration}: 1},
		},
		{
			name: "migration with another error",
			changes: []change{{`UPDATE stb.cluster_migrations SET error_message = 'boom', payload = '{"errMessage":"boom"}'
				WHERE hub = $1 AND migration_id = $2 AND stage = $3`, []any{hub, migration, stage}}},
			want: map[Category]int{{Kind: WrongMigration}: 1},
		},
		{
			name:    "hub info missing",
			changes: []change{{`DELETE FROM status.leaf_hubs WHERE leaf_hub_name = $1`, []any{hub}}},
			want:    map[Category]int{{Kind: WrongHubInfo}: 1},
			line:    hub + ": no hub info, want clusterId",
		},
		{
			name:    "hub info soft-deleted",
			changes: []change{{`UPDATE status.leaf_hubs SET ` + softDelete + ` WHERE leaf_hub_name = $1`, []any{hub}}},
			want:    map[Category]int{{Kind: WrongHubInfo}: 1},
			line:    hub + ": no hub info, want clusterId",
		},
		{
			name:    "hub info with another payload",
			changes: []change{{`UPDATE status.leaf_hubs SET payload = jsonb_set(payload, '{grafanaURL}', '"x"') WHERE leaf_hub_name = $1`, []any{hub}}},
			want:    map[Category]int{{Kind: WrongHubInfo}: 1},
			line:    ".grafanaURL is",
		},
		{
			// The key is (cluster_id, leaf_hub_name): the row of the
			// hub's clusterId before stays live, older.
			name: "the row of an earlier clusterId stays",
			changes: []change{{`INSERT INTO status.leaf_hubs (leaf_hub_name, cluster_id, payload, created_at, updated_at)
				VALUES ($1, $2, '{}', now() - interval '1 day', now() - interval '1 day')`, []any{hub, oldID}}},
			want: map[Category]int{},
		},
		{
			name: "a newer row of another clusterId",
			changes: []change{{`INSERT INTO status.leaf_hubs (leaf_hub_name, cluster_id, payload, created_at, updated_at)
				VALUES ($1, $2, '{}', now() + interval '1 day', now() + interval '1 day')`, []any{hub, oldID}}},
			want: map[Category]int{{Kind: WrongHubInfo}: 1},
			line: hub + `: hub info clusterId "` + oldID + `"`,
		},
		{
			name: "managed-cluster event stored twice",
			changes: []change{{`INSERT INTO event.managed_clusters (event_namespace, event_name, cluster_name, cluster_id, leaf_hub_name, event_type, created_at)
				VALUES ($3, $2, $3, $4, $1, 'Normal', $5)`, []any{hub, clusterEvent, clusterName, clusterID, ghEventMonth.Add(time.Hour * 24 * 20)}}},
			want: map[Category]int{{Kind: UnexpectedClusterEvent}: 1},
			line: "is stored twice",
		},
		{
			name: "root-policy event missing",
			changes: []change{{`DELETE FROM event.local_root_policies WHERE leaf_hub_name = $1 AND event_name = $2`,
				[]any{hub, rootEvent}}},
			want: map[Category]int{{Kind: MissingRootEvent}: 1},
		},
		{
			name: "replicated-policy event missing",
			changes: []change{{`DELETE FROM event.local_policies WHERE leaf_hub_name = $1 AND event_name = $2`,
				[]any{hub, replEvent}}},
			want: map[Category]int{{Kind: MissingLocalEvent}: 1},
			line: "replicated-policy event " + replEvent + " (policy " + replPolicy + ", cluster " + replCluster + ") is missing",
		},
		{
			name: "a global-hub type's version is not checked",
			changes: []change{{`UPDATE stb.bundle_versions SET incarnation = 1, generation = 1 WHERE hub = $1`, []any{hub}},
				{`DELETE FROM status.leaf_hubs WHERE leaf_hub_name = $1`, []any{other}}},
			want: map[Category]int{{Kind: WrongHubInfo}: 1},
		},
		{
			name:    "missing cluster",
			changes: []change{{`DELETE FROM status.managed_clusters WHERE leaf_hub_name = $1 AND cluster_name = $2`, []any{hub, cluster}}},
			want:    map[Category]int{{Kind: MissingCluster}: 1},
			line:    hub + ": managed cluster " + cluster + " is missing",
		},
		{
			name:    "soft-deleted cluster",
			changes: []change{{`UPDATE status.managed_clusters SET ` + softDelete + ` WHERE leaf_hub_name = $1 AND cluster_name = $2`, []any{hub, cluster}}},
			want:    map[Category]int{{Kind: MissingCluster}: 1},
			line:    hub + ": managed cluster " + cluster + " is missing",
		},
		{
			// A cluster known by another claim before, soft-deleted then.
			name: "soft-deleted row of a cluster's earlier id",
			changes: []change{{`INSERT INTO status.managed_clusters (leaf_hub_name, cluster_id, payload, error, deleted_at)
				VALUES ($1, $2, jsonb_build_object('metadata', jsonb_build_object('name', $3::text)), 'none', now() AT TIME ZONE 'UTC')`,
				[]any{hub, oldID, cluster}}},
			want: map[Category]int{},
		},
		{
			name: "two live rows of one cluster",
			changes: []change{{`INSERT INTO status.managed_clusters (leaf_hub_name, cluster_id, payload, error)
				SELECT leaf_hub_name, $3, payload, error FROM status.managed_clusters WHERE leaf_hub_name = $1 AND cluster_name = $2`,
				[]any{hub, cluster, "ffffffff-0000-4000-8000-000000000003"}}},
			want: map[Category]int{{Kind: UnexpectedCluster}: 1},
			line: hub + ": managed cluster " + cluster + " is stored twice",
		},
		{
			name: "cluster keyed by another id",
			changes: []change{{`UPDATE status.managed_clusters SET cluster_id = $3 WHERE leaf_hub_name = $1 AND cluster_name = $2`,
				[]any{hub, cluster, stranger}}},
			want: map[Category]int{{Kind: WrongClusterID}: 1},
			line: `has id "` + stranger + `"`,
		},
		{
			name: "changed label",
			changes: []change{{`UPDATE status.managed_clusters SET payload = jsonb_set(payload, '{metadata,labels,generation}', '"999"')
				WHERE leaf_hub_name = $1 AND cluster_name = $2`, []any{hub, cluster}}},
			want: map[Category]int{{Kind: WrongLabels}: 1},
			line: `generation="999", want`,
		},
		{
			name: "a cluster of another hub",
			changes: []change{{`UPDATE status.managed_clusters SET leaf_hub_name = $2 WHERE leaf_hub_name = $1 AND cluster_name = $3`,
				[]any{hub, other, cluster}}},
			want: map[Category]int{{Kind: MissingCluster}: 1, {Kind: UnexpectedCluster}: 1},
		},
		{
			name: "a cluster in STB's own table",
			changes: []change{{`INSERT INTO stb.managed_clusters (hub, cluster_name, cluster_id, payload) VALUES ($1, $2, $3, '{}')`,
				[]any{hub, cluster, st.ManagedClusters[cluster].UID}}},
			want: map[Category]int{{Kind: UnexpectedCluster}: 1},
			line: hub + ": managed cluster " + cluster + " in stb.managed_clusters, which the hub's agent does not write",
		},
		{
			name: "compliance in the wrong state",
			changes: []change{{`UPDATE local_status.compliance SET compliance = $4
				WHERE leaf_hub_name = $1 AND policy_id = $2 AND cluster_name = $3`, []any{hub, compPolicy, placed, string(otherState)}}},
			want: map[Category]int{{Kind: WrongCompliance}: 1},
			line: hub + ": policy " + compPolicy + " on cluster " + placed + " is " + string(otherState),
		},
		{
			name: "missing compliance row",
			changes: []change{{`DELETE FROM local_status.compliance
				WHERE leaf_hub_name = $1 AND policy_id = $2 AND cluster_name = $3`, []any{hub, compPolicy, placed}}},
			want: map[Category]int{{Kind: MissingCompliance}: 1},
		},
		{
			name: "unexpected compliance row",
			changes: []change{{`INSERT INTO local_status.compliance (policy_id, cluster_name, leaf_hub_name, error, compliance)
				VALUES ($2, 'stowaway', $1, 'none', 'pending')`, []any{hub, compPolicy}}},
			want: map[Category]int{{Kind: UnexpectedCompliance}: 1},
			line: "unexpected compliance row: policy " + compPolicy + " on cluster stowaway (pending)",
		},
		{
			name: "compliance in STB's own table",
			changes: []change{{`INSERT INTO stb.compliance (hub, policy_id, cluster_name, compliance) VALUES ($1, $2, $3, 'compliant')`,
				[]any{hub, compPolicy, placed}}},
			want: map[Category]int{{Kind: UnexpectedCompliance}: 1},
			line: "compliance row in stb.compliance, which the hub's agent does not write",
		},
		{
			name:    "missing heartbeat",
			changes: []change{{`DELETE FROM status.leaf_hub_heartbeats WHERE leaf_hub_name = $1`, []any{hub}}},
			want:    map[Category]int{{Kind: MissingHeartbeat}: 1},
			line:    hub + ": no heartbeat",
		},
		{
			// Upstream's manager marks a silent hub inactive; the row
			// stays, and so does the hub's heartbeat.
			name:    "heartbeat marked inactive",
			changes: []change{{`UPDATE status.leaf_hub_heartbeats SET status = 'inactive' WHERE leaf_hub_name = $1`, []any{hub}}},
			want:    map[Category]int{},
		},
		{
			// STB's lifecycle bookkeeping: neither required nor a
			// difference for the global-hub agent's hubs.
			name:    "a row in stb.hub_heartbeats",
			changes: []change{{`INSERT INTO stb.hub_heartbeats (hub, last_timestamp) VALUES ($1, now())`, []any{hub}}},
			want:    map[Category]int{},
		},
		{
			name: "a stranger in the global hub's tables",
			changes: []change{
				{`INSERT INTO status.managed_clusters (leaf_hub_name, cluster_id, payload, error) VALUES ('intruder', $1, '{"metadata": {"name": "c"}}', 'none')`, []any{stranger}},
				{`INSERT INTO status.leaf_hub_heartbeats (leaf_hub_name) VALUES ('intruder')`, nil},
				{`INSERT INTO security.alert_counts (hub_name, source, low, medium, high, critical, detail_url) VALUES ('intruder', 's', 0, 0, 0, 0, '')`, nil},
			},
			want: map[Category]int{{Kind: UnexpectedHub}: 1},
			line: "intruder: not expected, but has rows in status.managed_clusters, security.alert_counts, status.leaf_hub_heartbeats",
		},
		{
			// What upstream's hub management leaves of a hub it cleans
			// up: soft-deleted clusters and info, soft-deleted policies,
			// no compliance, its heartbeat row marked inactive.
			name: "a stranger upstream cleaned up",
			changes: []change{
				{`INSERT INTO status.managed_clusters (leaf_hub_name, cluster_id, payload, error, deleted_at)
					VALUES ('intruder', $1, '{"metadata": {"name": "c"}}', 'none', now() AT TIME ZONE 'UTC')`, []any{stranger}},
				{`INSERT INTO status.leaf_hubs (leaf_hub_name, cluster_id, payload, deleted_at) VALUES ('intruder', $1, '{}', now() AT TIME ZONE 'UTC')`, []any{stranger}},
				{`INSERT INTO local_spec.policies (leaf_hub_name, policy_id, payload, deleted_at) VALUES ('intruder', $1, '{}', now() AT TIME ZONE 'UTC')`, []any{stranger}},
			},
			want: map[Category]int{},
		},
	}
	for _, tt := range tests {
		t.Run(tt.name, func(t *testing.T) {
			inTx(t, pool, func(tx pgx.Tx) {
				for _, c := range tt.changes {
					if _, err := tx.Exec(ctx, c.sql, c.args...); err != nil {
						t.Fatalf("perturb: %v", err)
					}
				}
				rep, err := Verify(ctx, tx, exp)
				if err != nil {
					t.Fatalf("Verify: %v", err)
				}
				summary := rep.Summary()
				if !maps.Equal(rep.Counts, tt.want) {
					t.Errorf("counts %v, want %v\n%s", rep.Counts, tt.want, summary)
				}
				if tt.line != "" && !strings.Contains(summary, tt.line) {
					t.Errorf("summary lacks %q:\n%s", tt.line, summary)
				}
			})
		})
	}
}

func TestDiffJSON(t *testing.T) {
	tests := []struct{ got, want, diff string }{
		{`{"a": 1, "b": [1, 2]}`, `{"b":[1,2],"a":1}`, ""},
		{`{"a": 1}`, `{"a": 2}`, ".a is 1, want 2"},
		{`{"a": {"b": "x"}}`, `{"a": {"b": "y"}}`, `.a.b is "x", want "y"`},
		{`{"a": 1}`, `{"a": 1, "c": true}`, ".c missing, want true"},
		{`{"a": 1, "z": null}`, `{"a": 1}`, ".z=null unexpected"},
		{`[1, 2]`, `[1, 3]`, "[1] is 2, want 3"},
		{`[1]`, `[1, 2]`, ". is [1], want [1,2]"},
		{`x`, `{}`, "stored payload is not JSON"},
	}
	for _, tt := range tests {
		if got := diffJSON([]byte(tt.got), []byte(tt.want)); !strings.Contains(got, tt.diff) || (tt.diff == "") != (got == "") {
			t.Errorf("diffJSON(%s, %s) = %q, want %q", tt.got, tt.want, got, tt.diff)
		}
	}
}
