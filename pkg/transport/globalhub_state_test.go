package transport_test

import (
	"maps"
	"testing"
	"time"

	"github.com/stbridge/stb/dbsyncers"
	"github.com/stbridge/stb/pkg/bundle"
	"github.com/stbridge/stb/pkg/transport"
)

// TestGlobalHubForgetsDeletedHub: `hub delete` and `hub reset` make the
// bridge forget the hub's runs (transport.Stateful.Forget): they grew
// with every hub ever read and survived a delete, so a deleted hub's
// agent was numbered by its old runs for the bridge's whole life. Another
// hub's runs are kept.
func TestGlobalHubForgetsDeletedHub(t *testing.T) {
	gh := transport.NewGlobalHub()
	read := clusterReader(t, gh)
	read("hub1", "a", "0.5")
	read("hub1", "b", "0.1") // a restart of hub1's agent: run 2
	read("hub2", "c", "0.5")
	if n := gh.Hubs(); n != 2 {
		t.Fatalf("runs of %d hubs, want 2", n)
	}
	gh.Forget("hub1")
	if n := gh.Hubs(); n != 1 {
		t.Fatalf("runs of %d hubs after hub1 was forgotten, want 1", n)
	}
	// hub1's agent, read again from scratch, starts at the first run, as
	// a hub never read does; hub2 goes on in its run.
	if b := read("hub1", "d", "0.0"); b.Version != (bundle.Version{Incarnation: 1 << 32}) {
		t.Errorf("hub1 after Forget: %v, want run 1", b.Version)
	}
	if b := read("hub2", "e", "0.6"); b.Version != (bundle.Version{Incarnation: 1 << 32, Generation: 6}) {
		t.Errorf("hub2 after hub1 was forgotten: %v, want run 1", b.Version)
	}
}

// TestGlobalHubEvictKeepsStoredState: an evicted hub's runs shrink to what
// the database keeps of them (its version, where it was read, its state),
// and the hub's next events are numbered as a bridge restarted on that
// database numbers them: on in its run, a copy of its run's first event
// stale, a restart of its agent a new run. A hub not evicted is left
// alone.
func TestGlobalHubEvictKeepsStoredState(t *testing.T) {
	gh := transport.NewGlobalHub()
	read := clusterReader(t, gh)
	read("hub1", "start", "0.5")
	last := read("hub1", "next", "1.6")
	read("hub2", "other", "0.5")
	if n := gh.Evict(func(hub string) bool { return hub == "hub1" }); n != 1 {
		t.Fatalf("Evict = %d hubs, want 1", n)
	}
	if n := gh.Evict(func(hub string) bool { return hub == "hub1" }); n != 0 {
		t.Fatalf("Evict again = %d hubs, want 0: hub1 is evicted already", n)
	}
	if n := gh.Hubs(); n != 2 {
		t.Fatalf("runs of %d hubs after the eviction, want 2 (hub1 as stored)", n)
	}
	if b := read("hub1", "start", "0.5"); b.Version != (bundle.Version{}) {
		t.Errorf("copy of the run's first event after the eviction: %v, want stale", b.Version)
	}
	if b := read("hub1", "on", "2.7"); b.Version != (bundle.Version{Incarnation: 1<<32 | 2, Generation: 7}) || !b.Version.Newer(last.Version) {
		t.Errorf("next event after the eviction: %v, want run 1 after %v", b.Version, last.Version)
	}
	if b := read("hub1", "restarted", "0.1"); b.Version != (bundle.Version{Incarnation: 2 << 32, Generation: 1}) {
		t.Errorf("the agent's restart after the eviction: %v, want run 2", b.Version)
	}
}

// TestGlobalHubStateRoundTrip: the state a bundle carries is what Restore
// takes back: a bridge restarted on it knows the run's first event.
func TestGlobalHubStateRoundTrip(t *testing.T) {
	gh := transport.NewGlobalHub()
	m := ghEncode(t, transport.GlobalHubEvent{Topic: "gh-status.hub1", Hub: "hub1", Type: "managedcluster", Version: "0.5", Data: []byte(`[]`)})
	setHeader(m, "ce_id", "first")
	b, rej := gh.Decode(consumed(m, 0, 7), ghRules(t), time.Now())
	if rej != nil || b.FamilyState == nil {
		t.Fatalf("decode: %v, state %v", rej, b)
	}
	state := b.FamilyState.EncodeState()
	if ids, _ := transport.DecodeGlobalHubState(state); len(ids) != 1 || ids[0] != "first" {
		t.Fatalf("state %s: run ids %q, want [first]", state, ids)
	}
	restarted := transport.NewGlobalHub()
	restarted.Restore("hub1", dbsyncers.GHManagedCluster, b.Version, b.Origin, state)
	setHeader(m, "ce_id", "first")
	if again, rej := restarted.Decode(consumed(m, 0, 9), ghRules(t), time.Now()); rej != nil || again.Version != (bundle.Version{}) {
		t.Fatalf("a late copy of the run's first event after a restart: %v, %v; want stale", again, rej)
	}
}

// TestGlobalHubTypesAreTheRegistrys: the bundle types the profile makes,
// and the one dependency among them, are exactly those of the registry's
// global-hub syncers (dbsyncers.GlobalHub): one table, held to the other.
func TestGlobalHubTypesAreTheRegistrys(t *testing.T) {
	want := map[string]string{}
	for _, s := range dbsyncers.GlobalHub() {
		want[s.Name] = s.DependsOn
	}
	got := transport.GlobalHubBundleTypes()
	if !maps.Equal(got, want) {
		t.Fatalf("the profile's types (and dependencies) %v, the registry's %v", got, want)
	}
}

// clusterReader returns a function that has gh read a managedcluster
// event of hub with the CloudEvents id and agent version given, each at
// the next offset of partition 0 of the hub's topic, and returns its
// bundle; a reject fails t.
func clusterReader(t *testing.T, gh *transport.GlobalHub) func(hub, id, version string) *bundle.Bundle {
	rules := ghRules(t)
	offset := int64(0)
	return func(hub, id, version string) *bundle.Bundle {
		t.Helper()
		m := ghEncode(t, transport.GlobalHubEvent{Topic: "gh-status." + hub, Hub: hub, Type: "managedcluster", Version: version, Data: []byte(`[]`)})
		setHeader(m, "ce_id", id)
		b, rej := gh.Decode(consumed(m, 0, offset), rules, time.Now())
		offset++
		if rej != nil {
			t.Fatalf("%s: %v", id, rej)
		}
		return b
	}
}
