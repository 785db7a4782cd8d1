package dbsyncers

import (
	"encoding/json"
	"reflect"
	"testing"
	"time"

	"github.com/stbridge/stb/pkg/bundle"
	"github.com/stbridge/stb/pkg/db/dbtest"
	"github.com/stbridge/stb/pkg/deadletter"
)

// decodeClusterCases are the decoder's table cases, also the fuzz seeds.
var decodeClusterCases = []struct {
	name      string
	data      string
	wantNames []string          // nil with wantErr
	reason    deadletter.Reason // the decoder error's dead-letter reason, "" for none
}{
	{"empty list", `{"objects":[]}`, []string{}, ""},
	{"null list", `{"objects":null}`, []string{}, ""},
	{"two clusters", `{"objects":[{"metadata":{"name":"b","uid":"u2"}},{"metadata":{"name":"a","uid":"u1"}}]}`, []string{"a", "b"}, ""},
	{"duplicate, last wins", `{"objects":[{"metadata":{"name":"a","uid":"old"}},{"metadata":{"name":"b"}},{"metadata":{"name":"a","uid":"new"}}]}`, []string{"a", "b"}, ""},
	{"unknown fields kept", `{"objects":[{"metadata":{"name":"a"},"x":[1,2]}],"extra":true}`, []string{"a"}, ""},
	{"missing objects", `{}`, nil, deadletter.BadPayload},
	{"null payload", `null`, nil, deadletter.BadPayload},
	{"array payload", `[]`, nil, deadletter.BadPayload},
	{"objects not a list", `{"objects":{"metadata":{"name":"a"}}}`, nil, deadletter.BadPayload},
	{"object not an object", `{"objects":[42]}`, nil, deadletter.BadPayload},
	{"null object", `{"objects":[null]}`, nil, deadletter.BadPayload},
	{"missing metadata", `{"objects":[{"kind":"ManagedCluster"}]}`, nil, deadletter.BadPayload},
	{"missing name", `{"objects":[{"metadata":{"uid":"u"}}]}`, nil, deadletter.BadPayload},
	{"empty name", `{"objects":[{"metadata":{"name":"a"}},{"metadata":{"name":""}}]}`, nil, deadletter.BadPayload},
	{"name not a string", `{"objects":[{"metadata":{"name":7}}]}`, nil, deadletter.BadPayload},
	{"bad JSON", `{"objects":[{"metadata":{"name":"a"}]}`, nil, deadletter.BadPayload},
	{"trailing data", `{"objects":[]}x`, nil, deadletter.BadPayload},
	{"empty", ``, nil, deadletter.BadPayload},
}

func TestDecodeManagedClusters(t *testing.T) {
	rows := decodeClusterCases
	runDecodeCases(t, decodeManagedClusters, len(rows), func(i int) decodeCase {
		return decodeCase{rows[i].name, rows[i].data, rows[i].reason}
	}, func(t *testing.T, i int, p any) {
		tt := rows[i]
		names := []string{}
		for _, c := range p.(*ManagedClustersPayload).Clusters {
			names = append(names, c.Name)
		}
		if !reflect.DeepEqual(names, tt.wantNames) {
			t.Errorf("names = %v, want %v", names, tt.wantNames)
		}
	})
}

// TestDecodeManagedClustersKeepsObject: the payload column must hold the
// object as sent, with the uid read from it and the last duplicate kept.
func TestDecodeManagedClustersKeepsObject(t *testing.T) {
	obj := clusterJSON("c1", "uid-1", "7")
	p := mustDecode(t, "managedclusters", clustersData(clusterJSON("c1", "uid-0", "6"), obj)).(*ManagedClustersPayload)
	if len(p.Clusters) != 1 {
		t.Fatalf("got %d clusters, want 1", len(p.Clusters))
	}
	c := p.Clusters[0]
	if c.Name != "c1" || c.UID != "uid-1" {
		t.Errorf("cluster = %s/%s, want c1/uid-1", c.Name, c.UID)
	}
	var got, want any
	if err := json.Unmarshal(c.Object, &got); err != nil {
		t.Fatal(err)
	}
	if err := json.Unmarshal(obj, &want); err != nil {
		t.Fatal(err)
	}
	if !reflect.DeepEqual(got, want) {
		t.Errorf("object = %s, want %s", c.Object, obj)
	}
}

// FuzzDecodeManagedClusters: whatever a hub sends, the decoder must not
// panic, and what it accepts the handler must be able to write: names
// non-empty, sorted and unique, objects valid JSON.
func FuzzDecodeManagedClusters(f *testing.F) {
	for _, tt := range decodeClusterCases {
		f.Add([]byte(tt.data))
	}
	f.Fuzz(func(t *testing.T, data []byte) {
		p, err := decodeManagedClusters(data)
		if err != nil {
			return
		}
		clusters := p.(*ManagedClustersPayload).Clusters
		for i, c := range clusters {
			if c.Name == "" {
				t.Errorf("cluster %d has no name", i)
			}
			if i > 0 && clusters[i-1].Name >= c.Name {
				t.Errorf("names not sorted and unique: %q then %q", clusters[i-1].Name, c.Name)
			}
			if !json.Valid(c.Object) {
				t.Errorf("cluster %q object is not valid JSON: %s", c.Name, c.Object)
			}
		}
	})
}

func TestNormalize(t *testing.T) {
	mc := func(name, uid string) ManagedCluster {
		return ManagedCluster{Name: name, UID: uid, Object: json.RawMessage(`{}`)}
	}
	tests := []struct {
		name string
		in   []ManagedCluster
		want []ManagedCluster
	}{
		{"nil", nil, nil},
		{"sorted", []ManagedCluster{mc("a", "1"), mc("b", "2")}, []ManagedCluster{mc("a", "1"), mc("b", "2")}},
		{"unsorted", []ManagedCluster{mc("b", "2"), mc("a", "1")}, []ManagedCluster{mc("a", "1"), mc("b", "2")}},
		{"duplicates, last wins", []ManagedCluster{mc("b", "1"), mc("a", "1"), mc("b", "2"), mc("a", "2"), mc("b", "3")},
			[]ManagedCluster{mc("a", "2"), mc("b", "3")}},
	}
	for _, tt := range tests {
		t.Run(tt.name, func(t *testing.T) {
			in := append([]ManagedCluster(nil), tt.in...)
			got := normalize(tt.in)
			if !reflect.DeepEqual(got, tt.want) {
				t.Errorf("normalize = %+v, want %+v", got, tt.want)
			}
			if !reflect.DeepEqual(tt.in, in) {
				t.Errorf("normalize changed its input (a shared payload): %+v, was %+v", tt.in, in)
			}
		})
	}
}

// TestManagedClustersSnapshot applies a sequence of snapshots to one hub
// and checks after each that its rows are exactly the snapshot, that rows
// of unchanged clusters were not rewritten, and that another hub's rows
// were never touched.
func TestManagedClustersSnapshot(t *testing.T) {
	t.Parallel()
	pool, _ := dbtest.New(t)
	const hub, other = "hub-snap", "hub-other"
	gen := uint64(0)
	applySnapshot := func(t *testing.T, hub string, payload any) {
		t.Helper()
		gen++
		if applied, err := apply(t, pool, newBundle(hub, "managedclusters", bundle.Version{Incarnation: 1, Generation: gen}, payload)); err != nil || !applied {
			t.Fatalf("Apply = %v, %v", applied, err)
		}
	}
	decoded := func(objects ...json.RawMessage) any {
		return mustDecode(t, "managedclusters", clustersData(objects...))
	}

	applySnapshot(t, other, decoded(clusterJSON("a", "other-a", "x"), clusterJSON("z", "other-z", "x")))
	otherBefore := readClusters(t, pool, other)

	steps := []struct {
		name      string
		payload   any
		want      map[string]string // name → rev
		unchanged []string          // rows that must not have been rewritten
	}{
		{"add to empty", decoded(clusterJSON("a", "uid-a", "1"), clusterJSON("b", "uid-b", "1")),
			map[string]string{"a": "1", "b": "1"}, nil},
		{"same snapshot rewrites nothing", decoded(clusterJSON("b", "uid-b", "1"), clusterJSON("a", "uid-a", "1")),
			map[string]string{"a": "1", "b": "1"}, []string{"a", "b"}},
		{"change one, add one", decoded(clusterJSON("a", "uid-a", "2"), clusterJSON("b", "uid-b", "1"), clusterJSON("c", "uid-c", "1")),
			map[string]string{"a": "2", "b": "1", "c": "1"}, []string{"b"}},
		{"remove one", decoded(clusterJSON("a", "uid-a", "2"), clusterJSON("c", "uid-c", "1")),
			map[string]string{"a": "2", "c": "1"}, []string{"a", "c"}},
		// Built by hand, not decoded, so that Handle's own normalising is
		// what is tested.
		{"duplicates in input", &ManagedClustersPayload{Clusters: []ManagedCluster{
			{Name: "d", UID: "uid-d", Object: clusterJSON("d", "uid-d", "1")},
			{Name: "a", UID: "uid-a", Object: clusterJSON("a", "uid-a", "3")},
			{Name: "d", UID: "uid-d", Object: clusterJSON("d", "uid-d", "2")},
			{Name: "c", UID: "uid-c", Object: clusterJSON("c", "uid-c", "1")},
		}}, map[string]string{"a": "3", "c": "1", "d": "2"}, []string{"c"}},
		{"id change alone is a change", decoded(clusterJSON("a", "uid-a", "3"), clusterJSON("c", "uid-c2", "1"), clusterJSON("d", "uid-d", "2")),
			map[string]string{"a": "3", "c": "1", "d": "2"}, []string{"a", "d"}},
		{"empty snapshot removes all", decoded(), map[string]string{}, nil},
		{"add after empty", decoded(clusterJSON("e", "uid-e", "1")), map[string]string{"e": "1"}, nil},
	}
	for _, step := range steps {
		t.Run(step.name, func(t *testing.T) {
			before := readClusters(t, pool, hub)
			time.Sleep(2 * time.Millisecond) // so that a rewrite shows in updated_at
			applySnapshot(t, hub, step.payload)
			after := readClusters(t, pool, hub)
			if got := revs(after); !reflect.DeepEqual(got, step.want) {
				t.Fatalf("rows = %v, want %v", got, step.want)
			}
			for _, name := range step.unchanged {
				if after[name] != before[name] {
					t.Errorf("unchanged cluster %q was rewritten: %+v, was %+v", name, after[name], before[name])
				}
			}
			for name, row := range after {
				if was, ok := before[name]; ok && (was.Rev != row.Rev || was.ID != row.ID) && !row.Updated.After(was.Updated) {
					t.Errorf("changed cluster %q kept updated_at %v", name, row.Updated)
				}
			}
		})
	}
	if got := readClusters(t, pool, other); !reflect.DeepEqual(got, otherBefore) {
		t.Errorf("another hub's rows changed: %+v, were %+v", got, otherBefore)
	}
}
