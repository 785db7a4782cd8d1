package dbsyncers

import (
	"context"
	"errors"
	"fmt"
	"maps"
	"reflect"
	"slices"
	"strings"
	"testing"

	"github.com/stbridge/stb/pkg/bundle"
	"github.com/stbridge/stb/pkg/db/dbtest"
	"github.com/stbridge/stb/pkg/deadletter"
)

// change returns a ComplianceChange from "policy/cluster=state", state one
// of c, n, u.
func change(s string) ComplianceChange {
	key, st, _ := strings.Cut(s, "=")
	policy, cluster, _ := strings.Cut(key, "/")
	return ComplianceChange{PolicyID: policy, Cluster: cluster, State: map[string]ComplianceState{
		"c": Compliant, "n": NonCompliant, "u": UnknownCompliance,
	}[st]}
}

// changes returns a delta payload of changes written as change takes them.
func changes(ss ...string) *ComplianceDeltaPayload {
	out := []ComplianceChange{}
	for _, s := range ss {
		out = append(out, change(s))
	}
	return &ComplianceDeltaPayload{Changes: out}
}

// decodeDeltaCases are the decoder's table cases, also the fuzz seeds.
var decodeDeltaCases = []struct {
	name   string
	data   string
	want   *ComplianceDeltaPayload
	reason deadletter.Reason // the decoder error's dead-letter reason, "" for none
}{
	{"empty list", `{"objects":[]}`, changes(), ""},
	{"sorted by policy and cluster", `{"objects":[
		{"policyId":"p2","compliantClusters":["b"],"nonCompliantClusters":["a"]},
		{"policyId":"p1","unknownComplianceClusters":["z"],"compliantClusters":["y","y"]}]}`,
		changes("p1/y=c", "p1/z=u", "p2/a=n", "p2/b=c"), ""},
	{"one object lists a pair twice: the worse state", `{"objects":[
		{"policyId":"p1","compliantClusters":["a","b","c"],"nonCompliantClusters":["a"],"unknownComplianceClusters":["a","b"]}]}`,
		changes("p1/a=n", "p1/b=u", "p1/c=c"), ""},
	{"later object wins", `{"objects":[
		{"policyId":"p1","nonCompliantClusters":["a","b"]},
		{"policyId":"p1","compliantClusters":["a"]}]}`,
		changes("p1/a=c", "p1/b=n"), ""},
	{"null lists", `{"objects":[{"policyId":"p1","compliantClusters":null}]}`, changes(), ""},
	{"missing objects", `{"policyId":"p1"}`, nil, deadletter.BadPayload},
	{"missing policyId", `{"objects":[{"compliantClusters":["a"]}]}`, nil, deadletter.BadPayload},
	{"empty compliant cluster", `{"objects":[{"policyId":"p1","compliantClusters":[""]}]}`, nil, deadletter.BadPayload},
	{"empty unknown cluster", `{"objects":[{"policyId":"p1","unknownComplianceClusters":["a",""]}]}`, nil, deadletter.BadPayload},
	{"cluster not a string", `{"objects":[{"policyId":"p1","nonCompliantClusters":[{}]}]}`, nil, deadletter.BadPayload},
	{"object not an object", `{"objects":[[]]}`, nil, deadletter.BadPayload},
	{"NUL in a cluster", `{"objects":[{"policyId":"p1","compliantClusters":["\u0000"]}]}`, nil, deadletter.BadPayload},
	{"truncated", `{"objects":[{"policyId":"p1"`, nil, deadletter.BadPayload},
}

func TestDecodeComplianceDelta(t *testing.T) {
	rows := decodeDeltaCases
	runDecodeCases(t, decodeComplianceDelta, len(rows), func(i int) decodeCase {
		return decodeCase{rows[i].name, rows[i].data, rows[i].reason}
	}, func(t *testing.T, i int, p any) {
		tt := rows[i]
		if !reflect.DeepEqual(p, tt.want) {
			t.Errorf("decode = %+v, want %+v", p, tt.want)
		}
	})
}

// FuzzDecodeComplianceDelta: whatever a hub sends, the decoder must not
// panic, and what it accepts the handler must take.
func FuzzDecodeComplianceDelta(f *testing.F) {
	for _, tt := range decodeDeltaCases {
		f.Add([]byte(tt.data))
	}
	f.Fuzz(func(t *testing.T, data []byte) {
		p, err := decodeComplianceDelta(data)
		if err != nil {
			return
		}
		b := &bundle.Bundle{Hub: "h", Type: "compliancedelta", Payload: p}
		if _, err := foldComplianceDeltas([]*bundle.Bundle{b}); err != nil {
			t.Errorf("decoded payload is not normalised: %v", err)
		}
	})
}

func TestMergeComplianceDelta(t *testing.T) {
	tests := []struct {
		name         string
		older, newer *ComplianceDeltaPayload
		want         *ComplianceDeltaPayload
	}{
		{"both empty", changes(), changes(), changes()},
		{"older empty", changes(), changes("p/a=n"), changes("p/a=n")},
		{"newer empty", changes("p/a=n"), changes(), changes("p/a=n")},
		{"newer wins per pair", changes("p/a=n", "p/b=u", "q/a=n"), changes("p/a=c", "q/a=u"), changes("p/a=c", "p/b=u", "q/a=u")},
		{"interleaved", changes("p/b=n", "r/a=n"), changes("p/a=u", "p/c=c", "q/a=n", "s/a=c"),
			changes("p/a=u", "p/b=n", "p/c=c", "q/a=n", "r/a=n", "s/a=c")},
	}
	for _, tt := range tests {
		t.Run(tt.name, func(t *testing.T) {
			older := &ComplianceDeltaPayload{Changes: slices.Clone(tt.older.Changes)}
			newer := &ComplianceDeltaPayload{Changes: slices.Clone(tt.newer.Changes)}
			got := ComplianceDelta().Merge(older, newer)
			if !reflect.DeepEqual(got, tt.want) {
				t.Errorf("Merge = %+v, want %+v", got, tt.want)
			}
			if !reflect.DeepEqual(newer, tt.newer) {
				t.Errorf("Merge modified newer: %+v, was %+v", newer, tt.newer)
			}
			// Documented: older is not modified either.
			if !reflect.DeepEqual(older, tt.older) {
				t.Errorf("Merge modified older: %+v, was %+v", older, tt.older)
			}
		})
	}

	// Merging in steps equals applying in order: later wins.
	acc := any(changes("p/a=n", "p/b=n"))
	for _, d := range []*ComplianceDeltaPayload{changes("p/a=c"), changes("p/a=u", "p/c=n"), changes("p/b=c")} {
		acc = ComplianceDelta().Merge(acc, d)
	}
	if want := changes("p/a=u", "p/b=c", "p/c=n"); !reflect.DeepEqual(acc, want) {
		t.Errorf("three merges = %+v, want %+v", acc, want)
	}

	// Another type cannot be merged: the result must be rejected by the
	// handler, not silently drop a delta.
	bad := ComplianceDelta().Merge(&HeartbeatPayload{}, changes("p/a=n"))
	if _, err := payloadOf[ComplianceDeltaPayload](&bundle.Bundle{Payload: bad}); err == nil {
		t.Errorf("Merge of another payload type returned %+v, which the handler accepts", bad)
	}
}

// deltaBundle returns a compliancedelta bundle of hub at generation gen on
// the compliance bundle at base.
func deltaBundle(hub string, gen uint64, base bundle.Version, p *ComplianceDeltaPayload) *bundle.Bundle {
	b := newBundle(hub, "compliancedelta", bundle.Version{Incarnation: 1, Generation: gen}, p)
	b.Dependency, b.HasDependency = base, true
	return b
}

// TestComplianceDelta applies delta groups to a placed hub whose
// compliance is at version 1.5: in order with later winning, only to rows
// that exist; and on any other base not at all.
func TestComplianceDelta(t *testing.T) {
	t.Parallel()
	pool, _ := dbtest.New(t)
	base := bundle.Version{Incarnation: 1, Generation: 5}
	setup := func(t *testing.T, hub string) {
		t.Helper()
		for i, b := range []*bundle.Bundle{
			newBundle(hub, "clusterspolicies", bundle.Version{Incarnation: 1, Generation: 1},
				mustDecode(t, "clusterspolicies", objectsData(placement("p1", "a", "b", "c"), placement("p2", "a")))),
			newBundle(hub, "compliance", base,
				mustDecode(t, "compliance", objectsData(policyCompliance("p1", []string{"a"}, nil), policyCompliance("p2", nil, nil)))),
		} {
			if applied, err := apply(t, pool, b); err != nil || !applied {
				t.Fatalf("setup %d: Apply = %v, %v", i, applied, err)
			}
		}
	}
	initial := map[string]string{"p1/a": "non_compliant", "p1/b": "compliant", "p1/c": "compliant", "p2/a": "compliant"}

	tests := []struct {
		name       string
		group      func(hub string) []*bundle.Bundle
		want       map[string]string
		wantReason deadletter.Reason // PermanentError reason, "" for success
	}{
		{"one delta", func(hub string) []*bundle.Bundle {
			return []*bundle.Bundle{deltaBundle(hub, 6, base, changes("p1/a=c", "p1/b=u"))}
		}, map[string]string{"p1/a": "compliant", "p1/b": "unknown", "p1/c": "compliant", "p2/a": "compliant"}, ""},
		{"group in order, later wins", func(hub string) []*bundle.Bundle {
			return []*bundle.Bundle{
				deltaBundle(hub, 6, base, changes("p1/a=c", "p1/b=n", "p2/a=u")),
				deltaBundle(hub, 7, base, changes("p1/b=u", "p1/c=n")),
				deltaBundle(hub, 8, base, changes("p1/a=n", "p1/c=c")),
			}
		}, map[string]string{"p1/a": "non_compliant", "p1/b": "unknown", "p1/c": "compliant", "p2/a": "unknown"}, ""},
		{"pair without a row is not inserted", func(hub string) []*bundle.Bundle {
			return []*bundle.Bundle{deltaBundle(hub, 6, base, changes("p1/x=n", "p2/a=n", "p3/a=n"))}
		}, map[string]string{"p1/a": "non_compliant", "p1/b": "compliant", "p1/c": "compliant", "p2/a": "non_compliant"}, ""},
		{"older base", func(hub string) []*bundle.Bundle {
			return []*bundle.Bundle{deltaBundle(hub, 6, bundle.Version{Incarnation: 1, Generation: 4}, changes("p1/a=c"))}
		}, initial, deadletter.StaleBase},
		{"newer base", func(hub string) []*bundle.Bundle {
			return []*bundle.Bundle{deltaBundle(hub, 6, bundle.Version{Incarnation: 2, Generation: 0}, changes("p1/a=c"))}
		}, initial, deadletter.StaleBase},
		{"mixed bases", func(hub string) []*bundle.Bundle {
			return []*bundle.Bundle{
				deltaBundle(hub, 6, base, changes("p1/a=c")),
				deltaBundle(hub, 7, bundle.Version{Incarnation: 1, Generation: 6}, changes("p1/b=n")),
			}
		}, initial, deadletter.BadGroup},
		{"no base", func(hub string) []*bundle.Bundle {
			b := deltaBundle(hub, 6, base, changes("p1/a=c"))
			b.HasDependency = false
			return []*bundle.Bundle{b}
		}, initial, deadletter.BadPayload},
		{"unsorted payload", func(hub string) []*bundle.Bundle {
			return []*bundle.Bundle{deltaBundle(hub, 6, base, changes("p1/b=c", "p1/a=c"))}
		}, initial, deadletter.BadPayload},
	}
	for i, tt := range tests {
		t.Run(tt.name, func(t *testing.T) {
			hub := fmt.Sprintf("hub-d%d", i)
			setup(t, hub)
			before := readCompliance(t, pool, hub)
			applied, err := apply(t, pool, tt.group(hub)...)
			after := readCompliance(t, pool, hub)
			if got := states(after); !maps.Equal(got, tt.want) {
				t.Errorf("rows = %v, want %v", got, tt.want)
			}
			_, fenced := readVersion(t, pool, hub, "compliancedelta")
			if tt.wantReason == "" {
				if err != nil || !applied {
					t.Fatalf("Apply = %v, %v; want true, nil", applied, err)
				}
				if !fenced {
					t.Errorf("no compliancedelta row in bundle_versions")
				}
				return
			}
			var pe *PermanentError
			if applied || !errors.As(err, &pe) || pe.Reason != tt.wantReason {
				t.Fatalf("Apply = %v, %v; want a PermanentError with reason %q", applied, err, tt.wantReason)
			}
			if got := changedRows(before, after); len(got) > 0 {
				t.Errorf("failed Apply wrote rows %v", got)
			}
			if fenced {
				t.Errorf("failed Apply left a compliancedelta version behind")
			}
		})
	}

	// The guard, not only the rollback, keeps a stale group from writing:
	// inside the transaction, after the handler failed, nothing changed.
	t.Run("stale base writes nothing before rollback", func(t *testing.T) {
		hub := "hub-guard"
		setup(t, hub)
		tx, err := pool.Begin(t.Context())
		if err != nil {
			t.Fatal(err)
		}
		defer tx.Rollback(context.WithoutCancel(t.Context()))
		stale := deltaBundle(hub, 6, bundle.Version{Incarnation: 1, Generation: 4}, changes("p1/a=c", "p1/b=n"))
		err = execPlan(t.Context(), tx, planComplianceDelta, []*bundle.Bundle{stale})
		var pe *PermanentError
		if !errors.As(err, &pe) || pe.Reason != deadletter.StaleBase {
			t.Fatalf("handle = %v, want a stale_base PermanentError", err)
		}
		var written int
		if err := tx.QueryRow(t.Context(), `SELECT count(*) FROM stb.compliance WHERE hub = $1 AND xmin = pg_current_xact_id()::xid`, hub).
			Scan(&written); err != nil {
			t.Fatal(err)
		}
		if written != 0 {
			t.Errorf("stale group wrote %d rows in its transaction", written)
		}
	})

	t.Run("hub without compliance", func(t *testing.T) {
		applied, err := apply(t, pool, deltaBundle("hub-nobase", 6, base, changes("p1/a=c")))
		var pe *PermanentError
		if applied || !errors.As(err, &pe) || pe.Reason != deadletter.StaleBase {
			t.Fatalf("Apply = %v, %v; want a stale_base PermanentError", applied, err)
		}
	})
}
