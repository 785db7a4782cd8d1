package bench

import (
	"bytes"
	"encoding/json"
	"fmt"

	"github.com/stbridge/stb/pkg/bundle"
	"github.com/stbridge/stb/pkg/transport"
)

// The large hub of docs/design.md (Performance): 3,000 managed clusters of real size and
// 45 policies placed on every one of them, so 135,000 compliance rows.
const (
	largeHubName     = "large-hub"
	largeHubClusters = 3000
	largeHubPolicies = 45
	// largeHubMaxBundleBytes is the --max-bundle-bytes of the large-hub
	// variants: its managedclusters bundle (3,000 objects of about 1.5 KiB)
	// is larger than the default 4 MiB.
	largeHubMaxBundleBytes = 16 << 20
)

// largeHubVersions are the versions of the hub's bundles, in the order it
// sends them: heartbeat, managedclusters, clusterspolicies, the first
// compliance report, and the report of the full rotation.
var largeHubVersions = [5]bundle.Version{{Incarnation: 1, Generation: 1}, {Incarnation: 1, Generation: 2},
	{Incarnation: 1, Generation: 3}, {Incarnation: 1, Generation: 4}, {Incarnation: 1, Generation: 5}}

func largeHubClusterName(i int) string { return fmt.Sprintf("%s-cluster-%05d", largeHubName, i) }

func largeHubPolicyID(i int) string { return fmt.Sprintf("0b7c3f1e-policy-%04d-4a8e-9c1d5e7f2a60", i) }

// largeHubClusterObject returns a ManagedCluster of about 1.5 KiB, the
// size of a real one with its labels, claims and conditions.
func largeHubClusterObject(name string) string {
	return fmt.Sprintf(`{"apiVersion":"cluster.open-cluster-management.io/v1","kind":"ManagedCluster",`+
		`"metadata":{"name":%[1]q,"uid":"uid-%[1]s","resourceVersion":"81723",`+
		`"labels":{"cloud":"Amazon","region":"eu-west-1","vendor":"OpenShift","openshiftVersion":"4.16.3",`+
		`"cluster.open-cluster-management.io/clusterset":"default","name":%[1]q,"environment":"production"}},`+
		`"spec":{"hubAcceptsClient":true,"leaseDurationSeconds":60,"managedClusterClientConfigs":[{"url":"https://api.%[1]s.example.com:6443",`+
		`"caBundle":"LS0tLS1CRUdJTiBDRVJUSUZJQ0FURS0tLS0tCk1JSURNakNDQWhxZ0F3SUJBZ0lJQTlGVjN"}]},`+
		`"status":{"version":{"kubernetes":"v1.29.6"},"capacity":{"cpu":"96","memory":"394Gi","pods":"750"},`+
		`"allocatable":{"cpu":"93","memory":"380Gi","pods":"750"},`+
		`"clusterClaims":[{"name":"id.k8s.io","value":"uid-%[1]s"},{"name":"platform.open-cluster-management.io","value":"AWS"},`+
		`{"name":"product.open-cluster-management.io","value":"OpenShift"},{"name":"region.open-cluster-management.io","value":"eu-west-1"}],`+
		`"conditions":[{"type":"HubAcceptedManagedCluster","status":"True","reason":"HubClusterAdminAccepted","message":"Accepted by hub cluster admin","lastTransitionTime":"2026-01-02T03:04:05Z"},`+
		`{"type":"ManagedClusterJoined","status":"True","reason":"ManagedClusterJoined","message":"Managed cluster joined","lastTransitionTime":"2026-01-02T03:04:05Z"},`+
		`{"type":"ManagedClusterConditionAvailable","status":"True","reason":"ManagedClusterAvailable","message":"Managed cluster is available","lastTransitionTime":"2026-01-02T03:04:05Z"}]}}`,
		name)
}

// largeHubReport says how cluster c complies in compliance report r (0:
// the first, 1: the rotation). Every row differs between the two: the
// first has 10% of clusters non-compliant and the rest compliant, the
// second makes those compliant and the rest non-compliant or unknown.
func largeHubReport(r, c int) string {
	switch {
	case r == 0 && c < largeHubClusters/10:
		return "non_compliant"
	case r == 0:
		return "compliant"
	case c < largeHubClusters/10:
		return "compliant"
	case c%2 == 0:
		return "non_compliant"
	}
	return "unknown"
}

// largeHubEnvelopes returns the hub's five bundles: heartbeat,
// managedclusters, clusterspolicies and two compliance reports, the last
// of which rotates every row.
func largeHubEnvelopes() ([5]transport.Envelope, error) {
	var out [5]transport.Envelope
	names := make([]string, largeHubClusters)
	var mc bytes.Buffer
	mc.WriteString(`{"objects":[`)
	for i := range names {
		names[i] = largeHubClusterName(i)
		if i > 0 {
			mc.WriteByte(',')
		}
		mc.WriteString(largeHubClusterObject(names[i]))
	}
	mc.WriteString(`]}`)

	type placement struct {
		PolicyID          string   `json:"policyId"`
		Clusters          []string `json:"clusters"`
		RemediationAction string   `json:"remediationAction"`
		ResourceVersion   string   `json:"resourceVersion"`
	}
	placements := make([]placement, largeHubPolicies)
	for p := range placements {
		placements[p] = placement{largeHubPolicyID(p), names, "inform", "1"}
	}
	cp, err := json.Marshal(map[string]any{"objects": placements})
	if err != nil {
		return out, err
	}
	var reports [2][]byte
	for r := range reports {
		type compliance struct {
			PolicyID        string   `json:"policyId"`
			NonCompliant    []string `json:"nonCompliantClusters"`
			Unknown         []string `json:"unknownComplianceClusters"`
			ResourceVersion string   `json:"resourceVersion"`
		}
		nc, unk := []string{}, []string{}
		for c, name := range names {
			switch largeHubReport(r, c) {
			case "non_compliant":
				nc = append(nc, name)
			case "unknown":
				unk = append(unk, name)
			}
		}
		objects := make([]compliance, largeHubPolicies)
		for p := range objects {
			objects[p] = compliance{largeHubPolicyID(p), nc, unk, fmt.Sprint(r + 1)}
		}
		if reports[r], err = json.Marshal(map[string]any{"objects": objects}); err != nil {
			return out, err
		}
	}
	types := [5]string{"heartbeat", "managedclusters", "clusterspolicies", "compliance", "compliance"}
	data := [5][]byte{[]byte(`{}`), mc.Bytes(), cp, reports[0], reports[1]}
	for i := range out {
		out[i] = transport.Envelope{Hub: largeHubName, Type: types[i], Version: largeHubVersions[i], Data: data[i]}
		if i >= 3 {
			dep := largeHubVersions[2]
			out[i].Dependency = &dep
		}
	}
	return out, nil
}
