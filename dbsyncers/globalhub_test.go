package dbsyncers

import (
	"crypto/sha256"
	"encoding/json"
	"errors"
	"fmt"
	"slices"
	"strings"
	"sync"
	"testing"
	"time"

	"github.com/jackc/pgx/v5"
	"github.com/jackc/pgx/v5/pgxpool"

	"github.com/stbridge/stb/pkg/bundle"
	"github.com/stbridge/stb/pkg/bundle/globalhub"
	"github.com/stbridge/stb/pkg/db/dbtest"
	"github.com/stbridge/stb/pkg/deadletter"
)

// The global-hub profile writes the global hub's own tables
// (sql/002_globalhub.sql) as upstream's manager handlers do
// (stolostron/multicluster-global-hub manager/pkg/status/handlers). The
// tests of each handler's rules are in globalhub_*_test.go, each case
// citing the upstream file it follows.
//
// The data below is shaped exactly as the multicluster global-hub agent
// sends it (pkg/bundle/generic, pkg/bundle/grc, pkg/bundle/event, the
// agent's emitters): JSON arrays at the top, lists the agent has nothing
// for marshalled as null, generic bundle members left out when empty.

// ghIDs remembers the label of every id ghUUID made, so that tests can
// show rows by label.
var ghIDs sync.Map

// ghUUID returns a UUID (version 4 in form) fixed for label.
func ghUUID(label string) string {
	h := sha256.Sum256([]byte(label))
	h[6] = h[6]&0x0f | 0x40
	h[8] = h[8]&0x3f | 0x80
	id := fmt.Sprintf("%x-%x-%x-%x-%x", h[0:4], h[4:6], h[6:8], h[8:10], h[10:16])
	ghIDs.Store(id, label)
	return id
}

// ghLabel returns the label ghUUID made id for, or id itself.
func ghLabel(id string) string {
	if l, ok := ghIDs.Load(id); ok {
		return l.(string)
	}
	return id
}

// ghClaim is one status.clusterClaims entry.
type ghClaim struct{ Name, Value string }

// ghClusterJSON is a ManagedCluster as the agent's generic bundle carries
// it, identified by its id.k8s.io cluster claim, whose value is
// ghUUID(name) unless claims are given.
func ghClusterJSON(name, rev string, claims ...ghClaim) json.RawMessage {
	if claims == nil {
		claims = []ghClaim{{"platform.open-cluster-management.io", "Other"}, {ClusterIDClaim, ghUUID(name)}}
	}
	var cc []string
	for _, c := range claims {
		cc = append(cc, fmt.Sprintf(`{"name": %q, "value": %q}`, c.Name, c.Value))
	}
	return json.RawMessage(fmt.Sprintf(`{
		"kind": "ManagedCluster", "apiVersion": "cluster.open-cluster-management.io/v1",
		"metadata": {"name": %q, "uid": %q, "resourceVersion": %q, "creationTimestamp": "2024-02-27T01:48:31Z",
			"labels": {"cluster.open-cluster-management.io/clusterset": "default", "rev": %q},
			"annotations": {"global-hub.open-cluster-management.io/managed-by": "hub1"}},
		"spec": {"managedClusterClientConfigs": [{"url": "https://%s:6443", "caBundle": "XXX"}], "hubAcceptsClient": true, "leaseDurationSeconds": 60},
		"status": {"conditions": [{"type": "ManagedClusterConditionAvailable", "status": "True", "lastTransitionTime": "2024-02-27T01:48:32Z", "reason": "ManagedClusterAvailable", "message": "Managed cluster is available"}],
			"version": {"kubernetes": "v1.24.0"},
			"clusterClaims": [%s]}
	}`, name, ghUUID("k8s-uid-"+name), rev, rev, name, strings.Join(cc, ", ")))
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

// ghRef is an ObjectMetadata {"id","ns","name"}, empty members left out.
func ghRef(id, ns, name string) map[string]string {
	m := map[string]string{}
	for k, v := range map[string]string{"id": id, "ns": ns, "name": name} {
		if v != "" {
			m[k] = v
		}
	}
	return m
}

// ghComplianceJSON is one policy of a localcompliance event (grc.
// Compliance); nil lists are sent as null, as it has no omitempty.
func ghComplianceJSON(policy string, compliant, nonCompliant, unknown, pending []string) map[string]any {
	return map[string]any{
		"policyId": ghUUID(policy), "policy_namespaced_name": "default/" + policy,
		"compliantClusters": compliant, "nonCompliantClusters": nonCompliant,
		"unknownComplianceClusters": unknown, "pendingComplianceClusters": pending,
	}
}

// ghCompleteJSON is one policy of a localcompletecompliance event.
func ghCompleteJSON(policy string, nonCompliant, unknown, pending []string) map[string]any {
	return map[string]any{
		"policyId": ghUUID(policy), "policy_namespaced_name": "default/" + policy,
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

func mustJSON(v any) []byte {
	data, err := json.Marshal(v)
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
	p, err := s.decode(&bundle.Bundle{Type: typ, Raw: data})
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

// ghWrite applies data as typ through Registry.Write, the workers' path:
// the fence and the statements pipelined as one implicit transaction.
func ghWrite(t *testing.T, pool *pgxpool.Pool, hub, typ string, v bundle.Version, data []byte) {
	t.Helper()
	reg, err := ForProfiles(false, true)
	if err != nil {
		t.Fatal(err)
	}
	p, err := reg.Decode(&bundle.Bundle{Type: typ, Raw: data})
	if err != nil {
		t.Fatalf("decode %s: %v", typ, err)
	}
	applied, err := reg.Write(t.Context(), pool, [][]*bundle.Bundle{{newBundle(hub, typ, v, p)}})
	if err != nil || len(applied) != 1 || !applied[0] {
		t.Fatalf("write %s %v: applied %v, %v", typ, v, applied, err)
	}
}

// ghQueryStrings runs a query whose rows are one text column each and returns
// them sorted.
func ghQueryStrings(t *testing.T, pool *pgxpool.Pool, sql string, args ...any) []string {
	t.Helper()
	rows, err := pool.Query(t.Context(), sql, args...)
	if err != nil {
		t.Fatalf("%s: %v", sql, err)
	}
	out, err := pgx.CollectRows(rows, pgx.RowTo[string])
	if err != nil {
		t.Fatalf("%s: %v", sql, err)
	}
	slices.Sort(out)
	return out
}

// ghUTCNow checks that ts, a `timestamp without time zone` the handlers
// set, is the database's current time in UTC (within a minute), as
// upstream writes it.
func ghUTCNow(t *testing.T, pool *pgxpool.Pool, what string, ts time.Time) {
	t.Helper()
	var ok bool
	if err := pool.QueryRow(t.Context(), `SELECT abs(extract(epoch FROM $1::timestamp - (now() AT TIME ZONE 'UTC'))) < 60`, ts).Scan(&ok); err != nil {
		t.Fatal(err)
	}
	if !ok {
		t.Errorf("%s = %v, want the current time in UTC", what, ts)
	}
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
	// local_complete_handler.go: dependency.NewDependency(LocalComplianceType, ExactMatch).
	s, _ := reg.Lookup(GHLocalCompleteCompliance)
	if s.DependsOn != GHLocalCompliance || s.Rule != bundle.Exactly || s.Kind != bundle.Complete {
		t.Fatalf("localcompletecompliance is %+v", s.TypeInfo)
	}
}

// TestGlobalHubWritesNoSTBTables: every global-hub type writes the global
// hub's tables, never those of STB's own wire format, which must stay as
// STB's own types leave them (managedclustermigration alone has a table
// of STB's own: upstream keeps migrations in memory).
func TestGlobalHubWritesNoSTBTables(t *testing.T) {
	t.Parallel()
	pool, _ := dbtest.New(t)
	v := bundle.Version{Incarnation: 1, Generation: 1}
	ghApply(t, pool, "hub1", GHHeartbeat, v, []byte(`[]`))
	ghApply(t, pool, "hub1", GHHubInfo, v, []byte(`{"consoleURL":"https://c","grafanaURL":"","clusterId":"`+ghUUID("hub1")+`"}`))
	ghApply(t, pool, "hub1", GHManagedCluster, v, ghGeneric([]json.RawMessage{ghClusterJSON("c1", "1")}, nil, nil, nil, nil))
	ghApply(t, pool, "hub1", GHLocalCompliance, v, jsonArray(ghComplianceJSON("p1", []string{"c1"}, nil, nil, nil)))
	ghApply(t, pool, "hub1", GHLocalCompleteCompliance, v, jsonArray(ghCompleteJSON("p1", []string{"c1"}, nil, nil)))
	var stbRows, ghRows int
	if err := pool.QueryRow(t.Context(), `SELECT
		(SELECT count(*) FROM stb.managed_clusters) + (SELECT count(*) FROM stb.compliance) + (SELECT count(*) FROM stb.hub_heartbeats),
		(SELECT count(*) FROM status.managed_clusters) + (SELECT count(*) FROM local_status.compliance)
		 + (SELECT count(*) FROM status.leaf_hub_heartbeats) + (SELECT count(*) FROM status.leaf_hubs)`).Scan(&stbRows, &ghRows); err != nil {
		t.Fatal(err)
	}
	if stbRows != 0 || ghRows != 4 {
		t.Fatalf("rows in STB's own tables %d (want 0), in the global hub's %d (want 4)", stbRows, ghRows)
	}
}

// TestGlobalHubAlertCounts: security.alertcounts is the latest counts per
// ACS Central (manager/pkg/status/handlers/security/
// security_alert_counts_handler.go: OnConflict (hub_name, source)
// UpdateAll).
func TestGlobalHubAlertCounts(t *testing.T) {
	t.Parallel()
	pool, _ := dbtest.New(t)
	v := func(g uint64) bundle.Version { return bundle.Version{Incarnation: 1<<32 | g, Generation: g} }
	type row struct {
		low, medium, high, critical int
		url                         string
		created, updated            time.Time
	}
	read := func(hub, source string) (r row) {
		t.Helper()
		if err := pool.QueryRow(t.Context(), `SELECT low, medium, high, critical, detail_url, created_at, updated_at
			FROM security.alert_counts WHERE hub_name = $1 AND source = $2`, hub, source).
			Scan(&r.low, &r.medium, &r.high, &r.critical, &r.url, &r.created, &r.updated); err != nil {
			t.Fatalf("alert counts of %s %s: %v", hub, source, err)
		}
		return r
	}
	ghApply(t, pool, "hub1", GHAlertCounts, v(1), []byte(`{"low":2,"medium":4,"high":1,"detail_url":"https://c/main/violations","source":"stackrox/central"}`))
	first := read("hub1", "stackrox/central")
	ghUTCNow(t, pool, "created_at", first.created)
	ghUTCNow(t, pool, "updated_at", first.updated)
	time.Sleep(10 * time.Millisecond)
	// The agent leaves zero counts out (omitempty): every count is the
	// latest report's, a missing one 0; detail_url too (UpdateAll).
	ghApply(t, pool, "hub1", GHAlertCounts, v(2), []byte(`{"critical":3,"detail_url":"https://d/main/violations","source":"stackrox/central"}`))
	ghApply(t, pool, "hub1", GHAlertCounts, v(3), []byte(`{"low":7,"detail_url":"https://e/main/violations","source":"other/central"}`))
	ghApply(t, pool, "hub2", GHAlertCounts, v(1), []byte(`{"high":9,"detail_url":"https://f/main/violations","source":"stackrox/central"}`))
	got := read("hub1", "stackrox/central")
	if got.low != 0 || got.medium != 0 || got.high != 0 || got.critical != 3 || got.url != "https://d/main/violations" {
		t.Fatalf("after a second report: %+v", got)
	}
	if !got.created.Equal(first.created) || !got.updated.After(first.updated) {
		t.Fatalf("created_at %v → %v (kept), updated_at %v → %v (moved)", first.created, got.created, first.updated, got.updated)
	}
	if r := read("hub1", "other/central"); r.low != 7 {
		t.Fatalf("a second source of the hub: %+v", r)
	}
	if r := read("hub2", "stackrox/central"); r.high != 9 {
		t.Fatalf("another hub's source: %+v", r)
	}
	if _, err := GlobalHubAlertCounts().Decode([]byte(`[]`)); err == nil {
		t.Fatal("alert counts that are not an object were taken")
	}
}

// TestGlobalHubMigrations: a managedclustermigration report is kept per
// migration and stage in STB's own stb.cluster_migrations (upstream's
// manager keeps them in memory: handlers/managedclustermigration), a
// resync report clearing the hub's.
func TestGlobalHubMigrations(t *testing.T) {
	t.Parallel()
	pool, _ := dbtest.New(t)
	v := func(g uint64) bundle.Version { return bundle.Version{Incarnation: 1<<32 | g, Generation: g} }
	mig := func(g uint64, data string) { ghApply(t, pool, "hub1", GHMigration, v(g), []byte(data)) }
	mig(1, `{"managedClusters":["c1"],"migrationId":"m1","stage":"Validating"}`)
	mig(2, `{"migrationId":"m1","stage":"Deploying","errMessage":"timeout"}`)
	var n int
	var msg string
	if err := pool.QueryRow(t.Context(), `SELECT count(*), max(error_message) FROM stb.cluster_migrations WHERE hub = 'hub1'`).Scan(&n, &msg); err != nil || n != 2 || msg != "timeout" {
		t.Fatalf("migrations %d %q, %v", n, msg, err)
	}
	mig(3, `{"resync":true}`)
	if err := pool.QueryRow(t.Context(), `SELECT count(*) FROM stb.cluster_migrations WHERE hub = 'hub1'`).Scan(&n); err != nil || n != 0 {
		t.Fatalf("after a resync report: %d migrations, %v", n, err)
	}
	if _, err := GlobalHubMigration().DecodeBundle(&bundle.Bundle{Raw: []byte(`{"managedClusters":["c1"]}`)}); err == nil {
		t.Fatal("a migration report without id and stage was taken")
	}
}

// TestGlobalHubMigrationAttrs: the agent sends a migration's id and stage
// as the extensions migrationid and migrationstage (upstream:
// pkg/bundle/migration), which the transport keeps in the bundle's Attrs,
// not in its data: the decoder takes them from there, over members of the
// data of the same name (older agents), and keeps the data as it came.
func TestGlobalHubMigrationAttrs(t *testing.T) {
	t.Parallel()
	s := GlobalHubMigration()
	data := []byte(`{"managedClusters":["c1"],"stage":"Old"}`)
	p, err := s.DecodeBundle(&bundle.Bundle{Type: GHMigration, Raw: data, Attrs: &globalhub.MigrationAttrs{ID: "m1", Stage: "Validating"}})
	if err != nil {
		t.Fatal(err)
	}
	m := p.(*MigrationPayload)
	if m.MigrationID != "m1" || m.Stage != "Validating" || string(m.Object) != `{"managedClusters":["c1"]}` {
		t.Errorf("decoded id %q, stage %q, object %s; want m1, Validating (the extensions') and the rest of the data", m.MigrationID, m.Stage, m.Object)
	}
	if string(data) != `{"managedClusters":["c1"],"stage":"Old"}` {
		t.Errorf("the decoder changed the bundle's data: %s", data)
	}
	p, err = s.DecodeBundle(&bundle.Bundle{Type: GHMigration, Raw: data, Attrs: &globalhub.MigrationAttrs{ID: "m1"}})
	if err != nil || p.(*MigrationPayload).Stage != "Old" {
		t.Errorf("without a stage extension: %v, %v; want the data's stage", p, err)
	}
	var r deadletter.Reasoned
	if _, err := s.DecodeBundle(&bundle.Bundle{Type: GHMigration, Raw: data, Attrs: "m1"}); !errors.As(err, &r) || r.DeadLetterReason() != deadletter.BadPayload {
		t.Errorf("attributes of another kind: %v, want a bad_payload", err)
	}
}

// ghDecodeCases are the decoder table of every global-hub type, one row per
// rule; the rows are also the fuzz seeds.
var ghDecodeCases = []struct {
	typ string
	decodeCase
}{
	{GHHeartbeat, decodeCase{"heartbeat is an empty array", `[]`, ""}},
	{GHHeartbeat, decodeCase{"heartbeat without data", ``, ""}},
	{GHHeartbeat, decodeCase{"heartbeat null", `null`, ""}},
	{GHHeartbeat, decodeCase{"heartbeat object", `{}`, deadletter.BadPayload}},
	{GHHubInfo, decodeCase{"info", `{"consoleURL":"https://c","grafanaURL":"","clusterId":"8606cf88-c711-4dae-ba7e-2e4d54227887"}`, ""}},
	{GHHubInfo, decodeCase{"info without clusterId", `{"consoleURL":"https://c"}`, ""}},
	{GHHubInfo, decodeCase{"info clusterId not a string", `{"clusterId":7}`, deadletter.BadPayload}},
	// status.leaf_hubs.cluster_id is a uuid: hub_cluster_info_handler.go's
	// insert would fail.
	{GHHubInfo, decodeCase{"info clusterId not a UUID", `{"clusterId":"x"}`, deadletter.BadPayload}},
	{GHHubInfo, decodeCase{"info array", `[]`, deadletter.BadPayload}},
	{GHManagedCluster, decodeCase{"generic bundle, all members", string(ghGeneric(
		[]json.RawMessage{ghClusterJSON("a", "1")}, []json.RawMessage{ghClusterJSON("b", "1")},
		[]json.RawMessage{ghClusterJSON("c", "1")}, []map[string]string{ghRef(ghUUID("d"), "", "d")},
		[]map[string]string{ghRef(ghUUID("c"), "", "c")})), ""}},
	{GHManagedCluster, decodeCase{"generic bundle, empty", `{}`, ""}},
	// managedcluster_handler.go insertOrUpdate: "has no cluster claim id, skip".
	{GHManagedCluster, decodeCase{"cluster without id.k8s.io", string(ghGeneric([]json.RawMessage{ghClusterJSON("n", "1", ghClaim{"platform.open-cluster-management.io", "Other"})}, nil, nil, nil, nil)), ""}},
	{GHManagedCluster, decodeCase{"cluster without a name", `{"create":[{"metadata":{"uid":"u"}}]}`, deadletter.BadPayload}},
	// status.managed_clusters.cluster_id is a uuid: upstream's insert of
	// the batch would fail.
	{GHManagedCluster, decodeCase{"cluster claim not a UUID", string(ghGeneric([]json.RawMessage{ghClusterJSON("a", "1", ghClaim{ClusterIDClaim, "not-a-uuid"})}, nil, nil, nil, nil)), deadletter.BadPayload}},
	{GHManagedCluster, decodeCase{"delete id not a UUID", `{"delete":[{"id":"x","name":"a"}]}`, deadletter.BadPayload}},
	// FoundMetadataById compares strings: such an id matches no cluster.
	{GHManagedCluster, decodeCase{"resync_metadata id not a UUID", `{"resync_metadata":[{"id":"x","name":"a"}]}`, ""}},
	{GHManagedCluster, decodeCase{"cluster payload jsonb cannot store", `{"create":[{"metadata":{"name":"a","labels":{"x":"\u0000"}},"status":{"clusterClaims":[{"name":"id.k8s.io","value":"8606cf88-c711-4dae-ba7e-2e4d54227887"}]}}]}`, deadletter.BadPayload}},
	{GHManagedCluster, decodeCase{"delete without id or name", `{"delete":[{"ns":"x"}]}`, deadletter.BadPayload}},
	{GHManagedCluster, decodeCase{"members are lists", `{"create":{}}`, deadletter.BadPayload}},
	{GHManagedCluster, decodeCase{"an array is not a generic bundle", `[]`, deadletter.BadPayload}},
	{GHLocalSpec, decodeCase{"local policy", `{"update":[{"metadata":{"name":"p","namespace":"default","uid":"8606cf88-c711-4dae-ba7e-2e4d54227887"}}]}`, ""}},
	{GHLocalSpec, decodeCase{"local policy without uid", `{"update":[{"metadata":{"name":"p","namespace":"default"}}]}`, deadletter.BadPayload}},
	// local_spec.policies.policy_id is a uuid.
	{GHLocalSpec, decodeCase{"local policy uid not a UUID", `{"update":[{"metadata":{"name":"p","namespace":"default","uid":"u1"}}]}`, deadletter.BadPayload}},
	{GHLocalCompliance, decodeCase{"localcompliance with null lists", string(jsonArray(ghComplianceJSON("p1", []string{"a"}, nil, nil, []string{"b"}))), ""}},
	{GHLocalCompliance, decodeCase{"localcompliance without policyId", `[{"compliantClusters":["a"]}]`, deadletter.BadPayload}},
	// local_status.compliance.policy_id is a uuid.
	{GHLocalCompliance, decodeCase{"localcompliance policyId not a UUID", `[{"policyId":"p1","compliantClusters":["a"]}]`, deadletter.BadPayload}},
	{GHLocalCompliance, decodeCase{"localcompliance object", `{"objects":[]}`, deadletter.BadPayload}},
	{GHLocalCompliance, decodeCase{"localcompliance cluster not a string", `[{"policyId":"8606cf88-c711-4dae-ba7e-2e4d54227887","pendingComplianceClusters":[1]}]`, deadletter.BadPayload}},
	{GHLocalCompleteCompliance, decodeCase{"localcompletecompliance", string(jsonArray(ghCompleteJSON("p1", []string{"a"}, nil, []string{"b"}))), ""}},
	{GHLocalCompleteCompliance, decodeCase{"localcompletecompliance empty", `[]`, ""}},
	{GHLocalCompleteCompliance, decodeCase{"localcompletecompliance null", `null`, deadletter.BadPayload}},
	{GHManagedClusterEvent, decodeCase{"cluster events batch", `[{"eventName":"e1","eventNamespace":"c1","clusterName":"c1","clusterId":"8606cf88-c711-4dae-ba7e-2e4d54227887","reason":"Imported","reportingController":"rc","reportingInstance":"ri","type":"Normal","createdAt":"2025-10-23T02:33:08Z"}]`, ""}},
	{GHManagedClusterEvent, decodeCase{"cluster event single", `{"eventName":"e1","clusterName":"c1","createdAt":"2025-10-23T02:33:08Z"}`, ""}},
	{GHManagedClusterEvent, decodeCase{"cluster event clusterId not a UUID (resolved by name)", `{"eventName":"e1","clusterName":"c1","clusterId":"x","createdAt":"2025-10-23T02:33:08Z"}`, ""}},
	{GHManagedClusterEvent, decodeCase{"cluster event without createdAt", `[{"eventName":"e1"}]`, deadletter.BadPayload}},
	{GHManagedClusterEvent, decodeCase{"cluster event bad createdAt", `[{"eventName":"e1","createdAt":"yesterday"}]`, deadletter.BadPayload}},
	{GHRootPolicyEvent, decodeCase{"root policy event", `[{"eventName":"p.1","policyId":"8606cf88-c711-4dae-ba7e-2e4d54227887","count":2,"source":{"component":"policy-propagator"},"createdAt":"2024-02-29T03:01:05Z","compliance":"Unknown"}]`, ""}},
	{GHRootPolicyEvent, decodeCase{"root policy event without policyId", `[{"eventName":"p.1","createdAt":"2024-02-29T03:01:05Z"}]`, deadletter.BadPayload}},
	// event.local_root_policies.policy_id is a uuid.
	{GHRootPolicyEvent, decodeCase{"root policy event policyId not a UUID", `[{"eventName":"p.1","policyId":"p","createdAt":"2024-02-29T03:01:05Z"}]`, deadletter.BadPayload}},
	{GHRootPolicyEvent, decodeCase{"root policy event source not an object", `[{"eventName":"p.1","policyId":"8606cf88-c711-4dae-ba7e-2e4d54227887","source":"x","createdAt":"2024-02-29T03:01:05Z"}]`, deadletter.BadPayload}},
	{GHReplicatedPolicyEvent, decodeCase{"replicated event count not an integer", `[{"eventName":"p.1","policyId":"8606cf88-c711-4dae-ba7e-2e4d54227887","count":1.5,"createdAt":"2024-02-29T03:01:05Z"}]`, deadletter.BadPayload}},
	{GHAlertCounts, decodeCase{"alert counts", `{"low":1,"detail_url":"https://c","source":"ns/central"}`, ""}},
	{GHAlertCounts, decodeCase{"alert counts negative", `{"low":-1,"source":"ns/central"}`, deadletter.BadPayload}},
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
		runDecodeCases(t, s.decodeData, 1, func(int) decodeCase { return c.decodeCase }, func(t *testing.T, _ int, p any) {
			if p == nil {
				t.Fatal("nil payload")
			}
		})
	}
}

// TestGlobalHubDecodedPayloads checks what the decoders keep of the
// agent's data.
func TestGlobalHubDecodedPayloads(t *testing.T) {
	upper := strings.ToUpper(ghUUID("a"))
	// pkg/utils/object.go GetClusterClaimID: the FIRST claim named
	// id.k8s.io; managedcluster_handler.go skips a cluster without one.
	p, err := GlobalHubManagedCluster().Decode(ghGeneric(
		[]json.RawMessage{
			ghClusterJSON("a", "1", ghClaim{"platform.open-cluster-management.io", "Other"}, ghClaim{ClusterIDClaim, upper}, ghClaim{ClusterIDClaim, ghUUID("second")}),
			ghClusterJSON("n", "1", ghClaim{"platform.open-cluster-management.io", "Other"}),
			ghClusterJSON("e", "1", ghClaim{ClusterIDClaim, ""}, ghClaim{ClusterIDClaim, ghUUID("e")}),
		},
		[]json.RawMessage{ghClusterJSON("a", "2", ghClaim{ClusterIDClaim, ghUUID("a")})},
		nil, nil, nil))
	if err != nil {
		t.Fatal(err)
	}
	cp := p.(*GlobalHubClustersPayload)
	var got []string
	for _, c := range cp.Upserts {
		var o struct {
			Metadata struct{ Labels map[string]string }
		}
		if err := json.Unmarshal(c.Object, &o); err != nil {
			t.Fatal(err)
		}
		got = append(got, c.Name+"="+ghLabel(c.ID)+"/"+o.Metadata.Labels["rev"])
	}
	// a's claim in upper case is a's id (lowered), its update wins; e's
	// first id.k8s.io claim is empty: no id, like n.
	if want := []string{"a=a/2"}; fmt.Sprint(got) != fmt.Sprint(want) || fmt.Sprint(cp.Skipped) != "[n e]" {
		t.Fatalf("upserts %v (want %v), skipped %v (want [n e])", got, want, cp.Skipped)
	}

	// Events: reportingController, reportingInstance and source are kept;
	// clusterId is lowered, or dropped when it is not a UUID.
	ep, err := GlobalHubManagedClusterEvent().Decode([]byte(`{"eventName":"e1","eventNamespace":"c1","clusterName":"c1","clusterId":"` + upper +
		`","reportingController":"rc","reportingInstance":"ri","type":"Warning","createdAt":"2025-10-23T02:33:08Z"}`))
	if err != nil {
		t.Fatal(err)
	}
	if e := ep.(*GHEventsPayload).Events[0]; e.ClusterID != ghUUID("a") || e.ReportingController != "rc" || e.ReportingInstance != "ri" || e.Type != "Warning" {
		t.Fatalf("cluster event %+v", e)
	}
	ep, err = GlobalHubReplicatedPolicyEvent().Decode([]byte(`[{"eventName":"e1","policyId":"` + upper + `","clusterId":"kind-hub2-cluster1","clusterName":"c1",
		"count":3,"source":{"component":"policy-status-history-sync","host":"h"},"createdAt":"2024-02-29T03:01:14Z","compliance":"Pending"}]`))
	if err != nil {
		t.Fatal(err)
	}
	if e := ep.(*GHEventsPayload).Events[0]; e.PolicyID != ghUUID("a") || e.ClusterID != "" || e.Count != 3 || e.Compliance != "pending" ||
		string(e.Source) != `{"component":"policy-status-history-sync","host":"h"}` {
		t.Fatalf("replicated event %+v", e)
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
		p, err := s.decodeData(data)
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
