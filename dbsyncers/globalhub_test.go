package dbsyncers

import (
	"encoding/json"
	"errors"
	"fmt"
	"maps"
	"testing"

	"github.com/jackc/pgx/v5/pgxpool"

	"github.com/stbridge/stb/pkg/bundle"
	"github.com/stbridge/stb/pkg/db/dbtest"
	"github.com/stbridge/stb/pkg/deadletter"
)

// The data below is shaped exactly as the multicluster global-hub agent
// sends it (stolostron/multicluster-global-hub: pkg/bundle/generic,
// pkg/bundle/grc, pkg/bundle/event, the agent's emitters): JSON arrays at
// the top, lists the agent has nothing for marshalled as null, generic
// bundle members left out when empty.

// ghClusterJSON is a ManagedCluster as the agent's generic bundle carries
// it, identified by its id.k8s.io cluster claim.
func ghClusterJSON(name, id, rev string) json.RawMessage {
	return json.RawMessage(fmt.Sprintf(`{
		"kind": "ManagedCluster", "apiVersion": "cluster.open-cluster-management.io/v1",
		"metadata": {"name": %q, "uid": "uid-%s", "resourceVersion": %q, "creationTimestamp": "2024-02-27T01:48:31Z",
			"labels": {"cluster.open-cluster-management.io/clusterset": "default", "rev": %q},
			"annotations": {"global-hub.open-cluster-management.io/managed-by": "hub1"}},
		"spec": {"managedClusterClientConfigs": [{"url": "https://%s:6443", "caBundle": "XXX"}], "hubAcceptsClient": true, "leaseDurationSeconds": 60},
		"status": {"conditions": [{"type": "ManagedClusterConditionAvailable", "status": "True", "lastTransitionTime": "2024-02-27T01:48:32Z", "reason": "ManagedClusterAvailable", "message": "Managed cluster is available"}],
			"version": {"kubernetes": "v1.24.0"},
			"clusterClaims": [{"name": "platform.open-cluster-management.io", "value": "Other"}, {"name": "id.k8s.io", "value": %q}]}
	}`, name, name, rev, rev, name, id))
}

// ghGeneric returns a generic bundle with the non-empty members only, as
// the agent marshals it (omitempty).
func ghGeneric(create, update, resync []json.RawMessage, del, resyncMeta []map[string]string) []byte {
	m := map[string]any{}
	for k, v := range map[string][]json.RawMessage{"create": create, "update": update, "resync": resync} {
		if len(v) > 0 {
			m[k] = v
		}
	}
	for k, v := range map[string][]map[string]string{"delete": del, "resync_metadata": resyncMeta} {
		if len(v) > 0 {
			m[k] = v
		}
	}
	data, err := json.Marshal(m)
	if err != nil {
		panic(err)
	}
	return data
}

// ghCompliance is one policy of a localcompliance event; nil lists are
// sent as null, as the agent's grc.Compliance has no omitempty.
func ghComplianceJSON(policy string, compliant, nonCompliant, unknown, pending []string) map[string]any {
	return map[string]any{
		"policyId": policy, "policy_namespaced_name": "default/" + policy,
		"compliantClusters": compliant, "nonCompliantClusters": nonCompliant,
		"unknownComplianceClusters": unknown, "pendingComplianceClusters": pending,
	}
}

// ghCompleteJSON is one policy of a localcompletecompliance event.
func ghCompleteJSON(policy string, nonCompliant, unknown, pending []string) map[string]any {
	return map[string]any{
		"policyId": policy, "policy_namespaced_name": "default/" + policy,
		"nonCompliantClusters": nonCompliant, "unknownComplianceClusters": unknown, "pendingComplianceClusters": pending,
	}
}

func jsonArray(items ...any) []byte {
	if items == nil {
		items = []any{}
	}
	data, err := json.Marshal(items)
	if err != nil {
		panic(err)
	}
	return data
}

// ghApply decodes data as typ and applies it through the registry of both
// profiles (fence and handler in one transaction), as a worker would.
func ghApply(t *testing.T, pool *pgxpool.Pool, hub, typ string, v bundle.Version, data []byte) bool {
	t.Helper()
	reg, err := ForProfiles(true, true)
	if err != nil {
		t.Fatal(err)
	}
	s, ok := reg.Lookup(typ)
	if !ok {
		t.Fatalf("no syncer for %q", typ)
	}
	p, err := s.Decode(data)
	if err != nil {
		t.Fatalf("decode %s %s: %v", typ, data, err)
	}
	tx, err := pool.Begin(t.Context())
	if err != nil {
		t.Fatal(err)
	}
	applied, err := reg.Apply(t.Context(), tx, []*bundle.Bundle{newBundle(hub, typ, v, p)})
	if err != nil {
		_ = tx.Rollback(t.Context())
		t.Fatalf("apply %s %v: %v", typ, v, err)
	}
	if err := tx.Commit(t.Context()); err != nil {
		t.Fatal(err)
	}
	return applied
}

func TestGlobalHubProfilesRegistry(t *testing.T) {
	reg, err := ForProfiles(true, true)
	if err != nil {
		t.Fatal(err)
	}
	var names []string
	for _, ti := range reg.Types() {
		names = append(names, ti.Name)
	}
	want := []string{"heartbeat", "managedclusters", "clusterspolicies", "compliance", "compliancedelta", "policyevents",
		GHHeartbeat, GHHubInfo, GHManagedCluster, GHManagedClusterEvent, GHLocalSpec, GHLocalCompliance, GHLocalCompleteCompliance,
		GHRootPolicyEvent, GHReplicatedPolicyEvent, GHAlertCounts, GHMigration}
	if fmt.Sprint(names) != fmt.Sprint(want) {
		t.Fatalf("types %v, want %v", names, want)
	}
	gh, err := ForProfiles(false, true)
	if err != nil {
		t.Fatal(err)
	}
	if _, ok := gh.Lookup("compliance"); ok {
		t.Fatal("the globalhub profile alone registers STB's compliance")
	}
	if _, err := ForProfiles(false, false); err == nil {
		t.Fatal("no profile accepted")
	}
	s, _ := reg.Lookup(GHLocalCompleteCompliance)
	if s.DependsOn != GHLocalCompliance || s.Rule != bundle.Exactly || s.Kind != bundle.Complete {
		t.Fatalf("localcompletecompliance is %+v", s.TypeInfo)
	}
}

func TestGlobalHubHeartbeatAndInfo(t *testing.T) {
	t.Parallel()
	pool, _ := dbtest.New(t)
	if !ghApply(t, pool, "hub1", GHHeartbeat, bundle.Version{Incarnation: 5, Generation: 1}, []byte(`[]`)) {
		t.Fatal("heartbeat not applied")
	}
	var n int
	if err := pool.QueryRow(t.Context(), `SELECT count(*) FROM status.hub_heartbeats WHERE hub = 'hub1'`).Scan(&n); err != nil || n != 1 {
		t.Fatalf("heartbeat rows %d, %v", n, err)
	}
	info := func(console string) []byte {
		return []byte(fmt.Sprintf(`{"consoleURL": %q, "grafanaURL": "", "clusterId": "8606cf88-c711-4dae-ba7e-2e4d54227887", "mchVersion": "2.13.0"}`, console))
	}
	ghApply(t, pool, "hub1", GHHubInfo, bundle.Version{Incarnation: 5, Generation: 1}, info("https://console-a"))
	ghApply(t, pool, "hub1", GHHubInfo, bundle.Version{Incarnation: 5, Generation: 2}, info("https://console-b"))
	if ghApply(t, pool, "hub1", GHHubInfo, bundle.Version{Incarnation: 5, Generation: 1}, info("https://console-a")) {
		t.Fatal("an older hub info was applied")
	}
	// An info without clusterId (sent before the hub's ClusterVersion is
	// seen: agent/pkg/status/syncers/managedhub/cluster_info_syncer.go) is
	// ignored, as upstream's manager ignores it
	// (manager/pkg/status/handlers/managedhub/hub_cluster_info_handler.go).
	if !ghApply(t, pool, "hub1", GHHubInfo, bundle.Version{Incarnation: 5, Generation: 3},
		[]byte(`{"consoleURL": "https://console-c", "grafanaURL": "", "clusterId": "", "mchVersion": ""}`)) {
		t.Fatal("an info without clusterId was refused by the fence")
	}
	ghApply(t, pool, "hub2", GHHubInfo, bundle.Version{Incarnation: 5, Generation: 1}, []byte(`{"consoleURL": "https://console-c", "grafanaURL": ""}`))
	var rows int
	if err := pool.QueryRow(t.Context(), `SELECT count(*) FROM status.hub_info WHERE hub = 'hub2'`).Scan(&rows); err != nil || rows != 0 {
		t.Fatalf("hub2's info without clusterId stored %d rows, %v", rows, err)
	}
	var id, console, mch string
	err := pool.QueryRow(t.Context(), `SELECT cluster_id, payload->>'consoleURL', payload->>'mchVersion' FROM status.hub_info WHERE hub = 'hub1'`).Scan(&id, &console, &mch)
	if err != nil || id != "8606cf88-c711-4dae-ba7e-2e4d54227887" || console != "https://console-b" || mch != "2.13.0" {
		t.Fatalf("hub info %q %q %q, %v", id, console, mch, err)
	}
}

func TestGlobalHubManagedCluster(t *testing.T) {
	t.Parallel()
	pool, _ := dbtest.New(t)
	v := func(g uint64) bundle.Version { return bundle.Version{Incarnation: 9, Generation: g} }
	ref := func(id, name string) map[string]string {
		m := map[string]string{}
		if id != "" {
			m["id"] = id
		}
		if name != "" {
			m["name"] = name
		}
		return m
	}
	steps := []struct {
		name string
		data []byte
		want map[string]string // name → id/rev
	}{
		{"create", ghGeneric([]json.RawMessage{ghClusterJSON("a", "id-a", "1"), ghClusterJSON("b", "id-b", "1")}, nil, nil, nil, nil),
			map[string]string{"a": "id-a/1", "b": "id-b/1"}},
		{"update changes only what it lists", ghGeneric(nil, []json.RawMessage{ghClusterJSON("a", "id-a", "2")}, nil, nil, nil),
			map[string]string{"a": "id-a/2", "b": "id-b/1"}},
		{"create and delete by id", ghGeneric([]json.RawMessage{ghClusterJSON("c", "id-c", "1"), ghClusterJSON("d", "id-d", "1")}, nil, nil,
			[]map[string]string{ref("id-b", "b")}, nil),
			map[string]string{"a": "id-a/2", "c": "id-c/1", "d": "id-d/1"}},
		{"delete by name when the id is not known", ghGeneric(nil, nil, nil, []map[string]string{ref("", "d")}, nil),
			map[string]string{"a": "id-a/2", "c": "id-c/1"}},
		{"resync objects upsert, and resync_metadata removes every cluster it leaves out",
			ghGeneric(nil, nil, []json.RawMessage{ghClusterJSON("a", "id-a", "3"), ghClusterJSON("e", "id-e", "1")}, nil,
				[]map[string]string{ref("id-a", "a"), ref("id-e", "e")}),
			map[string]string{"a": "id-a/3", "e": "id-e/1"}},
		{"an empty bundle changes nothing (no resync_metadata: no resync)", []byte(`{}`),
			map[string]string{"a": "id-a/3", "e": "id-e/1"}},
	}
	for i, s := range steps {
		if !ghApply(t, pool, "hub1", GHManagedCluster, v(uint64(i+1)), s.data) {
			t.Fatalf("%s: not applied", s.name)
		}
		got := map[string]string{}
		for name, r := range readClusters(t, pool, "hub1") {
			got[name] = r.ID + "/" + r.Rev
		}
		if !maps.Equal(got, s.want) {
			t.Fatalf("%s: clusters %v, want %v", s.name, got, s.want)
		}
	}
	// An older event writes nothing: the fence.
	if ghApply(t, pool, "hub1", GHManagedCluster, v(1), steps[0].data) {
		t.Fatal("an older create was applied again")
	}
	if got := readClusters(t, pool, "hub1"); len(got) != 2 {
		t.Fatalf("an older event changed the clusters: %v", got)
	}
	// A resync is several frames and a resync_metadata frame with one
	// extversion (agent/pkg/status/emitters/object_emitter.go): every
	// frame is applied, the second too.
	frames := [][]byte{
		ghGeneric(nil, nil, []json.RawMessage{ghClusterJSON("a", "id-a", "4")}, nil, nil),
		ghGeneric(nil, nil, []json.RawMessage{ghClusterJSON("f", "id-f", "6")}, nil, nil),
		ghGeneric(nil, nil, nil, nil, []map[string]string{ref("id-a", "a"), ref("id-f", "f")}),
	}
	for i, f := range frames {
		if !ghApply(t, pool, "hub1", GHManagedCluster, v(20), f) {
			t.Fatalf("resync frame %d of one version not applied", i+1)
		}
	}
	got := map[string]string{}
	for name, r := range readClusters(t, pool, "hub1") {
		got[name] = r.ID + "/" + r.Rev
	}
	if want := map[string]string{"a": "id-a/4", "f": "id-f/6"}; !maps.Equal(got, want) {
		t.Fatalf("after a resync of three frames: clusters %v, want %v", got, want)
	}
}

// TestGlobalHubLocalSpec: policy.localspec is a generic bundle of Policy
// objects (upstream: manager/pkg/status/handlers/policy/
// local_policy_spec_handler.go): upserts by uid, deletes by uid or
// namespace and name, and a non-empty resync_metadata deletes every policy
// of the hub it does not list by id.
func TestGlobalHubLocalSpec(t *testing.T) {
	t.Parallel()
	pool, _ := dbtest.New(t)
	policy := func(name, uid, rev string) json.RawMessage {
		return json.RawMessage(fmt.Sprintf(`{"apiVersion":"policy.open-cluster-management.io/v1","kind":"Policy",
			"metadata":{"name":%q,"namespace":"default","uid":%q,"generation":%s},"spec":{"disabled":false,"remediationAction":"inform"},"status":{}}`, name, uid, rev))
	}
	read := func() map[string]string {
		rows, err := pool.Query(t.Context(), `SELECT name, policy_id, payload->'metadata'->>'generation' FROM status.local_policies WHERE hub = 'hub1'`)
		if err != nil {
			t.Fatal(err)
		}
		defer rows.Close()
		out := map[string]string{}
		for rows.Next() {
			var name, id, gen string
			if err := rows.Scan(&name, &id, &gen); err != nil {
				t.Fatal(err)
			}
			out[name] = id + "/" + gen
		}
		return out
	}
	v := func(g uint64) bundle.Version { return bundle.Version{Incarnation: 1<<32 | g, Generation: g} }
	steps := []struct {
		name string
		data []byte
		want map[string]string
	}{
		{"resync frame", ghGeneric(nil, nil, []json.RawMessage{policy("p1", "u1", "1"), policy("p2", "u2", "1")}, nil, nil),
			map[string]string{"p1": "u1/1", "p2": "u2/1"}},
		{"update", ghGeneric(nil, []json.RawMessage{policy("p1", "u1", "2")}, nil, nil, nil),
			map[string]string{"p1": "u1/2", "p2": "u2/1"}},
		{"delete by namespace and name", ghGeneric(nil, nil, nil, []map[string]string{{"ns": "default", "name": "p2"}}, nil),
			map[string]string{"p1": "u1/2"}},
		{"resync_metadata deletes what it leaves out", ghGeneric(nil, nil, []json.RawMessage{policy("p3", "u3", "1")}, nil,
			[]map[string]string{{"id": "u3", "ns": "default", "name": "p3"}}),
			map[string]string{"p3": "u3/1"}},
		{"delete by uid", ghGeneric(nil, nil, nil, []map[string]string{{"id": "u3", "ns": "default", "name": "p3"}}, nil),
			map[string]string{}},
	}
	for i, s := range steps {
		if !ghApply(t, pool, "hub1", GHLocalSpec, v(uint64(i+1)), s.data) {
			t.Fatalf("%s: not applied", s.name)
		}
		if got := read(); !maps.Equal(got, s.want) {
			t.Fatalf("%s: policies %v, want %v", s.name, got, s.want)
		}
	}
	if _, err := GlobalHubLocalSpec().Decode([]byte(`{"update":[{"metadata":{"name":"p","namespace":"default"}}]}`)); err == nil {
		t.Fatal("a policy without metadata.uid was taken")
	}
}

// TestGlobalHubAlertCountsAndMigrations: security.alertcounts is the
// latest counts per ACS Central (manager/pkg/status/handlers/security/
// security_alert_counts_handler.go: upsert on hub and source), and a
// managedclustermigration report is kept per migration and stage, a
// resync report clearing the hub's (handlers/clustermigartion).
func TestGlobalHubAlertCountsAndMigrations(t *testing.T) {
	t.Parallel()
	pool, _ := dbtest.New(t)
	v := func(g uint64) bundle.Version { return bundle.Version{Incarnation: 1<<32 | g, Generation: g} }
	ghApply(t, pool, "hub1", GHAlertCounts, v(1), []byte(`{"low":2,"high":1,"detail_url":"https://c/main/violations","source":"stackrox/central"}`))
	ghApply(t, pool, "hub1", GHAlertCounts, v(2), []byte(`{"critical":3,"detail_url":"https://c/main/violations","source":"stackrox/central"}`))
	var low, high, critical int
	if err := pool.QueryRow(t.Context(), `SELECT low, high, critical FROM status.security_alert_counts WHERE hub = 'hub1' AND source = 'stackrox/central'`).
		Scan(&low, &high, &critical); err != nil || low != 0 || high != 0 || critical != 3 {
		t.Fatalf("alert counts %d %d %d, %v; want 0 0 3 (a count left out is 0)", low, high, critical, err)
	}
	if _, err := GlobalHubAlertCounts().Decode([]byte(`[]`)); err == nil {
		t.Fatal("alert counts that are not an object were taken")
	}

	mig := func(g uint64, data string) { ghApply(t, pool, "hub1", GHMigration, v(g), []byte(data)) }
	mig(1, `{"managedClusters":["c1"],"migrationId":"m1","stage":"Validating"}`)
	mig(2, `{"migrationId":"m1","stage":"Deploying","errMessage":"timeout"}`)
	var n int
	var msg string
	if err := pool.QueryRow(t.Context(), `SELECT count(*), max(error_message) FROM status.cluster_migrations WHERE hub = 'hub1'`).Scan(&n, &msg); err != nil || n != 2 || msg != "timeout" {
		t.Fatalf("migrations %d %q, %v", n, msg, err)
	}
	mig(3, `{"resync":true}`)
	if err := pool.QueryRow(t.Context(), `SELECT count(*) FROM status.cluster_migrations WHERE hub = 'hub1'`).Scan(&n); err != nil || n != 0 {
		t.Fatalf("after a resync report: %d migrations, %v", n, err)
	}
	if _, err := GlobalHubMigration().Decode([]byte(`{"managedClusters":["c1"]}`)); err == nil {
		t.Fatal("a migration report without id and stage was taken")
	}
}

func TestGlobalHubCompliance(t *testing.T) {
	t.Parallel()
	pool, _ := dbtest.New(t)
	l := func(names ...string) []string { return names }
	lc := bundle.Version{Incarnation: 4, Generation: 1}
	// policy.localcompliance: the placement and the states.
	ghApply(t, pool, "hub1", GHLocalCompliance, lc, jsonArray(
		ghComplianceJSON("p1", l("c1"), l("c2"), nil, l("c3")),
		ghComplianceJSON("p2", nil, nil, l("c1"), nil),
		ghComplianceJSON("p3", l("c1", "c2"), nil, nil, nil),
	))
	ghApply(t, pool, "hub2", GHLocalCompliance, lc, jsonArray(ghComplianceJSON("p1", l("c9"), nil, nil, nil)))
	want := map[string]string{"p1/c1": "compliant", "p1/c2": "non_compliant", "p1/c3": "pending", "p2/c1": "unknown", "p3/c1": "compliant", "p3/c2": "compliant"}
	if got := states(readCompliance(t, pool, "hub1")); !maps.Equal(got, want) {
		t.Fatalf("after localcompliance: %v, want %v", got, want)
	}

	// policy.localcompletecompliance: only the clusters that do not comply;
	// every other placed pair of the hub is compliant, of the policies it
	// leaves out too (p2 here); clusters without a row are not placed.
	ghApply(t, pool, "hub1", GHLocalCompleteCompliance, bundle.Version{Incarnation: 4, Generation: 1}, jsonArray(
		ghCompleteJSON("p1", l("c1"), nil, l("c2", "x")),
		ghCompleteJSON("p3", nil, l("c2"), nil),
	))
	want = map[string]string{"p1/c1": "non_compliant", "p1/c2": "pending", "p1/c3": "compliant", "p2/c1": "compliant", "p3/c1": "compliant", "p3/c2": "unknown"}
	if got := states(readCompliance(t, pool, "hub1")); !maps.Equal(got, want) {
		t.Fatalf("after localcompletecompliance: %v, want %v", got, want)
	}

	// A new localcompliance is the whole placement: p2 left out is gone, p1
	// without c3 no longer placed there; a cluster listed twice takes the
	// state of higher precedence (non_compliant over compliant).
	ghApply(t, pool, "hub1", GHLocalCompliance, bundle.Version{Incarnation: 4, Generation: 2}, jsonArray(
		ghComplianceJSON("p1", l("c1", "c2"), l("c2"), nil, nil),
		ghComplianceJSON("p3", l("c1", "c2"), nil, nil, nil),
	))
	want = map[string]string{"p1/c1": "compliant", "p1/c2": "non_compliant", "p3/c1": "compliant", "p3/c2": "compliant"}
	if got := states(readCompliance(t, pool, "hub1")); !maps.Equal(got, want) {
		t.Fatalf("after a second localcompliance: %v, want %v", got, want)
	}
	// An empty report: the hub has no policies left.
	ghApply(t, pool, "hub1", GHLocalCompliance, bundle.Version{Incarnation: 4, Generation: 3}, []byte(`[]`))
	if got := readCompliance(t, pool, "hub1"); len(got) != 0 {
		t.Fatalf("after an empty localcompliance: %v", states(got))
	}
	if got := states(readCompliance(t, pool, "hub2")); !maps.Equal(got, map[string]string{"p1/c9": "compliant"}) {
		t.Fatalf("hub2 was touched: %v", got)
	}
}

func TestGlobalHubEvents(t *testing.T) {
	t.Parallel()
	pool, _ := dbtest.New(t)
	clusterEvent := func(name, reason string) map[string]any {
		return map[string]any{
			"eventNamespace": "cluster1", "eventName": name, "clusterName": "cluster1",
			"clusterId": "e3bb27fc-b510-4844-95db-5fce88548363", "leafHubName": "hub1",
			"message": "The cluster1 is " + reason, "reason": reason,
			"reportingController": "managedcluster-import-controller", "reportingInstance": "managedcluster-import-controller-v2-b6cbc7658-dvp9t",
			"type": "Normal", "createdAt": "2025-10-23T02:32:06Z",
		}
	}
	batch := jsonArray(clusterEvent("cluster1.1870fdff35b3d4bc", "WaitForImporting"), clusterEvent("cluster1.1870fdff5a401195", "Importing"))
	single, _ := json.Marshal(clusterEvent("cluster1.1870fe215eb1712a", "Detaching"))
	ghApply(t, pool, "hub1", GHManagedClusterEvent, bundle.Version{Incarnation: 1, Generation: 1}, batch)
	ghApply(t, pool, "hub1", GHManagedClusterEvent, bundle.Version{Incarnation: 1, Generation: 2}, single)
	// The same batch again under a newer version (an agent resending it)
	// is stored once.
	ghApply(t, pool, "hub1", GHManagedClusterEvent, bundle.Version{Incarnation: 1, Generation: 3}, batch)
	var n int
	var reasons string
	if err := pool.QueryRow(t.Context(), `SELECT count(*), string_agg(reason, ',' ORDER BY event_name) FROM event.managed_cluster_events WHERE hub = 'hub1'`).Scan(&n, &reasons); err != nil {
		t.Fatal(err)
	}
	if n != 3 || reasons != "WaitForImporting,Importing,Detaching" {
		t.Fatalf("cluster events %d %q", n, reasons)
	}

	root := map[string]any{
		"leafHubName": "hub2", "eventName": "policy-limitrange.17b8363660d39188", "eventNamespace": "local-policy-namespace",
		"message": "Policy local-policy-namespace/policy-limitrange was propagated to cluster kind-hub2-cluster1/kind-hub2-cluster1",
		"reason":  "PolicyPropagation", "count": 1, "source": map[string]string{"component": "policy-propagator"},
		"createdAt": "2024-02-29T03:01:05Z", "policyId": "1f2deb7a-0d29-4762-b0fc-daa3ba16c5b5", "compliance": "Unknown",
	}
	replicated := map[string]any{
		"leafHubName": "hub2", "eventName": "local-policy-namespace.policy-limitrange.17b83638614ff6b7", "eventNamespace": "kind-hub2-cluster1",
		"message": "NonCompliant; violation - limitranges [container-mem-limit-range] not found in namespace default",
		"reason":  "PolicyStatusSync", "count": 1, "source": map[string]string{"component": "policy-status-history-sync"},
		"createdAt": "2024-02-29T03:01:14Z", "policyId": "1f2deb7a-0d29-4762-b0fc-daa3ba16c5b5",
		"clusterId": "0884ef05-115d-46f5-bbda-f759adcbbe5b", "clusterName": "kind-hub2-cluster1", "compliance": "NonCompliant",
	}
	ghApply(t, pool, "hub2", GHRootPolicyEvent, bundle.Version{Incarnation: 1, Generation: 1}, jsonArray(root))
	ghApply(t, pool, "hub2", GHReplicatedPolicyEvent, bundle.Version{Incarnation: 1, Generation: 1}, jsonArray(replicated))
	rows, err := pool.Query(t.Context(), `SELECT kind, cluster_name, compliance, event_count, payload->'source'->>'component' FROM event.local_policy_events WHERE hub = 'hub2' ORDER BY kind`)
	if err != nil {
		t.Fatal(err)
	}
	var got []string
	for rows.Next() {
		var kind, cluster, compliance, component string
		var count int
		if err := rows.Scan(&kind, &cluster, &compliance, &count, &component); err != nil {
			t.Fatal(err)
		}
		got = append(got, fmt.Sprintf("%s/%s/%s/%d/%s", kind, cluster, compliance, count, component))
	}
	if rows.Err() != nil {
		t.Fatal(rows.Err())
	}
	want := []string{"replicated/kind-hub2-cluster1/non_compliant/1/policy-status-history-sync", "root//unknown/1/policy-propagator"}
	if fmt.Sprint(got) != fmt.Sprint(want) {
		t.Fatalf("policy events %v, want %v", got, want)
	}
}

// ghDecodeCases are the decoder table of every global-hub type, one row per
// rule of the README's mapping table; the rows are also the fuzz seeds.
var ghDecodeCases = []struct {
	typ string
	decodeCase
}{
	{GHHeartbeat, decodeCase{"heartbeat is an empty array", `[]`, ""}},
	{GHHeartbeat, decodeCase{"heartbeat without data", ``, ""}},
	{GHHeartbeat, decodeCase{"heartbeat null", `null`, ""}},
	{GHHeartbeat, decodeCase{"heartbeat object", `{}`, deadletter.BadPayload}},
	{GHHubInfo, decodeCase{"info", `{"consoleURL":"https://c","grafanaURL":"","clusterId":"x"}`, ""}},
	{GHHubInfo, decodeCase{"info without clusterId", `{"consoleURL":"https://c"}`, ""}},
	{GHHubInfo, decodeCase{"info clusterId not a string", `{"clusterId":7}`, deadletter.BadPayload}},
	{GHHubInfo, decodeCase{"info array", `[]`, deadletter.BadPayload}},
	{GHManagedCluster, decodeCase{"generic bundle, all members", string(ghGeneric(
		[]json.RawMessage{ghClusterJSON("a", "id-a", "1")}, []json.RawMessage{ghClusterJSON("b", "id-b", "1")},
		[]json.RawMessage{ghClusterJSON("c", "id-c", "1")}, []map[string]string{{"id": "id-d", "name": "d"}},
		[]map[string]string{{"id": "id-c", "name": "c"}})), ""}},
	{GHManagedCluster, decodeCase{"generic bundle, empty", `{}`, ""}},
	{GHManagedCluster, decodeCase{"cluster without a name", `{"create":[{"metadata":{"uid":"u"}}]}`, deadletter.BadPayload}},
	{GHManagedCluster, decodeCase{"delete without id or name", `{"delete":[{"ns":"x"}]}`, deadletter.BadPayload}},
	{GHManagedCluster, decodeCase{"members are lists", `{"create":{}}`, deadletter.BadPayload}},
	{GHManagedCluster, decodeCase{"an array is not a generic bundle", `[]`, deadletter.BadPayload}},
	{GHLocalCompliance, decodeCase{"localcompliance with null lists", string(jsonArray(ghComplianceJSON("p1", []string{"a"}, nil, nil, []string{"b"}))), ""}},
	{GHLocalCompliance, decodeCase{"localcompliance without policyId", `[{"compliantClusters":["a"]}]`, deadletter.BadPayload}},
	{GHLocalCompliance, decodeCase{"localcompliance object", `{"objects":[]}`, deadletter.BadPayload}},
	{GHLocalCompliance, decodeCase{"localcompliance cluster not a string", `[{"policyId":"p","pendingComplianceClusters":[1]}]`, deadletter.BadPayload}},
	{GHLocalCompleteCompliance, decodeCase{"localcompletecompliance", string(jsonArray(ghCompleteJSON("p1", []string{"a"}, nil, []string{"b"}))), ""}},
	{GHLocalCompleteCompliance, decodeCase{"localcompletecompliance empty", `[]`, ""}},
	{GHLocalCompleteCompliance, decodeCase{"localcompletecompliance null", `null`, deadletter.BadPayload}},
	{GHManagedClusterEvent, decodeCase{"cluster events batch", `[{"eventName":"e1","eventNamespace":"c1","clusterName":"c1","reason":"Imported","createdAt":"2025-10-23T02:33:08Z"}]`, ""}},
	{GHManagedClusterEvent, decodeCase{"cluster event single", `{"eventName":"e1","clusterName":"c1","createdAt":"2025-10-23T02:33:08Z"}`, ""}},
	{GHManagedClusterEvent, decodeCase{"cluster event without createdAt", `[{"eventName":"e1"}]`, deadletter.BadPayload}},
	{GHManagedClusterEvent, decodeCase{"cluster event bad createdAt", `[{"eventName":"e1","createdAt":"yesterday"}]`, deadletter.BadPayload}},
	{GHRootPolicyEvent, decodeCase{"root policy event", `[{"eventName":"p.1","policyId":"p","count":2,"createdAt":"2024-02-29T03:01:05Z","compliance":"Unknown"}]`, ""}},
	{GHRootPolicyEvent, decodeCase{"root policy event without policyId", `[{"eventName":"p.1","createdAt":"2024-02-29T03:01:05Z"}]`, deadletter.BadPayload}},
	{GHReplicatedPolicyEvent, decodeCase{"replicated event count not an integer", `[{"eventName":"p.1","policyId":"p","count":1.5,"createdAt":"2024-02-29T03:01:05Z"}]`, deadletter.BadPayload}},
}

func TestGlobalHubDecode(t *testing.T) {
	reg, err := ForProfiles(false, true)
	if err != nil {
		t.Fatal(err)
	}
	for _, c := range ghDecodeCases {
		s, ok := reg.Lookup(c.typ)
		if !ok {
			t.Fatalf("no syncer for %s", c.typ)
		}
		runDecodeCases(t, s.Decode, 1, func(int) decodeCase { return c.decodeCase }, func(t *testing.T, _ int, p any) {
			if p == nil {
				t.Fatal("nil payload")
			}
		})
	}
}

// FuzzGlobalHubDecode: no global-hub decoder panics, and every error it
// returns carries a dead-letter reason.
func FuzzGlobalHubDecode(f *testing.F) {
	reg, err := ForProfiles(false, true)
	if err != nil {
		f.Fatal(err)
	}
	types := reg.Types()
	for _, c := range ghDecodeCases {
		for i, ti := range types {
			if ti.Name == c.typ {
				f.Add(uint8(i), []byte(c.data))
			}
		}
	}
	f.Fuzz(func(t *testing.T, which uint8, data []byte) {
		s, _ := reg.Lookup(types[int(which)%len(types)].Name)
		p, err := s.Decode(data)
		if err != nil {
			var r deadletter.Reasoned
			if !errors.As(err, &r) {
				t.Fatalf("%s: error without a reason: %v", s.Name, err)
			}
			return
		}
		if p == nil {
			t.Fatalf("%s: nil payload without an error", s.Name)
		}
	})
}
