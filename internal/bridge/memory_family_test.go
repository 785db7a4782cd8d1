package bridge

import (
	"testing"

	"github.com/stbridge/stb/conflation"
	"github.com/stbridge/stb/dbsyncers"
	"github.com/stbridge/stb/pkg/bundle"
	"github.com/stbridge/stb/pkg/db"
	"github.com/stbridge/stb/pkg/transport"
)

// TestMemoryForgetsFamilyState: a hub delete or reset (hubs.Memory, which
// internal/hubs applies for `stb hub delete|reset`) drops what the
// families keep of the hub, the global-hub agent's runs, as well as its
// unit; before, the runs survived the delete and grew with every hub ever
// read. An eviction (OnEvict) shrinks an evicted hub's runs to what is
// stored, and leaves a live hub's alone.
func TestMemoryForgetsFamilyState(t *testing.T) {
	reg, err := dbsyncers.ForProfiles(false, true)
	if err != nil {
		t.Fatal(err)
	}
	mgr, err := conflation.NewManager(conflation.Config{Types: reg.Types(), Merge: reg.Mergers(), Decode: reg.Decode})
	if err != nil {
		t.Fatal(err)
	}
	gh := transport.NewGlobalHub()
	m := memory{mgr, []transport.Stateful{gh}}
	v := bundle.Version{Incarnation: 2 << 32, Generation: 3}
	at := bundle.Origin{Topic: "gh-status.hub1", Offset: 4}
	m.Restore([]db.StoredVersion{
		{Hub: "hub1", Type: dbsyncers.GHManagedCluster, Version: v, Origin: at, FamilyState: transport.EncodeGlobalHubState([]string{"r1", "r2"}, nil)},
		{Hub: "hub2", Type: dbsyncers.GHManagedCluster, Version: v, Origin: at},
	})
	if n := gh.Hubs(); n != 2 {
		t.Fatalf("runs of %d hubs restored, want 2", n)
	}
	m.ForgetHub("hub1")
	if n := gh.Hubs(); n != 1 {
		t.Fatalf("runs of %d hubs after hub1's delete, want 1: hub1's survived it", n)
	}
	b := &Bridge{manager: mgr, stateful: m.stateful, memory: newMemoryReleaser()}
	b.evicted(1) // hub2 is dormant: it has versions and no unit
	if n := gh.Evict(func(string) bool { return true }); n != 0 {
		t.Fatalf("Evict after OnEvict = %d hubs, want 0: OnEvict evicted hub2 already", n)
	}
}
