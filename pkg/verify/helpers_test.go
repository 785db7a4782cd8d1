package verify

import (
	"context"
	"encoding/json"
	"strconv"
	"testing"

	"github.com/jackc/pgx/v5"
	"github.com/jackc/pgx/v5/pgxpool"

	"github.com/stbridge/stb/pkg/sim"
)

// simulate runs a simulation into nowhere and returns its expected state.
func simulate(t testing.TB, cfg sim.Config) *sim.Expected {
	t.Helper()
	discard := sim.PublisherFunc(func(context.Context, sim.Message) error { return nil })
	exp, err := sim.Run(context.Background(), cfg, discard, nil)
	if err != nil {
		t.Fatalf("simulate: %v", err)
	}
	return exp
}

// load writes exp into the database by hand, as the bridge would once it
// has caught up, with plain inserts in one batch.
func load(t testing.TB, pool *pgxpool.Pool, exp *sim.Expected) {
	t.Helper()
	ctx := context.Background()
	b := &pgx.Batch{}
	for _, hub := range exp.HubNames() {
		st := exp.Hubs[hub]
		b.Queue(`INSERT INTO stb.hubs (name) VALUES ($1)`, hub)
		if st.Heartbeat {
			b.Queue(`INSERT INTO stb.hub_heartbeats (hub, last_timestamp) VALUES ($1, now())`, hub)
		}
		for typ, v := range st.Versions {
			b.Queue(`INSERT INTO stb.bundle_versions (hub, bundle_type, incarnation, generation)
				VALUES ($1, $2, $3::numeric, $4::numeric)`,
				hub, typ, strconv.FormatUint(v.Incarnation, 10), strconv.FormatUint(v.Generation, 10))
		}
		for name, c := range st.ManagedClusters {
			b.Queue(`INSERT INTO stb.managed_clusters (hub, cluster_name, cluster_id, payload)
				VALUES ($1, $2, $3, $4::jsonb)`, hub, name, c.UID, clusterPayload(t, name, c))
		}
		for policy, clusters := range st.Compliance {
			for cluster, state := range clusters {
				b.Queue(`INSERT INTO stb.compliance (hub, policy_id, cluster_name, compliance)
					VALUES ($1, $2, $3, $4)`, hub, policy, cluster, string(state))
			}
		}
		for policy, clusters := range st.Events {
			for cluster, names := range clusters {
				for _, name := range names {
					b.Queue(`INSERT INTO stb.policy_events (hub, policy_id, cluster_name, event_name, reason, message)
						VALUES ($1, $2, $3, $4, 'PolicyStatusSync', 'loaded by hand')`, hub, policy, cluster, name)
				}
			}
		}
	}
	if err := pool.SendBatch(ctx, b).Close(); err != nil {
		t.Fatalf("load expected state: %v", err)
	}
}

// clusterPayload returns a ManagedCluster object as the bridge stores it.
func clusterPayload(t testing.TB, name string, c sim.Cluster) string {
	t.Helper()
	obj := map[string]any{
		"apiVersion": "cluster.open-cluster-management.io/v1",
		"kind":       "ManagedCluster",
		"metadata":   map[string]any{"name": name, "uid": c.UID, "labels": c.Labels},
		"status": map[string]any{"conditions": []map[string]string{
			{"type": "ManagedClusterConditionAvailable", "status": "True"},
		}},
	}
	data, err := json.Marshal(obj)
	if err != nil {
		t.Fatal(err)
	}
	return string(data)
}

// inTx runs f in a transaction that is rolled back afterwards, so that
// tests can change a loaded database without affecting each other.
func inTx(t *testing.T, pool *pgxpool.Pool, f func(tx pgx.Tx)) {
	t.Helper()
	ctx := context.Background()
	tx, err := pool.Begin(ctx)
	if err != nil {
		t.Fatalf("begin: %v", err)
	}
	defer func() {
		if err := tx.Rollback(ctx); err != nil {
			t.Errorf("rollback: %v", err)
		}
	}()
	f(tx)
}
