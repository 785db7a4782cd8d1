package dbsyncers

import (
	"errors"
	"fmt"
	"maps"
	"reflect"
	"slices"
	"strings"
	"testing"

	"github.com/jackc/pgx/v5"
	"github.com/jackc/pgx/v5/pgxpool"

	"github.com/stbridge/stb/pkg/bundle"
	"github.com/stbridge/stb/pkg/db/dbtest"
	"github.com/stbridge/stb/pkg/deadletter"
)

// decodePlacementCases are the decoder's table cases, also the fuzz seeds.
// want lists "policy:cluster,cluster" per policy.
var decodePlacementCases = []struct {
	name   string
	data   string
	want   []string
	reason deadletter.Reason // the decoder error's dead-letter reason, "" for none
}{
	{"empty list", `{"objects":[]}`, []string{}, ""},
	{"null list", `{"objects":null}`, []string{}, ""},
	{"sorted and deduplicated", `{"objects":[
		{"policyId":"p2","clusters":["b","a","b"],"remediationAction":"inform","resourceVersion":"7"},
		{"policyId":"p1","clusters":["c"]}]}`, []string{"p1:c", "p2:a,b"}, ""},
	{"policy twice, last wins", `{"objects":[{"policyId":"p1","clusters":["a"]},{"policyId":"p1","clusters":["b"]}]}`, []string{"p1:b"}, ""},
	{"placed nowhere, said", `{"objects":[{"policyId":"p1","clusters":[]},{"policyId":"p3","clusters":[]}]}`, []string{"p1:", "p3:"}, ""},
	{"clusters missing", `{"objects":[{"policyId":"p1","clusters":[]},{"policyId":"p2"}]}`, nil, deadletter.BadPayload},
	{"clusters null", `{"objects":[{"policyId":"p3","clusters":null}]}`, nil, deadletter.BadPayload},
	// The v0.4 hub-of-hubs shape: compliance lists instead of clusters.
	{"compliance lists instead of clusters", `{"objects":[{"policyId":"p1","compliantClusters":["a"],"nonCompliantClusters":["b"],"unknownComplianceClusters":[],"resourceVersion":"3"}]}`, nil, deadletter.BadPayload},
	{"unknown fields ignored", `{"objects":[{"policyId":"p1","clusters":["a"],"x":{}}],"more":1}`, []string{"p1:a"}, ""},
	{"missing objects", `{}`, nil, deadletter.BadPayload},
	{"null payload", `null`, nil, deadletter.BadPayload},
	{"objects not a list", `{"objects":{}}`, nil, deadletter.BadPayload},
	{"object not an object", `{"objects":["p1"]}`, nil, deadletter.BadPayload},
	{"missing policyId", `{"objects":[{"clusters":["a"]}]}`, nil, deadletter.BadPayload},
	{"empty policyId", `{"objects":[{"policyId":"p1"},{"policyId":"","clusters":["a"]}]}`, nil, deadletter.BadPayload},
	{"policyId not a string", `{"objects":[{"policyId":7}]}`, nil, deadletter.BadPayload},
	{"empty cluster", `{"objects":[{"policyId":"p1","clusters":["a",""]}]}`, nil, deadletter.BadPayload},
	{"null cluster", `{"objects":[{"policyId":"p1","clusters":[null]}]}`, nil, deadletter.BadPayload},
	{"cluster not a string", `{"objects":[{"policyId":"p1","clusters":[1]}]}`, nil, deadletter.BadPayload},
	{"clusters not a list", `{"objects":[{"policyId":"p1","clusters":"a"}]}`, nil, deadletter.BadPayload},
	{"NUL in a name", `{"objects":[{"policyId":"p1","clusters":["a\u0000b"]}]}`, nil, deadletter.BadPayload},
	{"remediationAction not a string", `{"objects":[{"policyId":"p1","clusters":[],"remediationAction":1}]}`, nil, deadletter.BadPayload},
	{"trailing data", `{"objects":[]}{}`, nil, deadletter.BadPayload},
	{"empty", ``, nil, deadletter.BadPayload},
}

func TestDecodeClustersPolicies(t *testing.T) {
	rows := decodePlacementCases
	runDecodeCases(t, decodeClustersPolicies, len(rows), func(i int) decodeCase {
		return decodeCase{rows[i].name, rows[i].data, rows[i].reason}
	}, func(t *testing.T, i int, p any) {
		tt := rows[i]
		got := []string{}
		for _, pc := range p.(*ClustersPoliciesPayload).Policies {
			got = append(got, pc.PolicyID+":"+strings.Join(pc.Clusters, ","))
		}
		if !reflect.DeepEqual(got, tt.want) {
			t.Errorf("policies = %v, want %v", got, tt.want)
		}
	})
}

// FuzzDecodeClustersPolicies: whatever a hub sends, the decoder must not
// panic, and what it accepts the handler must take.
func FuzzDecodeClustersPolicies(f *testing.F) {
	for _, tt := range decodePlacementCases {
		f.Add([]byte(tt.data))
	}
	f.Fuzz(func(t *testing.T, data []byte) {
		p, err := decodeClustersPolicies(data)
		if err != nil {
			return
		}
		if _, _, err := p.(*ClustersPoliciesPayload).pairs(); err != nil {
			t.Errorf("decoded payload is not normalised: %v", err)
		}
	})
}

// writePlacementTx decodes clusterspolicies data and writes it to hub with
// writePlacement in a transaction of its own.
func writePlacementTx(t *testing.T, pool *pgxpool.Pool, hub string, data []byte, staged bool) {
	t.Helper()
	policyIDs, clusters, err := mustDecode(t, "clusterspolicies", data).(*ClustersPoliciesPayload).pairs()
	if err != nil {
		t.Fatal(err)
	}
	if err := pgx.BeginFunc(t.Context(), pool, func(tx pgx.Tx) error {
		return writePlacement(hub, policyIDs, clusters, staged).Exec(t.Context(), tx)
	}); err != nil {
		t.Fatal(err)
	}
}

// TestClustersPolicies applies a sequence of placements to one hub, with
// arrays and with a staged table, and checks after each that the hub's
// rows are exactly the listed pairs, that pairs which stayed kept their
// compliance and were not rewritten, and that another hub's rows were
// never touched.
func TestClustersPolicies(t *testing.T) {
	t.Parallel()
	pool, _ := dbtest.New(t)
	steps := []struct {
		name       string
		data       []byte
		setup      string            // SQL run before the step (a compliance report, in effect)
		want       map[string]string // policy/cluster → compliance
		wantWrites []string          // rows inserted, deleted or updated
	}{
		{
			name:       "first placement, all unknown",
			data:       objectsData(placement("p1", "a", "b"), placement("p2", "a")),
			want:       map[string]string{"p1/a": "unknown", "p1/b": "unknown", "p2/a": "unknown"},
			wantWrites: []string{"p1/a", "p1/b", "p2/a"},
		},
		{
			name:  "unchanged placement writes nothing",
			setup: `UPDATE stb.compliance SET compliance = CASE cluster_name WHEN 'a' THEN 'non_compliant' ELSE 'compliant' END WHERE hub = $1 AND policy_id = 'p1'`,
			data:  objectsData(placement("p2", "a"), placement("p1", "b", "a")),
			want:  map[string]string{"p1/a": "non_compliant", "p1/b": "compliant", "p2/a": "unknown"},
		},
		{
			name:       "pairs added and removed, staying ones keep compliance",
			data:       objectsData(placement("p1", "a", "c"), placement("p2"), placement("p3", "b")),
			want:       map[string]string{"p1/a": "non_compliant", "p1/c": "unknown", "p3/b": "unknown"},
			wantWrites: []string{"p1/b", "p1/c", "p2/a", "p3/b"},
		},
		{
			name:       "policy removed from the list",
			data:       objectsData(placement("p1", "a", "c")),
			want:       map[string]string{"p1/a": "non_compliant", "p1/c": "unknown"},
			wantWrites: []string{"p3/b"},
		},
		{
			name:       "empty placement deletes every row",
			data:       objectsData(),
			want:       map[string]string{},
			wantWrites: []string{"p1/a", "p1/c"},
		},
	}
	for _, staged := range []bool{false, true} {
		t.Run(fmt.Sprintf("staged=%v", staged), func(t *testing.T) {
			hub, other := fmt.Sprintf("hub-cp-%v", staged), fmt.Sprintf("other-cp-%v", staged)
			writePlacementTx(t, pool, other, objectsData(placement("p1", "a", "b")), staged)
			otherBefore := readCompliance(t, pool, other)
			for _, st := range steps {
				if st.setup != "" {
					if _, err := pool.Exec(t.Context(), st.setup, hub); err != nil {
						t.Fatalf("%s: setup: %v", st.name, err)
					}
				}
				before := readCompliance(t, pool, hub)
				writePlacementTx(t, pool, hub, st.data, staged)
				after := readCompliance(t, pool, hub)
				if got := states(after); !maps.Equal(got, st.want) {
					t.Errorf("%s: rows = %v, want %v", st.name, got, st.want)
				}
				if got := changedRows(before, after); !slices.Equal(got, st.wantWrites) {
					t.Errorf("%s: rows written = %v, want %v", st.name, got, st.wantWrites)
				}
			}
			if got := readCompliance(t, pool, other); !maps.Equal(got, otherBefore) {
				t.Errorf("another hub's rows changed: %v, were %v", got, otherBefore)
			}
		})
	}
}

// TestClustersPoliciesApply runs a placement through the registry, as a
// worker does, and one large enough to be staged.
func TestClustersPoliciesApply(t *testing.T) {
	t.Parallel()
	pool, _ := dbtest.New(t)
	small := objectsData(placement("p1", "a", "b"), placement("p2", "b"))
	clusters := make([]string, stageRowsAbove/2+1)
	for i := range clusters {
		clusters[i] = fmt.Sprintf("c%05d", i)
	}
	large := objectsData(placement("p1", clusters...), placement("p2", clusters...)) // above stageRowsAbove

	v := bundle.Version{Incarnation: 1, Generation: 1}
	if applied, err := apply(t, pool, newBundle("hub-a", "clusterspolicies", v, mustDecode(t, "clusterspolicies", small))); err != nil || !applied {
		t.Fatalf("Apply = %v, %v", applied, err)
	}
	if got, want := states(readCompliance(t, pool, "hub-a")), map[string]string{"p1/a": "unknown", "p1/b": "unknown", "p2/b": "unknown"}; !maps.Equal(got, want) {
		t.Errorf("rows = %v, want %v", got, want)
	}
	v.Generation++
	if applied, err := apply(t, pool, newBundle("hub-a", "clusterspolicies", v, mustDecode(t, "clusterspolicies", large))); err != nil || !applied {
		t.Fatalf("Apply large = %v, %v", applied, err)
	}
	got := readCompliance(t, pool, "hub-a")
	if len(got) != 2*len(clusters) || got["p2/c00000"].State != "unknown" || got["p1/a"].State != "" {
		t.Errorf("after the large placement: %d rows (want %d), p2/c00000 %q, p1/a %q", len(got), 2*len(clusters), got["p2/c00000"].State, got["p1/a"].State)
	}
}

func TestClustersPoliciesBadPayload(t *testing.T) {
	t.Parallel()
	pool, _ := dbtest.New(t)
	v := bundle.Version{Incarnation: 1, Generation: 1}
	for _, p := range []*ClustersPoliciesPayload{
		{Policies: []PolicyClusters{{PolicyID: "b"}, {PolicyID: "a"}}},
		{Policies: []PolicyClusters{{PolicyID: "a", Clusters: []string{"y", "x"}}}},
		{Policies: []PolicyClusters{{PolicyID: "a", Clusters: []string{""}}}},
	} {
		applied, err := apply(t, pool, newBundle("hub-bad", "clusterspolicies", v, p))
		var pe *PermanentError
		if applied || !errors.As(err, &pe) || pe.Reason != deadletter.BadPayload {
			t.Errorf("Apply(%+v) = %v, %v; want a bad_payload PermanentError", p, applied, err)
		}
	}
}
