package verify

import (
	"context"
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

// loadGH writes a global-hub run's expected state into the database as
// the bridge would once it has caught up: its tables, and version rows of
// its types that say nothing verify can check.
func loadGH(t testing.TB, pool *pgxpool.Pool, exp *sim.Expected) {
	t.Helper()
	ctx := context.Background()
	b := &pgx.Batch{}
	at := time.Date(2026, 1, 1, 0, 0, 0, 0, time.UTC)
	next := func() time.Time { at = at.Add(time.Second); return at }
	for _, hub := range exp.HubNames() {
		st := exp.Hubs[hub]
		b.Queue(`INSERT INTO status.hubs (name) VALUES ($1)`, hub)
		b.Queue(`INSERT INTO status.hub_heartbeats (hub, last_timestamp) VALUES ($1, now())`, hub)
		b.Queue(`INSERT INTO status.bundle_versions (hub, bundle_type, incarnation, generation) VALUES ($1, $2, 3, 17)`,
			hub, sim.TypeGHHeartbeat)
		for name, c := range st.ManagedClusters {
			b.Queue(`INSERT INTO status.managed_clusters (hub, cluster_name, cluster_id, payload)
				VALUES ($1, $2, $3, $4::jsonb)`, hub, name, c.UID, clusterPayload(t, name, c))
		}
		for policy, clusters := range st.Compliance {
			for cluster, state := range clusters {
				b.Queue(`INSERT INTO status.compliance (hub, policy_id, cluster_name, compliance)
					VALUES ($1, $2, $3, $4)`, hub, policy, cluster, string(state))
			}
		}
		for id, p := range st.LocalPolicies {
			b.Queue(`INSERT INTO status.local_policies (hub, policy_id, namespace, name, payload)
				VALUES ($1, $2, $3, $4, $5::jsonb)`, hub, id, p.Namespace, p.Name, string(p.Payload))
		}
		for source, c := range st.AlertCounts {
			b.Queue(`INSERT INTO status.security_alert_counts (hub, source, low, medium, high, critical, detail_url)
				VALUES ($1, $2, $3, $4, $5, $6, $7)`, hub, source, c.Low, c.Medium, c.High, c.Critical, c.DetailURL)
		}
		for id, stages := range st.Migrations {
			for stage, m := range stages {
				b.Queue(`INSERT INTO status.cluster_migrations (hub, migration_id, stage, error_message, payload)
					VALUES ($1, $2, $3, $4, $5::jsonb)`, hub, id, stage, m.ErrorMessage, string(m.Payload))
			}
		}
		if st.HubClusterID != "" {
			b.Queue(`INSERT INTO status.hub_info (hub, cluster_id, payload) VALUES ($1, $2, $3::jsonb)`,
				hub, st.HubClusterID, string(st.HubInfo))
		}
		for id, byName := range st.ManagedClusterEvents {
			for cluster, names := range byName {
				for _, name := range names {
					b.Queue(`INSERT INTO event.managed_cluster_events (hub, event_name, created_at, cluster_name, cluster_id, payload)
						VALUES ($1, $2, $3, $4, $5, '{}')`, hub, name, next(), cluster, id)
				}
			}
		}
		for kind, byPolicy := range map[string]map[string]map[string][]string{"root": st.LocalRootPolicyEvents, "replicated": st.LocalPolicyEvents} {
			for policy, byCluster := range byPolicy {
				for cluster, names := range byCluster {
					for _, name := range names {
						b.Queue(`INSERT INTO event.local_policy_events (hub, kind, event_name, event_count, created_at, policy_id, cluster_name, payload)
							VALUES ($1, $2, $3, 1, $4, $5, $6, '{}')`, hub, kind, name, next(), policy, cluster)
					}
				}
			}
		}
	}
	if err := pool.SendBatch(ctx, b).Close(); err != nil {
		t.Fatalf("load expected state: %v", err)
	}
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
		if hub == "" && len(st.Migrations) > 0 && len(st.AlertCounts) > 0 && st.HubClusterID != "" && len(st.LocalRootPolicyEvents) > 0 {
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
	for _, name := range exp.HubNames() {
		if name != hub && exp.Hubs[name].HubClusterID != "" {
			other = name
			break
		}
	}

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
			changes: []change{{`DELETE FROM status.local_policies WHERE hub = $1 AND policy_id = $2`, []any{hub, policy}}},
			want:    map[Category]int{{Kind: MissingLocalPolicy}: 1},
			line:    hub + ": local policy " + policy + " is missing",
		},
		{
			name: "local policy with another spec",
			changes: []change{{`UPDATE status.local_policies SET payload = jsonb_set(payload, '{spec,remediationAction}', '"remove"')
				WHERE hub = $1 AND policy_id = $2`, []any{hub, policy}}},
			want: map[Category]int{{Kind: WrongLocalPolicy}: 1},
			line: `.spec.remediationAction is "remove", want`,
		},
		{
			name: "unexpected local policy",
			changes: []change{{`INSERT INTO status.local_policies (hub, policy_id, namespace, name, payload)
				VALUES ($1, 'stowaway', 'default', 'p', '{}')`, []any{hub}}},
			want: map[Category]int{{Kind: UnexpectedLocalPolicy}: 1},
		},
		{
			name: "wrong alert counts",
			changes: []change{{`UPDATE status.security_alert_counts SET critical = critical + 1 WHERE hub = $1 AND source = $2`,
				[]any{hub, source}}},
			want: map[Category]int{{Kind: WrongAlertCounts}: 1},
		},
		{
			name:    "missing alert counts",
			changes: []change{{`DELETE FROM status.security_alert_counts WHERE hub = $1`, []any{hub}}},
			want:    map[Category]int{{Kind: MissingAlertCounts}: 1},
		},
		{
			name: "migration stage missing",
			changes: []change{{`DELETE FROM status.cluster_migrations WHERE hub = $1 AND migration_id = $2 AND stage = $3`,
				[]any{hub, migration, stage}}},
			want: map[Category]int{{Kind: MissingMigration}: 1},
		},
		{
			name: "migration kept after a resync",
			changes: []change{{`INSERT INTO status.cluster_migrations (hub, migration_id, stage, payload)
				VALUES ($1, 'forgotten', 'Validating', '{}')`, []any{hub}}},
			want: map[Category]int{{Kind: UnexpectedMigration}: 1},
		},
		{
			name: "migration with another error",
			changes: []change{{`UPDATE status.cluster_migrations SET error_message = 'boom', payload = '{"errMessage":"boom"}'
				WHERE hub = $1 AND migration_id = $2 AND stage = $3`, []any{hub, migration, stage}}},
			want: map[Category]int{{Kind: WrongMigration}: 1},
		},
		{
			name:    "hub info missing",
			changes: []change{{`DELETE FROM status.hub_info WHERE hub = $1`, []any{hub}}},
			want:    map[Category]int{{Kind: WrongHubInfo}: 1},
			line:    hub + ": no hub info, want clusterId",
		},
		{
			name:    "hub info with another payload",
			changes: []change{{`UPDATE status.hub_info SET payload = jsonb_set(payload, '{grafanaURL}', '"x"') WHERE hub = $1`, []any{hub}}},
			want:    map[Category]int{{Kind: WrongHubInfo}: 1},
			line:    ".grafanaURL is",
		},
		{
			name: "managed-cluster event stored twice",
			changes: []change{{`INSERT INTO event.managed_cluster_events (hub, event_name, created_at, cluster_name, cluster_id, payload)
				VALUES ($1, $2, now(), $3, $4, '{}')`, []any{hub, clusterEvent, clusterName, clusterID}}},
			want: map[Category]int{{Kind: UnexpectedClusterEvent}: 1},
			line: "is stored twice",
		},
		{
			name: "root-policy event missing",
			changes: []change{{`DELETE FROM event.local_policy_events WHERE hub = $1 AND kind = 'root' AND event_name = $2`,
				[]any{hub, rootEvent}}},
			want: map[Category]int{{Kind: MissingRootEvent}: 1},
		},
		{
			name: "a global-hub type's version is not checked",
			changes: []change{{`UPDATE status.bundle_versions SET incarnation = 1, generation = 1 WHERE hub = $1`, []any{hub}},
				{`DELETE FROM status.hub_info WHERE hub = $1`, []any{other}}},
			want: map[Category]int{{Kind: WrongHubInfo}: 1},
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
