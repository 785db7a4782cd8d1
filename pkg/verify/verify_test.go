package verify

import (
	"context"
	"errors"
	"maps"
	"strings"
	"testing"

	"github.com/jackc/pgx/v5"

	"github.com/stbridge/stb/pkg/db/dbtest"
	"github.com/stbridge/stb/pkg/sim"
)

func TestVerify(t *testing.T) {
	pool, _ := dbtest.New(t)
	ctx := context.Background()
	// Incarnations above MaxInt64 check that versions survive numeric(20,0)
	// exactly; restarts make incarnations differ between types.
	exp := simulate(t, sim.Config{Hubs: 6, Clusters: 15, Generations: 20, Seed: 11,
		RestartProbability: 0.2, FirstIncarnation: 1<<63 + 5})
	if exp.Restarts == 0 {
		t.Fatal("the simulation had no restarts; pick another seed")
	}
	load(t, pool, exp)

	rep, err := Verify(ctx, pool, exp)
	if err != nil {
		t.Fatalf("Verify: %v", err)
	}
	if !rep.OK() {
		t.Fatalf("Verify of the expected state:\n%s", rep.Summary())
	}
	if rep.Hubs != 6 || rep.Versions != 12 || rep.Clusters != exp.Clusters() {
		t.Errorf("report counts: %d hubs, %d versions, %d clusters", rep.Hubs, rep.Versions, rep.Clusters)
	}
	if s := rep.Summary(); !strings.HasPrefix(s, "database matches the expected state: 6 hubs, 12 bundle versions") {
		t.Errorf("summary: %s", s)
	}

	hub := "hub-002"
	var cluster string
	for name := range exp.Hubs[hub].ManagedClusters {
		cluster = name
		break
	}

	type change struct {
		sql  string
		args []any
	}
	tests := []struct {
		name    string
		changes []change
		want    map[Category]int // hubs affected per category: exactly these
		diffs   int              // 0: as many as hubs affected
		summary string
		line    string // in some line of the report
	}{
		{
			name: "older version",
			changes: []change{{`UPDATE status.bundle_versions SET generation = generation - 1
				WHERE hub = $1 AND bundle_type = 'managedclusters'`, []any{hub}}},
			want:    map[Category]int{{StaleVersion, "managedclusters"}: 1},
			summary: "1 hub has stale managedclusters versions",
			line:    hub + ": managedclusters version",
		},
		{
			name: "older incarnation in three hubs",
			changes: []change{{`UPDATE status.bundle_versions SET incarnation = incarnation - 1, generation = 1000
				WHERE hub = ANY($1) AND bundle_type = 'managedclusters'`, []any{[]string{"hub-001", "hub-003", "hub-005"}}}},
			want:    map[Category]int{{StaleVersion, "managedclusters"}: 3},
			summary: "3 hubs have stale managedclusters versions",
			line:    "hub-005: managedclusters version",
		},
		{
			name: "newer version",
			changes: []change{{`UPDATE status.bundle_versions SET generation = generation + 1
				WHERE hub = $1 AND bundle_type = 'heartbeat'`, []any{hub}}},
			want:    map[Category]int{{NewerVersion, "heartbeat"}: 1},
			summary: "1 hub has heartbeat versions newer than the last sent",
		},
		{
			name:    "missing version",
			changes: []change{{`DELETE FROM status.bundle_versions WHERE hub = $1 AND bundle_type = 'heartbeat'`, []any{hub}}},
			want:    map[Category]int{{MissingVersion, "heartbeat"}: 1},
			summary: "1 hub has no heartbeat version",
		},
		{
			name: "version of a type never sent",
			changes: []change{{`INSERT INTO status.bundle_versions (hub, bundle_type, incarnation, generation)
				VALUES ($1, 'compliance', 1, 1)`, []any{hub}}},
			want:    map[Category]int{{UnexpectedVersion, "compliance"}: 1},
			summary: "1 hub has compliance versions but sent no compliance bundle",
		},
		{
			name:    "missing cluster",
			changes: []change{{`DELETE FROM status.managed_clusters WHERE hub = $1 AND cluster_name = $2`, []any{hub, cluster}}},
			want:    map[Category]int{{Kind: MissingCluster}: 1},
			summary: "1 hub is missing managed clusters",
			line:    hub + ": managed cluster " + cluster + " is missing",
		},
		{
			name:    "all clusters of a hub missing",
			changes: []change{{`DELETE FROM status.managed_clusters WHERE hub = $1`, []any{hub}}},
			want:    map[Category]int{{Kind: MissingCluster}: 1},
			diffs:   len(exp.Hubs[hub].ManagedClusters),
			summary: "1 hub is missing managed clusters",
		},
		{
			name: "extra cluster",
			changes: []change{{`INSERT INTO status.managed_clusters (hub, cluster_name, cluster_id, payload)
				VALUES ($1, 'stowaway', 'x', '{}')`, []any{hub}}},
			want:    map[Category]int{{Kind: UnexpectedCluster}: 1},
			summary: "1 hub has unexpected managed clusters",
			line:    hub + ": unexpected managed cluster stowaway",
		},
		{
			name: "changed label",
			changes: []change{{`UPDATE status.managed_clusters
				SET payload = jsonb_set(payload, '{metadata,labels,generation}', '"999"')
				WHERE hub = $1 AND cluster_name = $2`, []any{hub, cluster}}},
			want:    map[Category]int{{Kind: WrongLabels}: 1},
			summary: "1 hub has managed clusters with wrong labels",
			line:    `generation="999", want`,
		},
		{
			name: "labels gone",
			changes: []change{{`UPDATE status.managed_clusters SET payload = payload #- '{metadata,labels}'
				WHERE hub = $1 AND cluster_name = $2`, []any{hub, cluster}}},
			want:    map[Category]int{{Kind: WrongLabels}: 1},
			summary: "1 hub has managed clusters with wrong labels",
			line:    "generation missing, want",
		},
		{
			name: "changed cluster id",
			changes: []change{{`UPDATE status.managed_clusters SET cluster_id = 'impostor'
				WHERE hub = $1 AND cluster_name = $2`, []any{hub, cluster}}},
			want:    map[Category]int{{Kind: WrongClusterID}: 1},
			summary: "1 hub has managed clusters with wrong cluster ids",
			line:    `has id "impostor"`,
		},
		{
			name:    "missing heartbeat",
			changes: []change{{`DELETE FROM status.hub_heartbeats WHERE hub = $1`, []any{hub}}},
			want:    map[Category]int{{Kind: MissingHeartbeat}: 1},
			summary: "1 hub has no heartbeat\n",
		},
		{
			name:    "missing hub row",
			changes: []change{{`DELETE FROM status.hubs WHERE name = $1`, []any{hub}}},
			want:    map[Category]int{{Kind: MissingHub}: 1},
			summary: "1 hub is missing from status.hubs",
		},
		{
			name: "extra hub",
			changes: []change{
				{`INSERT INTO status.hubs (name) VALUES ('intruder')`, nil},
				{`INSERT INTO status.bundle_versions (hub, bundle_type, incarnation, generation)
					VALUES ('intruder', 'heartbeat', 1, 1)`, nil},
				{`INSERT INTO status.managed_clusters (hub, cluster_name, payload) VALUES ('intruder', 'c', '{}')`, nil},
			},
			want:    map[Category]int{{Kind: UnexpectedHub}: 1},
			summary: "1 unexpected hub has rows in the database",
			line:    "intruder: not expected, but has rows in status.bundle_versions, status.managed_clusters, status.hubs",
		},
		{
			name: "several at once",
			changes: []change{
				{`DELETE FROM status.hub_heartbeats WHERE hub IN ('hub-001', 'hub-004')`, nil},
				{`UPDATE status.bundle_versions SET generation = generation - 1 WHERE hub = 'hub-006'`, nil},
			},
			want: map[Category]int{
				{Kind: MissingHeartbeat}:          2,
				{StaleVersion, "heartbeat"}:       1,
				{StaleVersion, "managedclusters"}: 1,
			},
			diffs:   4,
			summary: "2 hubs have no heartbeat",
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
				if rep.OK() {
					t.Fatalf("Verify is OK after the change:\n%s", summary)
				}
				if !maps.Equal(rep.Counts, tt.want) {
					t.Errorf("counts %v, want %v\n%s", rep.Counts, tt.want, summary)
				}
				diffs := tt.diffs
				if diffs == 0 {
					for _, n := range tt.want {
						diffs += n
					}
				}
				if rep.Differences != diffs || len(rep.Mismatches) != diffs {
					t.Errorf("%d differences, %d lines, want %d\n%s", rep.Differences, len(rep.Mismatches), diffs, summary)
				}
				if !strings.Contains(summary, tt.summary) {
					t.Errorf("summary lacks %q:\n%s", tt.summary, summary)
				}
				if tt.line != "" && !strings.Contains(summary, tt.line) {
					t.Errorf("summary lacks the line %q:\n%s", tt.line, summary)
				}
			})
		})
	}
}

// An empty database differs in every row; the report keeps MaxMismatches
// lines, counts them all and lists the first 20 in its summary.
func TestVerifyEmptyDatabase(t *testing.T) {
	pool, _ := dbtest.New(t)
	exp := simulate(t, sim.Config{Hubs: 3, Clusters: 400, Generations: 1})
	rep, err := Verify(context.Background(), pool, exp)
	if err != nil {
		t.Fatalf("Verify: %v", err)
	}
	// Per hub: 1200 clusters, 2 versions, 1 heartbeat, 1 hubs row.
	if want := 3 * (400 + 2 + 1 + 1); rep.Differences != want {
		t.Fatalf("%d differences, want %d", rep.Differences, want)
	}
	if len(rep.Mismatches) != MaxMismatches {
		t.Fatalf("kept %d lines, want %d", len(rep.Mismatches), MaxMismatches)
	}
	summary := rep.Summary()
	for _, want := range []string{
		"database differs from the expected state of 3 hubs: 1212 differences",
		"3 hubs have no heartbeat version",
		"3 hubs have no managedclusters version",
		"3 hubs are missing managed clusters",
		"3 hubs have no heartbeat\n",
		"3 hubs are missing from status.hubs",
		"first 20 of 1212 differences:",
	} {
		if !strings.Contains(summary, want) {
			t.Errorf("summary lacks %q:\n%s", want, summary)
		}
	}
	if lines := strings.Count(summary, "\n  hub-"); lines != 20 {
		t.Errorf("summary lists %d differences, want 20:\n%s", lines, summary)
	}
}

func TestVerifyErrors(t *testing.T) {
	pool, _ := dbtest.New(t)
	if _, err := Verify(context.Background(), pool, nil); err == nil {
		t.Error("Verify without an expected state succeeded")
	}
	bad := &sim.Expected{Hubs: map[string]*sim.HubState{"h": nil}}
	if _, err := Verify(context.Background(), pool, bad); err == nil {
		t.Error("Verify with a nil hub state succeeded")
	}
	ctx, cancel := context.WithCancel(context.Background())
	cancel()
	exp := &sim.Expected{Hubs: map[string]*sim.HubState{}}
	if _, err := Verify(ctx, pool, exp); !errors.Is(err, context.Canceled) {
		t.Errorf("Verify with a cancelled context: %v, want context.Canceled", err)
	}
}
