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

// decodeComplianceCases are the decoder's table cases, also the fuzz
// seeds. want lists "policy:nonCompliant|unknown" per policy.
var decodeComplianceCases = []struct {
	name   string
	data   string
	want   []string
	reason deadletter.Reason // the decoder error's dead-letter reason, "" for none
}{
	{"empty list", `{"objects":[]}`, []string{}, ""},
	// The hub-of-hubs agents put their own bookkeeping in the payload:
	// the hub's name and the bundle's generation (and, in deltas, the
	// base's). The CloudEvent's extversion and extdependencyversion are
	// the versions STB goes by; these are ignored, whatever they say.
	{"hub-of-hubs bundle fields ignored", `{"objects":[{"policyId":"p1","nonCompliantClusters":["a"],"unknownComplianceClusters":[],"resourceVersion":"12"}],
		"leafHubName":"hub1","generation":99,"incarnation":3,"baseBundleGeneration":5}`, []string{"p1:a|"}, ""},
	{"sorted and deduplicated", `{"objects":[
		{"policyId":"p2","nonCompliantClusters":["b","a","b"],"unknownComplianceClusters":["d","c","d"],"resourceVersion":"3"},
		{"policyId":"p1","nonCompliantClusters":[],"unknownComplianceClusters":[]}]}`, []string{"p1:|", "p2:a,b|c,d"}, ""},
	{"non-compliant wins over unknown", `{"objects":[{"policyId":"p1","nonCompliantClusters":["a","b"],"unknownComplianceClusters":["b","c","a"]}]}`, []string{"p1:a,b|c"}, ""},
	{"null and missing lists", `{"objects":[{"policyId":"p1","nonCompliantClusters":null},{"policyId":"p2"}]}`, []string{"p1:|", "p2:|"}, ""},
	{"policy twice, last wins", `{"objects":[{"policyId":"p1","nonCompliantClusters":["a"]},{"policyId":"p1","unknownComplianceClusters":["a"]}]}`, []string{"p1:|a"}, ""},
	{"missing objects", `{}`, nil, deadletter.BadPayload},
	{"array payload", `[]`, nil, deadletter.BadPayload},
	{"missing policyId", `{"objects":[{"nonCompliantClusters":["a"]}]}`, nil, deadletter.BadPayload},
	{"policyId not a string", `{"objects":[{"policyId":["p1"]}]}`, nil, deadletter.BadPayload},
	{"empty non-compliant cluster", `{"objects":[{"policyId":"p1","nonCompliantClusters":[""]}]}`, nil, deadletter.BadPayload},
	{"null unknown cluster", `{"objects":[{"policyId":"p1","unknownComplianceClusters":["a",null]}]}`, nil, deadletter.BadPayload},
	{"cluster not a string", `{"objects":[{"policyId":"p1","nonCompliantClusters":[true]}]}`, nil, deadletter.BadPayload},
	{"list not a list", `{"objects":[{"policyId":"p1","unknownComplianceClusters":{}}]}`, nil, deadletter.BadPayload},
	{"NUL in a policy id", `{"objects":[{"policyId":"p\u00001"}]}`, nil, deadletter.BadPayload},
	{"bad JSON", `{"objects":[{"policyId":"p1"]}`, nil, deadletter.BadPayload},
}

func TestDecodeCompliance(t *testing.T) {
	rows := decodeComplianceCases
	runDecodeCases(t, decodeCompliance, len(rows), func(i int) decodeCase {
		return decodeCase{rows[i].name, rows[i].data, rows[i].reason}
	}, func(t *testing.T, i int, p any) {
		tt := rows[i]
		got := []string{}
		for _, pc := range p.(*CompliancePayload).Policies {
			got = append(got, pc.PolicyID+":"+strings.Join(pc.NonCompliant, ",")+"|"+strings.Join(pc.Unknown, ","))
		}
		if !reflect.DeepEqual(got, tt.want) {
			t.Errorf("policies = %v, want %v", got, tt.want)
		}
	})
}

// FuzzDecodeCompliance: whatever a hub sends, the decoder must not panic,
// and what it accepts the handler must take.
func FuzzDecodeCompliance(f *testing.F) {
	for _, tt := range decodeComplianceCases {
		f.Add([]byte(tt.data))
	}
	f.Fuzz(func(t *testing.T, data []byte) {
		p, err := decodeCompliance(data)
		if err != nil {
			return
		}
		if _, err := p.(*CompliancePayload).rows(); err != nil {
			t.Errorf("decoded payload is not normalised: %v", err)
		}
	})
}

// writeComplianceTx decodes compliance data and writes it to hub with
// writeCompliance in a transaction of its own.
func writeComplianceTx(t *testing.T, pool *pgxpool.Pool, hub string, data []byte, staged bool) {
	t.Helper()
	rows, err := mustDecode(t, "compliance", data).(*CompliancePayload).rows()
	if err != nil {
		t.Fatal(err)
	}
	if err := pgx.BeginFunc(t.Context(), pool, func(tx pgx.Tx) error {
		return writeCompliance(hub, rows, staged).Exec(t.Context(), tx)
	}); err != nil {
		t.Fatal(err)
	}
}

// TestCompliance applies a sequence of compliance reports to one placed
// hub, with arrays and with a staged table, and checks after each the
// state of every row, which rows were written, and that another hub was
// never touched.
func TestCompliance(t *testing.T) {
	t.Parallel()
	pool, _ := dbtest.New(t)
	nc := func(names ...string) []string { return names }
	steps := []struct {
		name       string
		data       []byte
		want       map[string]string // policy/cluster → compliance
		wantWrites []string
	}{
		{
			name: "listed set, every other placed pair compliant, of an omitted policy too",
			data: objectsData(policyCompliance("p1", nc("a"), nc("b")), policyCompliance("p2", nil, nil)),
			want: map[string]string{
				"p1/a": "non_compliant", "p1/b": "unknown", "p1/c": "compliant", "p1/d": "compliant",
				"p2/a": "compliant", "p2/b": "compliant", "p3/a": "compliant",
			},
			// p1/b was unknown already: not rewritten. p3 is not in the
			// report: real agents leave out a policy whose clusters all
			// comply, so its pair is compliant (it used to stay unknown).
			wantWrites: []string{"p1/a", "p1/c", "p1/d", "p2/a", "p2/b", "p3/a"},
		},
		{
			name: "the same report writes nothing",
			data: objectsData(policyCompliance("p2", nil, nil), policyCompliance("p1", nc("a"), nc("b"))),
			want: map[string]string{
				"p1/a": "non_compliant", "p1/b": "unknown", "p1/c": "compliant", "p1/d": "compliant",
				"p2/a": "compliant", "p2/b": "compliant", "p3/a": "compliant",
			},
		},
		{
			name: "cluster without a row is not inserted, omitted p2 stays compliant",
			data: objectsData(policyCompliance("p1", nc("b", "x"), nil), policyCompliance("p4", nc("a"), nil)),
			want: map[string]string{
				"p1/a": "compliant", "p1/b": "non_compliant", "p1/c": "compliant", "p1/d": "compliant",
				"p2/a": "compliant", "p2/b": "compliant", "p3/a": "compliant",
			},
			wantWrites: []string{"p1/a", "p1/b"},
		},
		{
			name: "listed both ways: non-compliant wins",
			data: objectsData(policyCompliance("p1", nc("a", "c"), nc("c", "d"))),
			want: map[string]string{
				"p1/a": "non_compliant", "p1/b": "compliant", "p1/c": "non_compliant", "p1/d": "unknown",
				"p2/a": "compliant", "p2/b": "compliant", "p3/a": "compliant",
			},
			wantWrites: []string{"p1/a", "p1/b", "p1/c", "p1/d"},
		},
		{
			// An agent whose every policy complies sends an empty report.
			name: "empty report: everything placed is compliant",
			data: objectsData(),
			want: map[string]string{
				"p1/a": "compliant", "p1/b": "compliant", "p1/c": "compliant", "p1/d": "compliant",
				"p2/a": "compliant", "p2/b": "compliant", "p3/a": "compliant",
			},
			wantWrites: []string{"p1/a", "p1/c", "p1/d"},
		},
		{
			name: "a policy disappears from the report: its pairs become compliant",
			data: objectsData(policyCompliance("p2", nc("a"), nil)),
			want: map[string]string{
				"p1/a": "compliant", "p1/b": "compliant", "p1/c": "compliant", "p1/d": "compliant",
				"p2/a": "non_compliant", "p2/b": "compliant", "p3/a": "compliant",
			},
			wantWrites: []string{"p2/a"},
		},
		{
			name: "then p1 fails again and p2 leaves the report",
			data: objectsData(policyCompliance("p1", nil, nc("d"))),
			want: map[string]string{
				"p1/a": "compliant", "p1/b": "compliant", "p1/c": "compliant", "p1/d": "unknown",
				"p2/a": "compliant", "p2/b": "compliant", "p3/a": "compliant",
			},
			wantWrites: []string{"p1/d", "p2/a"},
		},
	}
	for _, staged := range []bool{false, true} {
		t.Run(fmt.Sprintf("staged=%v", staged), func(t *testing.T) {
			hub, other := fmt.Sprintf("hub-c-%v", staged), fmt.Sprintf("other-c-%v", staged)
			places := objectsData(placement("p1", "a", "b", "c", "d"), placement("p2", "a", "b"), placement("p3", "a"))
			writePlacementTx(t, pool, hub, places, staged)
			writePlacementTx(t, pool, other, places, staged)
			otherBefore := readCompliance(t, pool, other)
			for _, st := range steps {
				before := readCompliance(t, pool, hub)
				writeComplianceTx(t, pool, hub, st.data, staged)
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

// TestComplianceApply runs compliance bundles through the registry, as a
// worker does: a small one and one large enough to be staged.
func TestComplianceApply(t *testing.T) {
	t.Parallel()
	pool, _ := dbtest.New(t)
	n := stageRowsAbove + 500
	clusters := make([]string, n)
	for i := range clusters {
		clusters[i] = fmt.Sprintf("c%05d", i)
	}
	v := bundle.Version{Incarnation: 1}
	next := func() bundle.Version { v.Generation++; return v }
	for _, step := range []struct {
		typ  string
		data []byte
		want map[string]int // compliance → rows
	}{
		{"clusterspolicies", objectsData(placement("p1", clusters...), placement("p2", "c00000")), map[string]int{"unknown": n + 1}},
		// p2 is left out of the report: its pair is compliant.
		{"compliance", objectsData(policyCompliance("p1", clusters[:10], clusters[10:20])), map[string]int{"non_compliant": 10, "unknown": 10, "compliant": n - 19}},
		// Above stageRowsAbove: the staged path.
		{"compliance", objectsData(policyCompliance("p1", clusters[1:], nil), policyCompliance("p2", nil, nil)), map[string]int{"non_compliant": n - 1, "compliant": 2}},
	} {
		if applied, err := apply(t, pool, newBundle("hub-ca", step.typ, next(), mustDecode(t, step.typ, step.data))); err != nil || !applied {
			t.Fatalf("Apply %s = %v, %v", step.typ, applied, err)
		}
		got := map[string]int{}
		for _, r := range readCompliance(t, pool, "hub-ca") {
			got[r.State]++
		}
		if !maps.Equal(got, step.want) {
			t.Errorf("after %s %s: rows by compliance = %v, want %v", step.typ, v, got, step.want)
		}
	}
}

// TestStageTwiceInOneTransaction: the staged path drops the temporary
// table a previous call in the same transaction left, rather than failing.
func TestStageTwiceInOneTransaction(t *testing.T) {
	t.Parallel()
	pool, _ := dbtest.New(t)
	writePlacementTx(t, pool, "hub-twice", objectsData(placement("p1", "a", "b")), true)
	report := func(nc ...string) complianceRows {
		rows, err := mustDecode(t, "compliance", objectsData(policyCompliance("p1", nc, nil))).(*CompliancePayload).rows()
		if err != nil {
			t.Fatal(err)
		}
		return rows
	}
	if err := pgx.BeginFunc(t.Context(), pool, func(tx pgx.Tx) error {
		for _, nc := range [][]string{{"a"}, {"b"}} {
			rows := report(nc...)
			if err := writeCompliance("hub-twice", rows, true).Exec(t.Context(), tx); err != nil {
				return err
			}
		}
		return writePlacement("hub-twice", []string{"p1", "p1"}, []string{"a", "b"}, true).Exec(t.Context(), tx)
	}); err != nil {
		t.Fatal(err)
	}
	if got, want := states(readCompliance(t, pool, "hub-twice")), map[string]string{"p1/a": "compliant", "p1/b": "non_compliant"}; !maps.Equal(got, want) {
		t.Errorf("rows = %v, want %v", got, want)
	}
}

func TestComplianceBadPayload(t *testing.T) {
	t.Parallel()
	pool, _ := dbtest.New(t)
	v := bundle.Version{Incarnation: 1, Generation: 1}
	for _, p := range []*CompliancePayload{
		{Policies: []PolicyCompliance{{PolicyID: "b"}, {PolicyID: "a"}}},
		{Policies: []PolicyCompliance{{PolicyID: ""}}},
		{Policies: []PolicyCompliance{{PolicyID: "a", NonCompliant: []string{"x"}, Unknown: []string{"x"}}}},
		{Policies: []PolicyCompliance{{PolicyID: "a", NonCompliant: []string{"y", "x"}}}},
	} {
		applied, err := apply(t, pool, newBundle("hub-bad", "compliance", v, p))
		var pe *PermanentError
		if applied || !errors.As(err, &pe) || pe.Reason != deadletter.BadPayload {
			t.Errorf("Apply(%+v) = %v, %v; want a bad_payload PermanentError", p, applied, err)
		}
	}
}

func TestComplianceStateString(t *testing.T) {
	for s, want := range map[ComplianceState]string{
		Compliant: "compliant", NonCompliant: "non_compliant", UnknownCompliance: "unknown", PendingCompliance: "pending", 0: "ComplianceState(0)",
	} {
		if got := s.String(); got != want {
			t.Errorf("%d.String() = %q, want %q", uint8(s), got, want)
		}
	}
}
