package dbsyncers

import (
	"errors"
	"fmt"
	"math"
	"reflect"
	"testing"
	"time"

	"github.com/jackc/pgx/v5"
	"github.com/jackc/pgx/v5/pgxpool"

	"github.com/stbridge/stb/pkg/bundle"
	"github.com/stbridge/stb/pkg/db"
	"github.com/stbridge/stb/pkg/db/dbtest"
	"github.com/stbridge/stb/pkg/deadletter"
	"github.com/stbridge/stb/pkg/transport"
)

// apply runs Registry.Apply in a transaction of its own, as a worker does.
func apply(t testing.TB, pool *pgxpool.Pool, bundles ...*bundle.Bundle) (bool, error) {
	t.Helper()
	var applied bool
	err := pgx.BeginFunc(t.Context(), pool, func(tx pgx.Tx) error {
		var err error
		applied, err = Default().Apply(t.Context(), tx, bundles)
		return err
	})
	return applied, err
}

// hubRow returns the hub's updated_at and xmin in stb.hubs.
func hubRow(t testing.TB, pool *pgxpool.Pool, hub string) (time.Time, string) {
	t.Helper()
	var at time.Time
	var xmin string
	if err := pool.QueryRow(t.Context(), `SELECT updated_at, xmin::text FROM stb.hubs WHERE name = $1`, hub).
		Scan(&at, &xmin); err != nil {
		t.Fatalf("hub %q in stb.hubs: %v", hub, err)
	}
	return at, xmin
}

// TestApplyFence checks the promise that keeps the database from going
// back in time: a bundle not newer than the stored version writes nothing,
// neither data nor version nor hub row.
func TestApplyFence(t *testing.T) {
	t.Parallel()
	pool, _ := dbtest.New(t)
	stored := bundle.Version{Incarnation: 1, Generation: 5}
	tests := []struct {
		name        string
		version     bundle.Version
		wantApplied bool
	}{
		{"newer generation", bundle.Version{Incarnation: 1, Generation: 6}, true},
		{"newer incarnation, lower generation", bundle.Version{Incarnation: 2, Generation: 0}, true},
		{"equal", stored, false},
		{"older generation", bundle.Version{Incarnation: 1, Generation: 4}, false},
		{"older incarnation, higher generation", bundle.Version{Incarnation: 0, Generation: 99}, false},
	}
	for _, tt := range tests {
		t.Run(tt.name, func(t *testing.T) {
			hub := "hub-" + tt.name
			first := newBundle(hub, "managedclusters", stored, mustDecode(t, "managedclusters", clustersData(
				clusterJSON("a", "uid-a", "1"), clusterJSON("b", "uid-b", "1"))))
			if applied, err := apply(t, pool, first); err != nil || !applied {
				t.Fatalf("first Apply = %v, %v; want true, nil", applied, err)
			}
			clustersBefore := readClusters(t, pool, hub)
			versionBefore, _ := readVersion(t, pool, hub, "managedclusters")
			// Long enough ago that an applied bundle moves it.
			ageHub(t, pool, hub, time.Minute)
			hubAt, hubXMin := hubRow(t, pool, hub)

			second := newBundle(hub, "managedclusters", tt.version, mustDecode(t, "managedclusters", clustersData(
				clusterJSON("b", "uid-b", "2"), clusterJSON("c", "uid-c", "2"))))
			applied, err := apply(t, pool, second)
			if err != nil || applied != tt.wantApplied {
				t.Fatalf("second Apply = %v, %v; want %v, nil", applied, err, tt.wantApplied)
			}

			clusters := readClusters(t, pool, hub)
			version, _ := readVersion(t, pool, hub, "managedclusters")
			at, xmin := hubRow(t, pool, hub)
			if !tt.wantApplied {
				if !reflect.DeepEqual(clusters, clustersBefore) {
					t.Errorf("stale bundle changed clusters: %+v, was %+v", clusters, clustersBefore)
				}
				if version != versionBefore {
					t.Errorf("stale bundle changed bundle_versions: %+v, was %+v", version, versionBefore)
				}
				if at != hubAt || xmin != hubXMin {
					t.Errorf("stale bundle touched stb.hubs")
				}
				return
			}
			if want := map[string]string{"b": "2", "c": "2"}; !reflect.DeepEqual(revs(clusters), want) {
				t.Errorf("clusters = %v, want %v", revs(clusters), want)
			}
			if version.Version != tt.version.String() || version.Offset != second.Origin.Offset {
				t.Errorf("bundle_versions = %+v, want version %s offset %d", version, tt.version, second.Origin.Offset)
			}
			if xmin == hubXMin {
				t.Errorf("applied bundle did not update stb.hubs")
			}
		})
	}
}

func ageHub(t *testing.T, pool *pgxpool.Pool, hub string, by time.Duration) {
	t.Helper()
	if _, err := pool.Exec(t.Context(), `UPDATE stb.hubs SET updated_at = updated_at - make_interval(secs => $2) WHERE name = $1`, hub, by.Seconds()); err != nil {
		t.Fatal(err)
	}
}

// TestHubTouchedAtMostEvery: an applied bundle moves its active hub's
// updated_at only when it is older than hubTouchEvery (a new row version
// per bundle was a third of PostgreSQL's work at a steady rate), and makes
// an inactive hub active at once.
func TestHubTouchedAtMostEvery(t *testing.T) {
	pool, _ := dbtest.New(t)
	const hub = "hub-touch"
	gen := uint64(0)
	next := func() {
		t.Helper()
		gen++
		b := newBundle(hub, "heartbeat", bundle.Version{Incarnation: 1, Generation: gen}, mustDecode(t, "heartbeat", []byte(`{}`)))
		if applied, err := apply(t, pool, b); err != nil || !applied {
			t.Fatalf("Apply %d = %v, %v", gen, applied, err)
		}
	}
	next()
	_, x1 := hubRow(t, pool, hub)
	next()
	if _, x2 := hubRow(t, pool, hub); x2 != x1 {
		t.Errorf("a second bundle right after the first wrote the active hub's row again")
	}
	ageHub(t, pool, hub, 31*time.Second)
	at, x3 := hubRow(t, pool, hub)
	next()
	if at4, x4 := hubRow(t, pool, hub); x4 == x3 || !at4.After(at) {
		t.Errorf("a bundle 31 s after the last touch left updated_at at %v", at4)
	}
	if _, err := pool.Exec(t.Context(), `UPDATE stb.hubs SET state = 'inactive' WHERE name = $1`, hub); err != nil {
		t.Fatal(err)
	}
	next()
	var state string
	if err := pool.QueryRow(t.Context(), `SELECT state FROM stb.hubs WHERE name = $1`, hub).Scan(&state); err != nil || state != "active" {
		t.Errorf("an inactive hub that sent a bundle is %q (%v), want active", state, err)
	}
}

// TestApplyMaxVersion: versions are uint64 on the wire; the largest must
// survive the trip through numeric(20,0) and back, and still compare.
func TestApplyMaxVersion(t *testing.T) {
	t.Parallel()
	pool, _ := dbtest.New(t)
	top := bundle.Version{Incarnation: math.MaxUint64, Generation: math.MaxUint64}
	hb := func(v bundle.Version) *bundle.Bundle {
		return newBundle("hub-max", "heartbeat", v, &HeartbeatPayload{})
	}

	if applied, err := apply(t, pool, hb(bundle.Version{Incarnation: math.MaxUint64, Generation: 1 << 63})); err != nil || !applied {
		t.Fatalf("Apply below max = %v, %v", applied, err)
	}
	if applied, err := apply(t, pool, hb(top)); err != nil || !applied {
		t.Fatalf("Apply max = %v, %v", applied, err)
	}
	for _, v := range []bundle.Version{top, {Incarnation: math.MaxUint64, Generation: math.MaxUint64 - 1}, {Incarnation: math.MaxUint64 - 1, Generation: math.MaxUint64}} {
		if applied, err := apply(t, pool, hb(v)); err != nil || applied {
			t.Errorf("Apply %s after max = %v, %v; want false, nil", v, applied, err)
		}
	}
	got, err := db.LoadVersions(t.Context(), pool)
	if err != nil {
		t.Fatal(err)
	}
	if len(got) != 1 {
		t.Fatalf("LoadVersions = %+v, want one row", got)
	}
	want := []db.StoredVersion{{Hub: "hub-max", Type: "heartbeat", Version: top, Origin: got[0].Origin}}
	if !reflect.DeepEqual(got, want) {
		t.Errorf("LoadVersions = %+v, want %+v", got, want)
	}
}

// TestApplyErrors: bundles that can never be written fail permanently,
// and, inside the worker's transaction, leave no trace, not even the
// version fence (else the retry of a fixed bundle would be called stale).
func TestApplyErrors(t *testing.T) {
	t.Parallel()
	pool, _ := dbtest.New(t)
	v := bundle.Version{Incarnation: 1, Generation: 1}
	tests := []struct {
		name       string
		bundles    []*bundle.Bundle
		wantReason deadletter.Reason
		wantIs     error
	}{
		{"unknown type", []*bundle.Bundle{newBundle("hub-e1", "nosuchtype", v, nil)}, deadletter.UnknownType, bundle.ErrUnknownType},
		{"no bundles", nil, deadletter.BadGroup, nil},
		{"nil bundle", []*bundle.Bundle{nil}, deadletter.BadGroup, nil},
		{"two hubs", []*bundle.Bundle{
			newBundle("hub-e2", "heartbeat", v, &HeartbeatPayload{}),
			newBundle("hub-e3", "heartbeat", v, &HeartbeatPayload{}),
		}, deadletter.BadGroup, nil},
		{"two types", []*bundle.Bundle{
			newBundle("hub-e4", "heartbeat", v, &HeartbeatPayload{}),
			newBundle("hub-e4", "managedclusters", v, &ManagedClustersPayload{}),
		}, deadletter.BadGroup, nil},
		{"payload of another type", []*bundle.Bundle{newBundle("hub-e5", "managedclusters", v, &HeartbeatPayload{})}, deadletter.BadPayload, nil},
		{"nil payload", []*bundle.Bundle{newBundle("hub-e6", "heartbeat", v, nil)}, deadletter.BadPayload, nil},
		{"cluster without object", []*bundle.Bundle{newBundle("hub-e7", "managedclusters", v,
			&ManagedClustersPayload{Clusters: []ManagedCluster{{Name: "a"}}})}, deadletter.BadPayload, nil},
	}
	for _, tt := range tests {
		t.Run(tt.name, func(t *testing.T) {
			applied, err := apply(t, pool, tt.bundles...)
			if err == nil || applied {
				t.Fatalf("Apply = %v, %v; want false and an error", applied, err)
			}
			var pe *PermanentError
			if !errors.As(err, &pe) || pe.Reason != tt.wantReason {
				t.Fatalf("Apply error %v is not a PermanentError with reason %q", err, tt.wantReason)
			}
			if tt.wantIs != nil && !errors.Is(err, tt.wantIs) {
				t.Errorf("Apply error %v is not %v", err, tt.wantIs)
			}
		})
	}
	var n int
	if err := pool.QueryRow(t.Context(), `
		SELECT (SELECT count(*) FROM stb.bundle_versions) + (SELECT count(*) FROM stb.hubs)
		     + (SELECT count(*) FROM stb.managed_clusters) + (SELECT count(*) FROM stb.hub_heartbeats)`).
		Scan(&n); err != nil {
		t.Fatal(err)
	}
	if n != 0 {
		t.Errorf("failed Apply calls left %d rows behind", n)
	}
}

// TestApplyFencePolicyTypes: for every policy type, a bundle older than
// the one applied writes nothing, whatever it holds.
func TestApplyFencePolicyTypes(t *testing.T) {
	t.Parallel()
	pool, _ := dbtest.New(t)
	v := func(gen uint64) bundle.Version { return bundle.Version{Incarnation: 1, Generation: gen} }
	base := v(5)
	decoded := func(typ string, objects ...any) any { return mustDecode(t, typ, objectsData(objects...)) }
	delta := func(hub string, gen uint64, ch string) *bundle.Bundle {
		return deltaBundle(hub, gen, base, changes(ch))
	}
	tests := []struct {
		typ          string
		setup        func(hub string) []*bundle.Bundle
		newer, older func(hub string) *bundle.Bundle
	}{
		{"clusterspolicies", nil,
			func(hub string) *bundle.Bundle {
				return newBundle(hub, "clusterspolicies", v(10), decoded("clusterspolicies", placement("p1", "a")))
			},
			func(hub string) *bundle.Bundle {
				return newBundle(hub, "clusterspolicies", v(9), decoded("clusterspolicies", placement("p1", "b")))
			}},
		{"compliance",
			func(hub string) []*bundle.Bundle {
				return []*bundle.Bundle{newBundle(hub, "clusterspolicies", v(1), decoded("clusterspolicies", placement("p1", "a", "b")))}
			},
			func(hub string) *bundle.Bundle {
				return newBundle(hub, "compliance", v(10), decoded("compliance", policyCompliance("p1", []string{"a"}, nil)))
			},
			func(hub string) *bundle.Bundle {
				return newBundle(hub, "compliance", v(9), decoded("compliance", policyCompliance("p1", []string{"b"}, nil)))
			}},
		{"compliancedelta",
			func(hub string) []*bundle.Bundle {
				return []*bundle.Bundle{
					newBundle(hub, "clusterspolicies", v(1), decoded("clusterspolicies", placement("p1", "a", "b"))),
					newBundle(hub, "compliance", base, decoded("compliance", policyCompliance("p1", nil, nil))),
				}
			},
			func(hub string) *bundle.Bundle { return delta(hub, 10, "p1/a=n") },
			func(hub string) *bundle.Bundle { return delta(hub, 9, "p1/b=n") }},
		{"policyevents", nil,
			func(hub string) *bundle.Bundle {
				return newBundle(hub, "policyevents", v(10), decoded("policyevents", event("p1", "a", "e1", "m", "")))
			},
			func(hub string) *bundle.Bundle {
				return newBundle(hub, "policyevents", v(9), decoded("policyevents", event("p1", "a", "e2", "m", "")))
			}},
	}
	for _, tt := range tests {
		t.Run(tt.typ, func(t *testing.T) {
			hub := "hub-fence-" + tt.typ
			var group []*bundle.Bundle
			if tt.setup != nil {
				group = tt.setup(hub)
			}
			for _, b := range append(group, tt.newer(hub)) {
				if applied, err := apply(t, pool, b); err != nil || !applied {
					t.Fatalf("Apply %s %s = %v, %v", b.Type, b.Version, applied, err)
				}
			}
			compliance, events := readCompliance(t, pool, hub), readEvents(t, pool, hub)
			version, _ := readVersion(t, pool, hub, tt.typ)

			if applied, err := apply(t, pool, tt.older(hub)); err != nil || applied {
				t.Fatalf("Apply older = %v, %v; want false, nil", applied, err)
			}
			if got := readCompliance(t, pool, hub); !reflect.DeepEqual(got, compliance) {
				t.Errorf("older bundle changed compliance: %v, was %v", got, compliance)
			}
			if got := readEvents(t, pool, hub); !reflect.DeepEqual(got, events) {
				t.Errorf("older bundle changed events: %v, were %v", got, events)
			}
			if got, _ := readVersion(t, pool, hub, tt.typ); got != version {
				t.Errorf("older bundle changed bundle_versions: %+v, was %+v", got, version)
			}
		})
	}
}

// testState is a family's state (bundle.State) as a test spells it.
type testState string

func (s testState) EncodeState() []byte { return []byte(s) }

// TestApplyKeepsFamilyState: the fence stores the family state of the
// last bundle it writes (bundle.Bundle.FamilyState: the global-hub agent's
// runs), through Apply and through a pipelined Write alike; a bundle
// without one keeps what is stored, and a stale bundle stores nothing.
func TestApplyKeepsFamilyState(t *testing.T) {
	t.Parallel()
	pool, _ := dbtest.New(t)
	hb := func(gen uint64, state string) *bundle.Bundle {
		b := newBundle("hub-f", "heartbeat", bundle.Version{Incarnation: 1, Generation: gen}, &HeartbeatPayload{})
		if state != "" {
			b.FamilyState = testState(state)
		}
		return b
	}
	stored := func() string {
		t.Helper()
		got, err := db.LoadHubVersions(t.Context(), pool, "hub-f")
		if err != nil || len(got) != 1 {
			t.Fatalf("LoadHubVersions = %+v, %v", got, err)
		}
		return string(got[0].FamilyState)
	}
	if applied, err := apply(t, pool, hb(1, `{"a": 1}`)); err != nil || !applied {
		t.Fatalf("Apply = %v, %v", applied, err)
	}
	if got := stored(); got != `{"a": 1}` {
		t.Fatalf("state %s after Apply", got)
	}
	if applied, err := apply(t, pool, hb(2, "")); err != nil || !applied {
		t.Fatalf("Apply = %v, %v", applied, err)
	}
	if got := stored(); got != `{"a": 1}` {
		t.Fatalf("state %s after a bundle without one, want it kept", got)
	}
	if applied, err := apply(t, pool, hb(1, `{"stale": true}`)); err != nil || applied {
		t.Fatalf("stale Apply = %v, %v", applied, err)
	}
	if got := stored(); got != `{"a": 1}` {
		t.Fatalf("state %s after a stale bundle, want it kept", got)
	}
	if _, err := Default().Write(t.Context(), pool, [][]*bundle.Bundle{{hb(3, `{"b": [2]}`)}, {newBundle("hub-g", "heartbeat", bundle.Version{Generation: 1}, &HeartbeatPayload{})}}); err != nil {
		t.Fatal(err)
	}
	if got := stored(); got != `{"b": [2]}` {
		t.Fatalf("state %s after a pipelined Write", got)
	}
}

// TestFenceRunIDNotText: a run id PostgreSQL text cannot hold (a NUL byte,
// invalid UTF-8) is stored quoted in the global-hub profile's state, by
// Apply and by the pipelined Write, instead of failing the fence and with
// it every bundle of its run (SQLSTATE 22021 for text[], 22P05 for jsonb;
// issue 34, item 9); a storable id is stored as it came.
func TestFenceRunIDNotText(t *testing.T) {
	t.Parallel()
	pool, _ := dbtest.New(t)
	for i, tc := range []struct{ id, want string }{
		{"run\x00start", `"run\x00start"`},
		{"\xff\xfe", `"\xff\xfe"`},
		{"0b1c2d3e-4f50-6172-8394-a5b6c7d8e9f0", "0b1c2d3e-4f50-6172-8394-a5b6c7d8e9f0"},
		{"ü", "ü"},
	} {
		for _, pipelined := range []bool{false, true} {
			hub := fmt.Sprintf("hub-run-id-%d-%v", i, pipelined)
			b := newBundle(hub, "heartbeat", bundle.Version{Incarnation: 1, Generation: 1}, &HeartbeatPayload{})
			b.FamilyState = testState(transport.EncodeGlobalHubState([]string{transport.StorableRunID(tc.id)}, nil))
			var applied bool
			var err error
			if pipelined {
				var a []bool
				if a, err = Default().Write(t.Context(), pool, [][]*bundle.Bundle{{b}}); err == nil {
					applied = a[0]
				}
			} else {
				applied, err = apply(t, pool, b)
			}
			if err != nil || !applied {
				t.Errorf("run id %q (pipelined %v): applied %v, %v", tc.id, pipelined, applied, err)
				continue
			}
			var got []string
			if err := pool.QueryRow(t.Context(), `SELECT ARRAY(SELECT jsonb_array_elements_text(family_state -> 'run_ids')) FROM stb.bundle_versions WHERE hub = $1`, hub).Scan(&got); err != nil {
				t.Fatal(err)
			}
			if !reflect.DeepEqual(got, []string{tc.want}) {
				t.Errorf("run id %q (pipelined %v): run_ids %q, want [%q]", tc.id, pipelined, got, tc.want)
			}
		}
	}
}
