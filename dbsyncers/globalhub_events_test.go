package dbsyncers

import (
	"encoding/json"
	"fmt"
	"slices"
	"strings"
	"testing"

	"github.com/stbridge/stb/pkg/bundle"
	"github.com/stbridge/stb/pkg/db/dbtest"
)

// ghClusterEvent is an event.managedcluster event as the agent sends it
// (models.ManagedClusterEvent, agent/pkg/status/syncers/events/handlers/
// managedcluster_handler.go), leafHubName being the agent's own name.
func ghClusterEvent(cluster, clusterID, name, reason, createdAt string) map[string]any {
	e := map[string]any{
		"eventNamespace": cluster, "eventName": name, "clusterName": cluster,
		"leafHubName": "name-in-the-payload", "message": "The " + cluster + " is " + reason, "reason": reason,
		"reportingController": "managedcluster-import-controller", "reportingInstance": "managedcluster-import-controller-v2-b6cbc7658-dvp9t",
		"type": "Normal", "createdAt": createdAt,
	}
	if clusterID != "" {
		e["clusterId"] = clusterID
	}
	return e
}

// ghReplicatedEvent is an event.localreplicatedpolicy event
// (pkg/bundle/event ReplicatedPolicyEvent).
func ghReplicatedEvent(policy, cluster, clusterID, name string, count int, compliance, createdAt string) map[string]any {
	e := map[string]any{
		"leafHubName": "name-in-the-payload", "eventName": name, "eventNamespace": cluster,
		"message": compliance + "; violation - limitranges [container-mem-limit-range] not found in namespace default",
		"reason":  "PolicyStatusSync", "count": count, "source": map[string]string{"component": "policy-status-history-sync"},
		"createdAt": createdAt, "policyId": ghUUID(policy), "clusterName": cluster, "compliance": compliance,
	}
	if clusterID != "" {
		e["clusterId"] = clusterID
	}
	return e
}

// ghRootEvent is an event.localrootpolicy event (pkg/bundle/event
// RootPolicyEvent).
func ghRootEvent(policy, name, message string, count int, createdAt string) map[string]any {
	return map[string]any{
		"leafHubName": "name-in-the-payload", "eventName": name, "eventNamespace": "local-policy-namespace",
		"message": message, "reason": "PolicyPropagation", "count": count, "source": map[string]string{"component": "policy-propagator"},
		"createdAt": createdAt, "policyId": ghUUID(policy), "compliance": "Unknown",
	}
}

// TestGlobalHubManagedClusterEvents: event.managedcluster into
// event.managed_clusters (manager/pkg/status/handlers/managedcluster/
// managedcluster_event_handler.go; models.ManagedClusterEvent,
// pkg/database/models/event.go).
func TestGlobalHubManagedClusterEvents(t *testing.T) {
	t.Parallel()
	pool, _ := dbtest.New(t)
	// The hub's clusters, for the events that carry no usable clusterId.
	ghApply(t, pool, "hub1", GHManagedCluster, bundle.Version{Incarnation: 1, Generation: 1},
		ghGeneric([]json.RawMessage{ghClusterJSON("known", "1")}, nil, nil, nil, nil))
	ghApply(t, pool, "hub2", GHManagedCluster, bundle.Version{Incarnation: 1, Generation: 1},
		ghGeneric([]json.RawMessage{ghClusterJSON("elsewhere", "1")}, nil, nil, nil, nil))
	c1 := ghUUID("cluster1")
	steps := []struct {
		name, upstream string
		data           []byte
		want           []string // hub|event|cluster|cluster id label|created_at|reason
	}{
		{"a batch; the hub is the event's source, not the payload's leafHubName",
			"managedcluster_event_handler.go: managedClusterEvent.LeafHubName = leafHubName",
			jsonArray(ghClusterEvent("cluster1", c1, "cluster1.1870fdff35b3d4bc", "WaitForImporting", "2025-10-23T02:32:06Z"),
				ghClusterEvent("cluster1", c1, "cluster1.1870fdff5a401195", "Importing", "2025-10-23T04:32:06+02:00")),
			[]string{"hub1|cluster1.1870fdff35b3d4bc|cluster1|cluster1|2025-10-23 02:32:06|WaitForImporting",
				"hub1|cluster1.1870fdff5a401195|cluster1|cluster1|2025-10-23 02:32:06|Importing"}},
		{"sendmode single: one event object; the same batch resent is stored once",
			"managedcluster_event_handler.go: OnConflict (leaf_hub_name, event_name, created_at) DoNothing", nil, nil},
		{"an event without clusterId takes the hub's live cluster of its name; one of an unknown cluster, or another hub's, is not inserted",
			"event.managed_clusters.cluster_id uuid NOT NULL (the brief's decision)",
			jsonArray(ghClusterEvent("known", "", "known.1", "Imported", "2025-10-23T05:00:00Z"),
				ghClusterEvent("known", "not-a-uuid", "known.2", "Available", "2025-10-23T05:00:01Z"),
				ghClusterEvent("unknown", "", "unknown.1", "Imported", "2025-10-23T05:00:02Z"),
				ghClusterEvent("elsewhere", "", "elsewhere.1", "Imported", "2025-10-23T05:00:03Z")),
			[]string{"hub1|known.1|known|known|2025-10-23 05:00:00|Imported", "hub1|known.2|known|known|2025-10-23 05:00:01|Available"}},
		{"an event of a month without a partition is stored", "stb.ensure_month_partitions before the insert",
			jsonArray(ghClusterEvent("cluster1", c1, "cluster1.old", "Detached", "2019-03-15T10:00:00Z")),
			[]string{"hub1|cluster1.old|cluster1|cluster1|2019-03-15 10:00:00|Detached"}},
	}
	single := mustJSON(ghClusterEvent("cluster1", c1, "cluster1.1870fe215eb1712a", "Detaching", "2025-10-23T02:40:00Z"))
	steps[1].data = single
	steps[1].want = []string{"hub1|cluster1.1870fe215eb1712a|cluster1|cluster1|2025-10-23 02:40:00|Detaching"}
	var all []string
	read := func() []string {
		var out []string
		for _, s := range ghQueryStrings(t, pool, `SELECT leaf_hub_name || '|' || event_name || '|' || cluster_name || '|' || cluster_id::text || '|'
			|| to_char(created_at, 'YYYY-MM-DD HH24:MI:SS') || '|' || reason FROM event.managed_clusters`) {
			f := strings.Split(s, "|")
			f[3] = ghLabel(f[3])
			out = append(out, strings.Join(f, "|"))
		}
		return out
	}
	gen := uint64(10)
	for i, s := range steps {
		gen++
		ghWrite(t, pool, "hub1", GHManagedClusterEvent, bundle.Version{Incarnation: 1, Generation: gen}, s.data)
		if i == 1 { // the first batch again, as an agent resending it
			gen++
			ghWrite(t, pool, "hub1", GHManagedClusterEvent, bundle.Version{Incarnation: 1, Generation: gen}, steps[0].data)
		}
		all = append(all, s.want...)
		slices.Sort(all)
		if got := read(); fmt.Sprint(got) != fmt.Sprint(all) {
			t.Fatalf("%s (%s):\n got  %v\n want %v", s.name, s.upstream, got, all)
		}
	}
	var controller, instance, eventType, ns, message string
	if err := pool.QueryRow(t.Context(), `SELECT reporting_controller, reporting_instance, event_type, event_namespace, message
		FROM event.managed_clusters WHERE event_name = 'cluster1.1870fdff35b3d4bc'`).Scan(&controller, &instance, &eventType, &ns, &message); err != nil {
		t.Fatal(err)
	}
	if controller != "managedcluster-import-controller" || instance != "managedcluster-import-controller-v2-b6cbc7658-dvp9t" ||
		eventType != "Normal" || ns != "cluster1" || message != "The cluster1 is WaitForImporting" {
		t.Fatalf("columns %q %q %q %q %q", controller, instance, eventType, ns, message)
	}
	var partition bool
	if err := pool.QueryRow(t.Context(), `SELECT to_regclass('event.managed_clusters_2019_03') IS NOT NULL`).Scan(&partition); err != nil || !partition {
		t.Fatalf("partition event.managed_clusters_2019_03: %v, %v", partition, err)
	}
}

// TestGlobalHubReplicatedPolicyEvents: event.localreplicatedpolicy into
// event.local_policies (manager/pkg/status/handlers/policy/
// local_replicated_policy_event_handler.go; models.
// LocalClusterPolicyEvent, pkg/database/models/event.go), and through
// its trigger history.local_compliance.
func TestGlobalHubReplicatedPolicyEvents(t *testing.T) {
	t.Parallel()
	pool, _ := dbtest.New(t)
	ghApply(t, pool, "hub2", GHManagedCluster, bundle.Version{Incarnation: 1, Generation: 1},
		ghGeneric([]json.RawMessage{ghClusterJSON("known", "1")}, nil, nil, nil, nil))
	c1 := ghUUID("kind-hub2-cluster1")
	cases := []struct {
		name, upstream string
		events         []any
		want           []string // event|count|cluster|cluster id label|compliance|created_at
	}{
		{"compliance as GetDatabaseCompliance maps it: Compliant, NonCompliant, Pending, anything else unknown",
			"pkg/database/common/util.go GetDatabaseCompliance",
			[]any{
				ghReplicatedEvent("p1", "kind-hub2-cluster1", c1, "e.compliant", 1, "Compliant", "2024-02-29T03:01:14Z"),
				ghReplicatedEvent("p1", "kind-hub2-cluster1", c1, "e.noncompliant", 1, "NonCompliant", "2024-02-29T03:01:15Z"),
				ghReplicatedEvent("p1", "kind-hub2-cluster1", c1, "e.pending", 1, "Pending", "2024-02-29T03:01:16Z"),
				ghReplicatedEvent("p1", "kind-hub2-cluster1", c1, "e.other", 1, "Unknown", "2024-02-29T03:01:17Z"),
			},
			[]string{"e.compliant|1|kind-hub2-cluster1|kind-hub2-cluster1|compliant|2024-02-29 03:01:14",
				"e.noncompliant|1|kind-hub2-cluster1|kind-hub2-cluster1|non_compliant|2024-02-29 03:01:15",
				"e.other|1|kind-hub2-cluster1|kind-hub2-cluster1|unknown|2024-02-29 03:01:17",
				"e.pending|1|kind-hub2-cluster1|kind-hub2-cluster1|pending|2024-02-29 03:01:16"}},
		{"an event of the same name, count and time is stored once; a new count is a new row",
			"local_replicated_policy_event_handler.go: OnConflict (event_name, count, created_at) DoNothing",
			[]any{
				ghReplicatedEvent("p1", "kind-hub2-cluster1", c1, "e.compliant", 1, "NonCompliant", "2024-02-29T03:01:14Z"),
				ghReplicatedEvent("p1", "kind-hub2-cluster1", c1, "e.compliant", 2, "Compliant", "2024-02-29T03:01:14Z"),
			},
			[]string{"e.compliant|2|kind-hub2-cluster1|kind-hub2-cluster1|compliant|2024-02-29 03:01:14"}},
		{"an event without a usable clusterId takes the hub's live cluster of its name; one of an unknown cluster is not inserted",
			"event.local_policies.cluster_id uuid NOT NULL (the brief's decision)",
			[]any{
				ghReplicatedEvent("p1", "known", "", "e.known", 1, "Compliant", "2024-02-29T04:00:00Z"),
				ghReplicatedEvent("p1", "unknown", "", "e.unknown", 1, "Compliant", "2024-02-29T04:00:01Z"),
			},
			[]string{"e.known|1|known|known|compliant|2024-02-29 04:00:00"}},
		{"an event of a month without a partition is stored, its history too", "stb.ensure_month_partitions before the insert",
			[]any{ghReplicatedEvent("p1", "kind-hub2-cluster1", c1, "e.old", 1, "NonCompliant", "2019-03-15T10:00:00Z")},
			[]string{"e.old|1|kind-hub2-cluster1|kind-hub2-cluster1|non_compliant|2019-03-15 10:00:00"}},
	}
	var all []string
	for i, c := range cases {
		ghWrite(t, pool, "hub2", GHReplicatedPolicyEvent, bundle.Version{Incarnation: 1, Generation: uint64(i + 1)}, jsonArray(c.events...))
		all = append(all, c.want...)
		slices.Sort(all)
		var got []string
		for _, s := range ghQueryStrings(t, pool, `SELECT event_name || '|' || count || '|' || cluster_name || '|' || cluster_id::text || '|'
			|| compliance::text || '|' || to_char(created_at, 'YYYY-MM-DD HH24:MI:SS') FROM event.local_policies WHERE leaf_hub_name = 'hub2'`) {
			f := strings.Split(s, "|")
			f[3] = ghLabel(f[3])
			got = append(got, strings.Join(f, "|"))
		}
		if fmt.Sprint(got) != fmt.Sprint(all) {
			t.Fatalf("%s (%s):\n got  %v\n want %v", c.name, c.upstream, got, all)
		}
	}
	var policy, source, ns, message string
	if err := pool.QueryRow(t.Context(), `SELECT policy_id::text, source::text, event_namespace, message FROM event.local_policies WHERE event_name = 'e.pending'`).
		Scan(&policy, &source, &ns, &message); err != nil {
		t.Fatal(err)
	}
	if ghLabel(policy) != "p1" || source != `{"component": "policy-status-history-sync"}` || ns != "kind-hub2-cluster1" || message == "" {
		t.Fatalf("columns %q %q %q %q", policy, source, ns, message)
	}
	// The schema's trigger folds each event into its day of
	// history.local_compliance (upstream: history.update_history_compliance_by_event).
	days := ghQueryStrings(t, pool, `SELECT compliance_date::text || '|' || compliance::text FROM history.local_compliance WHERE leaf_hub_name = 'hub2' AND cluster_id = $1`, c1)
	if want := []string{"2019-03-15|non_compliant", "2024-02-29|pending"}; fmt.Sprint(days) != fmt.Sprint(want) {
		t.Fatalf("history %v, want %v", days, want)
	}
}

// TestGlobalHubRootPolicyEvents: event.localrootpolicy into
// event.local_root_policies (manager/pkg/status/handlers/policy/
// local_root_policy_event_handler.go). A conflict on (event_name, count,
// created_at) does nothing, in batch mode too (see insertGHRootEventsSQL).
func TestGlobalHubRootPolicyEvents(t *testing.T) {
	t.Parallel()
	pool, _ := dbtest.New(t)
	v := func(g uint64) bundle.Version { return bundle.Version{Incarnation: 1, Generation: g} }
	ghApply(t, pool, "hub1", GHRootPolicyEvent, v(1), jsonArray(
		ghRootEvent("p1", "policy-limitrange.17b8363660d39188", "Policy was propagated to cluster kind-hub2-cluster1", 1, "2024-02-29T03:01:05Z"),
		ghRootEvent("p1", "policy-limitrange.old", "old", 3, "2019-03-15T10:00:00Z"),
	))
	// Resent with another message, and by another hub: nothing changes.
	ghApply(t, pool, "hub1", GHRootPolicyEvent, v(2), mustJSON(ghRootEvent("p1", "policy-limitrange.17b8363660d39188", "changed", 1, "2024-02-29T03:01:05Z")))
	ghApply(t, pool, "hub2", GHRootPolicyEvent, v(1), jsonArray(ghRootEvent("p2", "policy-limitrange.17b8363660d39188", "other hub", 1, "2024-02-29T03:01:05Z")))
	got := ghQueryStrings(t, pool, `SELECT leaf_hub_name || '|' || event_name || '|' || count || '|' || policy_id::text || '|' || message || '|'
		|| compliance::text || '|' || (source->>'component') || '|' || to_char(created_at, 'YYYY-MM-DD HH24:MI:SS') FROM event.local_root_policies`)
	for i := range got {
		f := strings.Split(got[i], "|")
		f[3] = ghLabel(f[3])
		got[i] = strings.Join(f, "|")
	}
	want := []string{
		"hub1|policy-limitrange.17b8363660d39188|1|p1|Policy was propagated to cluster kind-hub2-cluster1|unknown|policy-propagator|2024-02-29 03:01:05",
		"hub1|policy-limitrange.old|3|p1|old|unknown|policy-propagator|2019-03-15 10:00:00",
	}
	if fmt.Sprint(got) != fmt.Sprint(want) {
		t.Fatalf("root policy events:\n got  %v\n want %v", got, want)
	}
}

// TestGlobalHubEventWithoutSource: an event without a source gets {} as
// upstream stores json.Marshal of the zero corev1.EventSource
// (local_root_policy_event_handler.go convertEventToModel).
func TestGlobalHubEventWithoutSource(t *testing.T) {
	t.Parallel()
	pool, _ := dbtest.New(t)
	e := ghRootEvent("p1", "p1.1", "m", 1, "2024-02-29T03:01:05Z")
	delete(e, "source")
	ghApply(t, pool, "hub1", GHRootPolicyEvent, bundle.Version{Incarnation: 1, Generation: 1}, jsonArray(e))
	var source string
	if err := pool.QueryRow(t.Context(), `SELECT source::text FROM event.local_root_policies`).Scan(&source); err != nil || source != "{}" {
		t.Fatalf("source %q, %v", source, err)
	}
}
