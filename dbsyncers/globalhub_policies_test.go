package dbsyncers

import (
	"encoding/json"
	"fmt"
	"maps"
	"strings"
	"testing"

	"github.com/jackc/pgx/v5/pgxpool"

	"github.com/stbridge/stb/pkg/bundle"
	"github.com/stbridge/stb/pkg/db/dbtest"
)

// ghPolicyJSON is a root Policy as the agent's policy.localspec generic
// bundle carries it (status cleared), its uid ghUUID(name).
func ghPolicyJSON(name, generation string) json.RawMessage {
	return json.RawMessage(fmt.Sprintf(`{"apiVersion":"policy.open-cluster-management.io/v1","kind":"Policy",
		"metadata":{"name":%q,"namespace":"default","uid":%q,"generation":%s,
			"annotations":{"policy.open-cluster-management.io/standards":"NIST SP 800-53","policy.open-cluster-management.io/categories":"CM Configuration Management","policy.open-cluster-management.io/controls":"CM-2 Baseline Configuration"}},
		"spec":{"disabled":false,"remediationAction":"inform"},"status":{}}`, name, ghUUID(name), generation))
}

// readLocalPolicies returns local_spec.policies as "<hub>/<name>" →
// "<id label>/<generation>", a soft-deleted row's value ending in " deleted".
func readLocalPolicies(t *testing.T, pool *pgxpool.Pool) map[string]string {
	t.Helper()
	out := map[string]string{}
	for _, s := range ghQueryStrings(t, pool, `SELECT leaf_hub_name || '/' || policy_name || '=' || policy_id::text || '/'
		|| (payload->'metadata'->>'generation') || CASE WHEN deleted_at IS NULL THEN '' ELSE ' deleted' END FROM local_spec.policies`) {
		k, v, _ := strings.Cut(s, "=")
		id, rest, _ := strings.Cut(v, "/")
		out[k] = ghLabel(id) + "/" + rest
	}
	return out
}

// TestGlobalHubLocalSpec: policy.localspec is a generic bundle of Policy
// objects into local_spec.policies (manager/pkg/status/handlers/policy/
// local_policy_spec_handler.go; models.LocalSpecPolicy,
// pkg/database/models/local_spec.go).
func TestGlobalHubLocalSpec(t *testing.T) {
	t.Parallel()
	pool, _ := dbtest.New(t)
	p := func(o ...json.RawMessage) []json.RawMessage { return o }
	refs := func(r ...map[string]string) []map[string]string { return r }
	steps := []struct {
		name, upstream, hub string
		data                []byte
		want                map[string]string
	}{
		{"resync objects upsert by uid", "local_policy_spec_handler.go insertOrUpdate (OnConflict UpdateAll)", "hub1",
			ghGeneric(nil, nil, p(ghPolicyJSON("p1", "1"), ghPolicyJSON("p2", "1")), nil, nil),
			map[string]string{"hub1/p1": "p1/1", "hub1/p2": "p2/1"}},
		{"update changes what it lists", "local_policy_spec_handler.go insertOrUpdate", "hub1",
			ghGeneric(nil, p(ghPolicyJSON("p1", "2")), nil, nil, nil),
			map[string]string{"hub1/p1": "p1/2", "hub1/p2": "p2/1"}},
		{"a reference without uid soft-deletes by namespace and name", "local_policy_spec_handler.go: payload metadata name and namespace .Delete", "hub1",
			ghGeneric(nil, nil, nil, refs(ghRef("", "default", "p2")), nil),
			map[string]string{"hub1/p1": "p1/2", "hub1/p2": "p2/1 deleted"}},
		{"a reference with a name but no namespace deletes nothing", "local_policy_spec_handler.go: else log 'without ID or Name/Namespace'", "hub1",
			ghGeneric(nil, nil, nil, refs(ghRef("", "", "p1")), nil),
			map[string]string{"hub1/p1": "p1/2", "hub1/p2": "p2/1 deleted"}},
		{"a soft-deleted policy created again is live again", "local_policy_spec_handler.go insertOrUpdate: UpdateAll sets deleted_at NULL", "hub1",
			ghGeneric(p(ghPolicyJSON("p2", "3")), nil, nil, nil, nil),
			map[string]string{"hub1/p1": "p1/2", "hub1/p2": "p2/3"}},
		{"another hub's policies", "local_policy_spec_handler.go", "hub2",
			ghGeneric(p(ghPolicyJSON("q1", "1")), nil, nil, nil, nil),
			map[string]string{"hub1/p1": "p1/2", "hub1/p2": "p2/3", "hub2/q1": "q1/1"}},
		{"resync_metadata soft-deletes the hub's policies it does not list by id (p1 listed by name alone)",
			"local_policy_spec_handler.go ResyncMetadata; pkg/bundle/generic/generic_bundle.go FoundMetadataById", "hub1",
			ghGeneric(nil, nil, p(ghPolicyJSON("p3", "1")), nil, refs(ghRef(ghUUID("p3"), "default", "p3"), ghRef("", "default", "p1"))),
			map[string]string{"hub1/p1": "p1/2 deleted", "hub1/p2": "p2/3 deleted", "hub1/p3": "p3/1", "hub2/q1": "q1/1"}},
		{"delete by uid", "local_policy_spec_handler.go: Where leaf_hub_name, policy_id .Delete", "hub1",
			ghGeneric(nil, nil, nil, refs(ghRef(ghUUID("p3"), "default", "p3")), nil),
			map[string]string{"hub1/p1": "p1/2 deleted", "hub1/p2": "p2/3 deleted", "hub1/p3": "p3/1 deleted", "hub2/q1": "q1/1"}},
		{"a hub cannot delete another hub's policy by uid", "local_policy_spec_handler.go: deletes Where leaf_hub_name", "hub1",
			ghGeneric(nil, nil, nil, refs(ghRef(ghUUID("q1"), "default", "q1")), nil),
			map[string]string{"hub1/p1": "p1/2 deleted", "hub1/p2": "p2/3 deleted", "hub1/p3": "p3/1 deleted", "hub2/q1": "q1/1"}},
	}
	for i, s := range steps {
		if !ghApply(t, pool, s.hub, GHLocalSpec, bundle.Version{Incarnation: 1<<32 | uint64(i+1), Generation: uint64(i + 1)}, s.data) {
			t.Fatalf("%s: not applied", s.name)
		}
		if got := readLocalPolicies(t, pool); !maps.Equal(got, s.want) {
			t.Fatalf("%s (%s):\n got  %v\n want %v", s.name, s.upstream, got, s.want)
		}
	}
	// The generated columns (2.tables.sql: policy_name, policy_standard,
	// policy_category, policy_control) come from the payload.
	var standard, category, control string
	if err := pool.QueryRow(t.Context(), `SELECT policy_standard, policy_category, policy_control FROM local_spec.policies WHERE policy_name = 'q1'`).
		Scan(&standard, &category, &control); err != nil || standard != "NIST SP 800-53" || category != "CM Configuration Management" || control != "CM-2 Baseline Configuration" {
		t.Fatalf("generated columns %q %q %q, %v", standard, category, control, err)
	}
}

// complianceOf returns local_status.compliance as "<hub>/<policy>/<cluster>"
// → state, policies by label; every row must have error 'none'.
func complianceOf(t *testing.T, pool *pgxpool.Pool) map[string]string {
	t.Helper()
	out := map[string]string{}
	for _, s := range ghQueryStrings(t, pool, `SELECT leaf_hub_name || '|' || policy_id::text || '|' || cluster_name || '|' || compliance::text || '|' || error::text
		FROM local_status.compliance`) {
		f := strings.Split(s, "|")
		if f[4] != "none" {
			t.Errorf("row %s: error %q", s, f[4])
		}
		out[f[0]+"/"+ghLabel(f[1])+"/"+f[2]] = f[3]
	}
	return out
}

// TestGlobalHubLocalCompliance: policy.localcompliance and
// policy.localcompletecompliance on local_status.compliance (manager/pkg/
// status/handlers/policy/local_compliance_handler.go,
// local_complete_handler.go; models.LocalStatusCompliance,
// pkg/database/models/local_status.go), two hubs reporting the same
// policy ids.
func TestGlobalHubLocalCompliance(t *testing.T) {
	t.Parallel()
	pool, _ := dbtest.New(t)
	l := func(names ...string) []string { return names }
	hub2 := map[string]string{"hub2/p1/c9": "compliant", "hub2/p2/c1": "non_compliant"}
	with := func(m map[string]string) map[string]string {
		out := maps.Clone(m)
		maps.Copy(out, hub2)
		return out
	}
	ghApply(t, pool, "hub2", GHLocalCompliance, bundle.Version{Incarnation: 7, Generation: 1}, jsonArray(
		ghComplianceJSON("p1", l("c9"), nil, nil, nil),
		ghComplianceJSON("p2", nil, l("c1"), nil, nil),
	))
	steps := []struct {
		name, upstream, typ string
		v                   bundle.Version
		data                []byte
		want                map[string]string
	}{
		{"localcompliance upserts the four lists of each policy", "local_compliance_handler.go newLocalCompliances, OnConflict UpdateAll",
			GHLocalCompliance, bundle.Version{Incarnation: 4, Generation: 1}, jsonArray(
				ghComplianceJSON("p1", l("c1"), l("c2"), nil, l("c3")),
				ghComplianceJSON("p2", nil, nil, l("c1"), nil),
				ghComplianceJSON("p3", l("c1", "c2"), nil, nil, nil),
			),
			with(map[string]string{"hub1/p1/c1": "compliant", "hub1/p1/c2": "non_compliant", "hub1/p1/c3": "pending",
				"hub1/p2/c1": "unknown", "hub1/p3/c1": "compliant", "hub1/p3/c2": "compliant"})},
		{"localcompletecompliance: the listed rows take their state; every other row of a listed policy that is not compliant becomes compliant (p1/c3); the rows of a policy it leaves out become compliant (p2/c1); a listed cluster without a row (x) is not inserted",
			"local_complete_handler.go: tx.Updates per row; 'update policies not in the event - all is Compliant'",
			GHLocalCompleteCompliance, bundle.Version{Incarnation: 4, Generation: 1}, jsonArray(
				ghCompleteJSON("p1", l("c1"), nil, l("c2", "x")),
				ghCompleteJSON("p3", nil, l("c2"), nil),
			),
			with(map[string]string{"hub1/p1/c1": "non_compliant", "hub1/p1/c2": "pending", "hub1/p1/c3": "compliant",
				"hub1/p2/c1": "compliant", "hub1/p3/c1": "compliant", "hub1/p3/c2": "unknown"})},
		{"localcompletecompliance of a policy without rows of the hub inserts nothing",
			"local_complete_handler.go: Updates only",
			GHLocalCompleteCompliance, bundle.Version{Incarnation: 4, Generation: 2}, jsonArray(
				ghCompleteJSON("p9", l("c1"), nil, nil),
			),
			with(map[string]string{"hub1/p1/c1": "compliant", "hub1/p1/c2": "compliant", "hub1/p1/c3": "compliant",
				"hub1/p2/c1": "compliant", "hub1/p3/c1": "compliant", "hub1/p3/c2": "compliant"})},
		{"localcompliance deletes a listed policy's rows it does not list (p1/c3), and this hub's rows of a policy it leaves out (p2); hub2's rows of p1 and p2 stay",
			"local_compliance_handler.go: delete allClustersOnDB per policy; 'delete the policy isn't contained on the bundle' (upstream: WHERE policy_id across every hub; ours: this hub's rows only)",
			GHLocalCompliance, bundle.Version{Incarnation: 4, Generation: 3}, jsonArray(
				ghComplianceJSON("p1", l("c1", "c2"), l("c2"), nil, nil),
				ghComplianceJSON("p3", l("c1", "c2"), nil, nil, nil),
			),
			with(map[string]string{"hub1/p1/c1": "compliant", "hub1/p1/c2": "non_compliant", "hub1/p3/c1": "compliant", "hub1/p3/c2": "compliant"})},
		{"an empty localcompliance: the hub has no policies left; hub2's rows of the same policy ids stay",
			"local_compliance_handler.go (cross-hub deletion: see ghDeleteUnlistedHead)",
			GHLocalCompliance, bundle.Version{Incarnation: 4, Generation: 4}, []byte(`[]`),
			with(map[string]string{})},
	}
	for _, s := range steps {
		if !ghApply(t, pool, "hub1", s.typ, s.v, s.data) {
			t.Fatalf("%s: not applied", s.name)
		}
		if got := complianceOf(t, pool); !maps.Equal(got, s.want) {
			t.Fatalf("%s (%s):\n got  %v\n want %v", s.name, s.upstream, got, s.want)
		}
	}
}

// TestGlobalHubComplianceStaged: above stageRowsAbove rows the compliance
// handlers copy their rows into a temporary table; the result is the same.
func TestGlobalHubComplianceStaged(t *testing.T) {
	t.Parallel()
	pool, _ := dbtest.New(t)
	n := stageRowsAbove/2 + 1
	var compliant, nonCompliant []string
	for i := range n {
		compliant = append(compliant, fmt.Sprintf("c%05d", i))
		nonCompliant = append(nonCompliant, fmt.Sprintf("n%05d", i))
	}
	ghApply(t, pool, "hub2", GHLocalCompliance, bundle.Version{Incarnation: 1, Generation: 1}, jsonArray(ghComplianceJSON("p1", []string{"c00000"}, nil, nil, nil)))
	ghApply(t, pool, "hub1", GHLocalCompliance, bundle.Version{Incarnation: 1, Generation: 1}, jsonArray(
		ghComplianceJSON("p1", compliant, nonCompliant, nil, nil),
		ghComplianceJSON("p2", []string{"x"}, nil, nil, nil)))
	ghApply(t, pool, "hub1", GHLocalCompleteCompliance, bundle.Version{Incarnation: 1, Generation: 1}, jsonArray(
		ghCompleteJSON("p1", compliant[:stageRowsAbove/2], nil, nonCompliant)))
	count := func(where string) int {
		var c int
		if err := pool.QueryRow(t.Context(), `SELECT count(*) FROM local_status.compliance WHERE `+where).Scan(&c); err != nil {
			t.Fatal(err)
		}
		return c
	}
	if got := count(`leaf_hub_name = 'hub1' AND compliance = 'non_compliant'`); got != stageRowsAbove/2 {
		t.Fatalf("non_compliant rows %d, want %d", got, stageRowsAbove/2)
	}
	if got := count(`leaf_hub_name = 'hub1' AND compliance = 'pending'`); got != n {
		t.Fatalf("pending rows %d, want %d", got, n)
	}
	if got := count(`leaf_hub_name = 'hub1' AND compliance = 'compliant'`); got != 2 { // c05000 and p2/x
		t.Fatalf("compliant rows %d, want 2", got)
	}
	ghApply(t, pool, "hub1", GHLocalCompliance, bundle.Version{Incarnation: 1, Generation: 2}, jsonArray(
		ghComplianceJSON("p1", compliant, nonCompliant[1:], nil, nil)))
	if got, want := count(`leaf_hub_name = 'hub1'`), 2*n-1; got != want {
		t.Fatalf("rows of hub1 %d, want %d", got, want)
	}
	if got := count(`leaf_hub_name = 'hub2'`); got != 1 {
		t.Fatalf("rows of hub2 %d, want 1", got)
	}
}
