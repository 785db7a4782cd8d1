package hubs

import (
	"maps"
	"slices"
	"testing"

	"github.com/stbridge/stb/pkg/bundle"
	"github.com/stbridge/stb/pkg/db"
)

// TestFenceEveryType: after a delete, the database holds tombstones only
// for the types the hub had written; a bridge's memory fences every type
// it knows at the newest tombstone, leaves the rows it loaded as they are
// and fences nothing when there is no tombstone.
func TestFenceEveryType(t *testing.T) {
	tomb := func(inc uint64) bundle.Version {
		return bundle.Version{Incarnation: inc, Generation: db.TombstoneGeneration}
	}
	row := func(typ string, v bundle.Version) db.StoredVersion {
		return db.StoredVersion{Hub: "hub-a", Type: typ, Version: v}
	}
	types := []string{"heartbeat", "managedclusters", "policyevents", "gh.event.managedcluster"}
	for _, tc := range []struct {
		name     string
		versions []db.StoredVersion
		want     map[string]bundle.Version
	}{
		{"tombstones of two types", []db.StoredVersion{row("heartbeat", tomb(3)), row("managedclusters", tomb(3))},
			map[string]bundle.Version{"heartbeat": tomb(3), "managedclusters": tomb(3), "policyevents": tomb(3), "gh.event.managedcluster": tomb(3)}},
		{"the hub came back for one type", []db.StoredVersion{row("heartbeat", bundle.Version{Incarnation: 4, Generation: 1}), row("managedclusters", tomb(3))},
			map[string]bundle.Version{"heartbeat": {Incarnation: 4, Generation: 1}, "managedclusters": tomb(3), "policyevents": tomb(3), "gh.event.managedcluster": tomb(3)}},
		{"no tombstone", []db.StoredVersion{row("heartbeat", bundle.Version{Incarnation: 4, Generation: 1})},
			map[string]bundle.Version{"heartbeat": {Incarnation: 4, Generation: 1}}},
		{"no versions", nil, map[string]bundle.Version{}},
	} {
		t.Run(tc.name, func(t *testing.T) {
			in := slices.Clone(tc.versions)
			got := map[string]bundle.Version{}
			for _, v := range fenceEveryType(in, types) {
				if v.Hub != "hub-a" {
					t.Errorf("%s for hub %q", v.Type, v.Hub)
				}
				got[v.Type] = v.Version
			}
			if !maps.Equal(got, tc.want) {
				t.Fatalf("got %v, want %v", got, tc.want)
			}
			if len(in) != len(tc.versions) || (len(in) > 0 && in[0].Version != tc.versions[0].Version) {
				t.Fatalf("the versions passed in changed: %v", in)
			}
		})
	}
}
