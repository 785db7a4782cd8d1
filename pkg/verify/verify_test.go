package verify

import (
	"context"
	"errors"
	"fmt"
	"maps"
	"strconv"
	"strings"
	"testing"

	"github.com/jackc/pgx/v5"

	"github.com/stbridge/stb/pkg/bundle"
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
	versions := 0
	for _, st := range exp.Hubs {
		versions += len(st.Versions)
	}
	if rep.Hubs != 6 || rep.Versions != versions || rep.Clusters != exp.Clusters() ||
		rep.ComplianceRows != exp.ComplianceRows() || rep.Events != exp.PolicyEvents() || rep.ComplianceRows == 0 || rep.Events == 0 {
		t.Errorf("report counts: %d hubs, %d versions, %d clusters, %d compliance rows, %d events",
			rep.Hubs, rep.Versions, rep.Clusters, rep.ComplianceRows, rep.Events)
	}
	want := fmt.Sprintf("database matches the expected state: 6 hubs, %d bundle versions, %d managed clusters, %d compliance rows, %d policy events",
		versions, exp.Clusters(), exp.ComplianceRows(), exp.PolicyEvents())
	if s := rep.Summary(); s != want {
		t.Errorf("summary: %s\nwant:    %s", s, want)
	}

	// A hub whose compliancedelta version is only bounded: load left its
	// row out, which matches.
	var bounded string
	var bound bundle.Version
	for _, name := range exp.HubNames() {
		if v, ok := exp.Hubs[name].VersionsAtMost[sim.TypeComplianceDelta]; ok {
			bounded, bound = name, v
			break
		}
	}
	if bounded == "" {
		t.Fatal("no hub has a bounded compliancedelta version; pick another seed")
	}

	hub := "hub-002"
	st := exp.Hubs[hub]
	cluster := sortedKeys(st.ManagedClusters)[0]
	policy := sortedKeys(st.Compliance)[0]
	placed := sortedKeys(st.Compliance[policy])[0]
	state := st.Compliance[policy][placed]
	other := sim.Compliant
	if state == sim.Compliant {
		other = sim.NonCompliant
	}
	evPolicy := sortedKeys(st.Events)[0]
	evCluster := sortedKeys(st.Events[evPolicy])[0]
	event := st.Events[evPolicy][evCluster][0]

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
			changes: []change{{`UPDATE stb.bundle_versions SET generation = generation - 1
				WHERE hub = $1 AND bundle_type = 'managedclusters'`, []any{hub}}},
			want:    map[Category]int{{StaleVersion, "managedclusters"}: 1},
			summary: "1 hub has stale managedclusters versions",
			line:    hub + ": managedclusters version",
		},
		{
			name: "older incarnation in three hubs",
			changes: []change{{`UPDATE stb.bundle_versions SET incarnation = incarnation - 1, generation = 1000
				WHERE hub = ANY($1) AND bundle_type = 'managedclusters'`, []any{[]string{"hub-001", "hub-003", "hub-005"}}}},
			want:    map[Category]int{{StaleVersion, "managedclusters"}: 3},
			summary: "3 hubs have stale managedclusters versions",
			line:    "hub-005: managedclusters version",
		},
		{
			name: "newer version",
			changes: []change{{`UPDATE stb.bundle_versions SET generation = generation + 1
				WHERE hub = $1 AND bundle_type = 'heartbeat'`, []any{hub}}},
			want:    map[Category]int{{NewerVersion, "heartbeat"}: 1},
			summary: "1 hub has heartbeat versions newer than the last sent",
		},
		{
			name:    "missing version",
			changes: []change{{`DELETE FROM stb.bundle_versions WHERE hub = $1 AND bundle_type = 'heartbeat'`, []any{hub}}},
			want:    map[Category]int{{MissingVersion, "heartbeat"}: 1},
			summary: "1 hub has no heartbeat version",
		},
		{
			// At the run's first incarnation: a lower one is a version an
			// earlier run left (TestVerifyAcceptsEarlierRunsAndTombstones).
			name: "version of a type never sent",
			changes: []change{{`INSERT INTO stb.bundle_versions (hub, bundle_type, incarnation, generation)
				VALUES ($1, 'localpolicies', $2::numeric, 1)`, []any{hub, strconv.FormatUint(exp.FirstIncarnation, 10)}}},
			want:    map[Category]int{{UnexpectedVersion, "localpolicies"}: 1},
			summary: "1 hub has localpolicies versions but sent no localpolicies bundle",
		},
		{
			name: "compliancedelta version newer than the last delta sent",
			changes: []change{{`INSERT INTO stb.bundle_versions (hub, bundle_type, incarnation, generation)
				VALUES ($1, 'compliancedelta', $2::numeric, $3::numeric)`,
				[]any{bounded, strconv.FormatUint(bound.Incarnation, 10), strconv.FormatUint(bound.Generation+1, 10)}}},
			want:    map[Category]int{{NewerVersion, "compliancedelta"}: 1},
			summary: "1 hub has compliancedelta versions newer than the last sent",
			line:    bounded + ": compliancedelta version " + bundle.Version{Incarnation: bound.Incarnation, Generation: bound.Generation + 1}.String() + ", want at most " + bound.String(),
		},
		{
			name: "wrong compliance state",
			changes: []change{{`UPDATE stb.compliance SET compliance = $4
				WHERE hub = $1 AND policy_id = $2 AND cluster_name = $3`, []any{hub, policy, placed, string(other)}}},
			want:    map[Category]int{{Kind: WrongCompliance}: 1},
			summary: "1 hub has compliance rows in the wrong state",
			line:    fmt.Sprintf("%s: policy %s on cluster %s is %s, want %s", hub, policy, placed, other, state),
		},
		{
			name: "missing compliance row",
			changes: []change{{`DELETE FROM stb.compliance
				WHERE hub = $1 AND policy_id = $2 AND cluster_name = $3`, []any{hub, policy, placed}}},
			want:    map[Category]int{{Kind: MissingCompliance}: 1},
			summary: "1 hub is missing compliance rows",
			line:    fmt.Sprintf("%s: compliance of policy %s on cluster %s is missing, want %s", hub, policy, placed, state),
		},
		{
			name:    "all compliance rows of a hub missing",
			changes: []change{{`DELETE FROM stb.compliance WHERE hub = $1`, []any{hub}}},
			want:    map[Category]int{{Kind: MissingCompliance}: 1},
			diffs:   st.ComplianceRows(),
			summary: "1 hub is missing compliance rows",
		},
		{
			name: "extra compliance row",
			changes: []change{{`INSERT INTO stb.compliance (hub, policy_id, cluster_name, compliance)
				VALUES ($1, $2, 'stowaway', 'unknown')`, []any{hub, policy}}},
			want:    map[Category]int{{Kind: UnexpectedCompliance}: 1},
			summary: "1 hub has unexpected compliance rows",
			line:    fmt.Sprintf("%s: unexpected compliance row: policy %s on cluster stowaway (unknown)", hub, policy),
		},
		{
			name: "compliance of a removed policy",
			changes: []change{{`INSERT INTO stb.compliance (hub, policy_id, cluster_name, compliance)
				VALUES ($1, 'gone', $2, 'compliant'), ($1, 'gone', $3, 'compliant')`, []any{hub, placed, cluster}}},
			want:    map[Category]int{{Kind: UnexpectedCompliance}: 1},
			diffs:   2,
			summary: "1 hub has unexpected compliance rows",
		},
		{
			name: "missing policy event",
			changes: []change{{`DELETE FROM stb.policy_events
				WHERE hub = $1 AND policy_id = $2 AND cluster_name = $3 AND event_name = $4`, []any{hub, evPolicy, evCluster, event}}},
			want:    map[Category]int{{Kind: MissingEvent}: 1},
			summary: "1 hub is missing policy events",
			line:    fmt.Sprintf("%s: policy event %s (policy %s, cluster %s) is missing", hub, event, evPolicy, evCluster),
		},
		{
			name: "extra policy event",
			changes: []change{{`INSERT INTO stb.policy_events (hub, policy_id, cluster_name, event_name)
				VALUES ($1, $2, $3, 'policy-999.ffffffff')`, []any{hub, evPolicy, evCluster}}},
			want:    map[Category]int{{Kind: UnexpectedEvent}: 1},
			summary: "1 hub has unexpected policy events",
			line:    fmt.Sprintf("%s: unexpected policy event policy-999.ffffffff (policy %s, cluster %s)", hub, evPolicy, evCluster),
		},
		{
			name: "event moved to another cluster",
			changes: []change{{`UPDATE stb.policy_events SET cluster_name = 'elsewhere'
				WHERE hub = $1 AND policy_id = $2 AND cluster_name = $3 AND event_name = $4`, []any{hub, evPolicy, evCluster, event}}},
			want:    map[Category]int{{Kind: MissingEvent}: 1, {Kind: UnexpectedEvent}: 1},
			summary: "1 hub has unexpected policy events",
		},
		{
			name:    "all events of three hubs missing",
			changes: []change{{`DELETE FROM stb.policy_events WHERE hub IN ('hub-001', 'hub-003', 'hub-005')`, nil}},
			want:    map[Category]int{{Kind: MissingEvent}: 3},
			diffs:   exp.Hubs["hub-001"].PolicyEvents() + exp.Hubs["hub-003"].PolicyEvents() + exp.Hubs["hub-005"].PolicyEvents(),
			summary: "3 hubs are missing policy events",
		},
		{
			name:    "missing cluster",
			changes: []change{{`DELETE FROM stb.managed_clusters WHERE hub = $1 AND cluster_name = $2`, []any{hub, cluster}}},
			want:    map[Category]int{{Kind: MissingCluster}: 1},
			summary: "1 hub is missing managed clusters",
			line:    hub + ": managed cluster " + cluster + " is missing",
		},
		{
			name:    "all clusters of a hub missing",
			changes: []change{{`DELETE FROM stb.managed_clusters WHERE hub = $1`, []any{hub}}},
			want:    map[Category]int{{Kind: MissingCluster}: 1},
			diffs:   len(exp.Hubs[hub].ManagedClusters),
			summary: "1 hub is missing managed clusters",
		},
		{
			name: "extra cluster",
			changes: []change{{`INSERT INTO stb.managed_clusters (hub, cluster_name, cluster_id, payload)
				VALUES ($1, 'stowaway', 'x', '{}')`, []any{hub}}},
			want:    map[Category]int{{Kind: UnexpectedCluster}: 1},
			summary: "1 hub has unexpected managed clusters",
			line:    hub + ": unexpected managed cluster stowaway",
		},
		{
			name: "changed label",
			changes: []change{{`UPDATE stb.managed_clusters
				SET payload = jsonb_set(payload, '{metadata,labels,generation}', '"999"')
				WHERE hub = $1 AND cluster_name = $2`, []any{hub, cluster}}},
			want:    map[Category]int{{Kind: WrongLabels}: 1},
			summary: "1 hub has managed clusters with wrong labels",
			line:    `generation="999", want`,
		},
		{
			name: "labels gone",
			changes: []change{{`UPDATE stb.managed_clusters SET payload = payload #- '{metadata,labels}'
				WHERE hub = $1 AND cluster_name = $2`, []any{hub, cluster}}},
			want:    map[Category]int{{Kind: WrongLabels}: 1},
			summary: "1 hub has managed clusters with wrong labels",
			line:    "generation missing, want",
		},
		{
			name: "changed cluster id",
			changes: []change{{`UPDATE stb.managed_clusters SET cluster_id = 'impostor'
				WHERE hub = $1 AND cluster_name = $2`, []any{hub, cluster}}},
			want:    map[Category]int{{Kind: WrongClusterID}: 1},
			summary: "1 hub has managed clusters with wrong cluster ids",
			line:    `has id "impostor"`,
		},
		{
			name:    "missing heartbeat",
			changes: []change{{`DELETE FROM stb.hub_heartbeats WHERE hub = $1`, []any{hub}}},
			want:    map[Category]int{{Kind: MissingHeartbeat}: 1},
			summary: "1 hub has no heartbeat\n",
		},
		{
			name:    "missing hub row",
			changes: []change{{`DELETE FROM stb.hubs WHERE name = $1`, []any{hub}}},
			want:    map[Category]int{{Kind: MissingHub}: 1},
			summary: "1 hub is missing from stb.hubs",
		},
		{
			name: "extra hub",
			changes: []change{
				{`INSERT INTO stb.hubs (name) VALUES ('intruder')`, nil},
				{`INSERT INTO stb.bundle_versions (hub, bundle_type, incarnation, generation)
					VALUES ('intruder', 'heartbeat', 1, 1)`, nil},
				{`INSERT INTO stb.managed_clusters (hub, cluster_name, payload) VALUES ('intruder', 'c', '{}')`, nil},
				{`INSERT INTO stb.compliance (hub, policy_id, cluster_name, compliance) VALUES ('intruder', 'p', 'c', 'unknown')`, nil},
				{`INSERT INTO stb.policy_events (hub, policy_id, cluster_name, event_name) VALUES ('intruder', 'p', 'c', 'e')`, nil},
			},
			want:    map[Category]int{{Kind: UnexpectedHub}: 1},
			summary: "1 unexpected hub has rows in the database",
			line:    "intruder: not expected, but has rows in stb.bundle_versions, stb.managed_clusters, stb.compliance, stb.policy_events, stb.hubs",
		},
		{
			// STB's own agent writes none of the global hub's tables.
			name: "rows in the global-hub agent's tables",
			changes: []change{
				{`INSERT INTO status.managed_clusters (leaf_hub_name, cluster_id, payload, error)
					VALUES ($1, '0badc0de-0000-4000-8000-000000000001', jsonb_build_object('metadata', jsonb_build_object('name', $2::text)), 'none')`,
					[]any{hub, cluster}},
				{`INSERT INTO local_status.compliance (policy_id, cluster_name, leaf_hub_name, error, compliance)
					VALUES ('0badc0de-0000-4000-8000-000000000002', $2, $1, 'none', 'compliant')`, []any{hub, placed}},
				{`INSERT INTO status.leaf_hub_heartbeats (leaf_hub_name) VALUES ($1)`, []any{hub}},
			},
			want: map[Category]int{
				{Kind: UnexpectedCluster}:    1,
				{Kind: UnexpectedCompliance}: 1,
				{Kind: UnexpectedHeartbeat}:  1,
			},
			summary: "1 hub has unexpected managed clusters",
			line:    hub + ": managed cluster " + cluster + " in status.managed_clusters, which the hub's agent does not write",
		},
		{
			name: "several at once",
			changes: []change{
				{`DELETE FROM stb.hub_heartbeats WHERE hub IN ('hub-001', 'hub-004')`, nil},
				{`UPDATE stb.bundle_versions SET generation = generation - 1
					WHERE hub = 'hub-006' AND bundle_type IN ('heartbeat', 'managedclusters')`, nil},
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

// A bounded compliancedelta version matches when its row is missing (as
// loaded) and when it holds any version up to the bound: deltas before the
// last compliance report may each have been applied or dropped.
func TestVerifyBoundedVersion(t *testing.T) {
	pool, _ := dbtest.New(t)
	ctx := context.Background()
	exp := simulate(t, sim.Config{Hubs: 4, Clusters: 5, Generations: 10, Seed: 3, ComplianceEvery: 2})
	load(t, pool, exp)
	n := 0
	for _, hub := range exp.HubNames() {
		bound, ok := exp.Hubs[hub].VersionsAtMost[sim.TypeComplianceDelta]
		if !ok {
			continue
		}
		n++
		for _, v := range []bundle.Version{bound, {Incarnation: bound.Incarnation, Generation: 1}, {}} {
			inTx(t, pool, func(tx pgx.Tx) {
				if _, err := tx.Exec(ctx, `INSERT INTO stb.bundle_versions (hub, bundle_type, incarnation, generation)
					VALUES ($1, 'compliancedelta', $2::numeric, $3::numeric)`,
					hub, strconv.FormatUint(v.Incarnation, 10), strconv.FormatUint(v.Generation, 10)); err != nil {
					t.Fatal(err)
				}
				rep, err := Verify(ctx, tx, exp)
				if err != nil {
					t.Fatalf("Verify: %v", err)
				}
				if !rep.OK() {
					t.Errorf("compliancedelta version %s of %s, bounded by %s:\n%s", v, hub, bound, rep.Summary())
				}
			})
		}
	}
	if n == 0 {
		t.Fatal("no hub has a bounded compliancedelta version; pick another seed")
	}
}

func TestVerifyRejectsUnsortedEvents(t *testing.T) {
	pool, _ := dbtest.New(t)
	exp := &sim.Expected{Hubs: map[string]*sim.HubState{"h": {
		Events: map[string]map[string][]string{"p": {"c": {"b", "a"}}},
	}}}
	if _, err := Verify(context.Background(), pool, exp); err == nil || !strings.Contains(err.Error(), "not sorted") {
		t.Fatalf("Verify with unsorted event names: %v", err)
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
	// Per hub: every cluster, version, compliance row and event, the
	// heartbeat and the hubs row.
	want := 0
	for _, st := range exp.Hubs {
		want += len(st.ManagedClusters) + len(st.Versions) + st.ComplianceRows() + st.PolicyEvents() + 2
	}
	if rep.Differences != want {
		t.Fatalf("%d differences, want %d", rep.Differences, want)
	}
	if len(rep.Mismatches) != MaxMismatches {
		t.Fatalf("kept %d lines, want %d", len(rep.Mismatches), MaxMismatches)
	}
	summary := rep.Summary()
	for _, want := range []string{
		fmt.Sprintf("database differs from the expected state of 3 hubs: %d differences", want),
		"3 hubs have no heartbeat version",
		"3 hubs have no managedclusters version",
		"3 hubs have no compliance version",
		"3 hubs are missing managed clusters",
		"3 hubs are missing compliance rows",
		"3 hubs are missing policy events",
		"3 hubs have no heartbeat\n",
		"3 hubs are missing from stb.hubs",
		fmt.Sprintf("first 20 of %d differences:", want),
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
