package conflation

import (
	"fmt"
	"math/rand/v2"
	"sync"
	"testing"
	"time"

	"github.com/prometheus/client_golang/prometheus/testutil"

	"github.com/stbridge/stb/pkg/backoff"
	"github.com/stbridge/stb/pkg/bundle"
)

func newIdleFixture(t *testing.T, idle time.Duration) *fixture {
	t.Helper()
	f := newFixture(t)
	m, err := NewManager(Config{Types: policyTypes, Now: f.clock.Now, IdleTimeout: idle, Backoff: backoff.Exponential{Min: time.Second, Max: 8 * time.Second}})
	if err != nil {
		t.Fatal(err)
	}
	f.m = m
	return f
}

func TestIdleUnitIsEvictedAndComesBackWithItsVersions(t *testing.T) {
	f := newIdleFixture(t, time.Minute)
	f.insert("hub1", "managedclusters", v(1, 4), nil)
	j := f.take()
	f.m.Report(j, Applied)

	f.clock.Advance(59 * time.Second)
	f.m.WakeAll()
	if f.m.Len() != 1 {
		t.Fatalf("unit evicted before its idle timeout")
	}
	f.clock.Advance(time.Second)
	f.m.WakeAll()
	if f.m.Len() != 0 || f.m.Dormant() != 1 {
		t.Fatalf("after the idle timeout: %d units and %d dormant hubs, want 0 and 1", f.m.Len(), f.m.Dormant())
	}
	if n := testutil.ToFloat64(f.m.metrics.evicted); n != 1 {
		t.Fatalf("evictions counted %v, want 1", n)
	}

	// A copy of the written bundle, read again, is still stale.
	old := f.insert("hub1", "managedclusters", v(1, 4), nil)
	f.noneReady()
	if f.done.count(old.Origin.Offset) != 1 {
		t.Fatalf("replayed bundle not released as stale after the unit came back")
	}
	if f.m.Dormant() != 0 || f.m.Len() != 1 {
		t.Fatalf("after the hub sent again: %d units and %d dormant hubs, want 1 and 0", f.m.Len(), f.m.Dormant())
	}
	// And a dependent bundle finds its dependency processed.
	f.insert("hub1", "clusterspolicies", v(1, 5), nil)
	if j := f.take(); j.Type != "clusterspolicies" {
		t.Fatalf("job of type %s, want clusterspolicies", j.Type)
	}
}

func TestUnitHoldingWorkIsNotEvicted(t *testing.T) {
	f := newIdleFixture(t, time.Minute)
	// Waiting for its dependency: nothing ready, something held.
	f.insert("hub1", "clusterspolicies", v(1, 1), nil)
	// In flight.
	f.insert("hub2", "managedclusters", v(1, 1), nil)
	j := f.take()
	// Retrying after a failure.
	f.insert("hub3", "managedclusters", v(1, 1), nil)
	j3 := f.take()
	f.m.Report(j3, Transient)

	f.clock.Advance(time.Hour)
	f.m.WakeAll()
	for _, hub := range []string{"hub1", "hub2", "hub3"} {
		if _, ok := f.m.Lookup(hub); !ok {
			t.Errorf("%s evicted while it held work", hub)
		}
	}
	f.m.Report(j, Applied)
	f.clock.Advance(time.Hour)
	f.m.WakeAll()
	if _, ok := f.m.Lookup("hub2"); ok {
		t.Errorf("hub2 not evicted once its write was reported and it idled")
	}
}

func TestRestoreWithoutUnitKeepsVersionsDormant(t *testing.T) {
	f := newIdleFixture(t, 0)
	f.m.Restore("hub1", "compliance", v(2, 9))
	f.m.Restore("hub1", "compliance", v(2, 7)) // an older row never moves it back
	if f.m.Len() != 0 || f.m.Dormant() != 1 {
		t.Fatalf("restoring created %d units and %d dormant hubs, want 0 and 1", f.m.Len(), f.m.Dormant())
	}
	stale := f.insert("hub1", "compliance", v(2, 8), &bundle.Version{Incarnation: 2, Generation: 1})
	if f.done.count(stale.Origin.Offset) != 1 {
		t.Fatalf("bundle older than the restored version was not dropped")
	}
	// A delta on exactly the restored base is ready at once.
	f.insert("hub1", "compliancedelta", v(2, 10), ptr(v(2, 9)))
	if j := f.take(); j.Type != "compliancedelta" {
		t.Fatalf("job of type %s, want compliancedelta", j.Type)
	}
}

func TestForgetHubReleasesEverything(t *testing.T) {
	f := newIdleFixture(t, 0)
	f.m.Restore("hub1", "managedclusters", v(3, 1))
	f.insert("hub1", "managedclusters", v(3, 2), nil)
	j := f.take()                                                 // in flight
	held := f.insert("hub1", "managedclusters", v(3, 3), nil)     // held behind it
	waiting := f.insert("hub1", "clusterspolicies", v(3, 4), nil) // waits for its dependency

	f.m.ForgetHub("hub1")
	for _, b := range []*bundle.Bundle{held, waiting} {
		if f.done.count(b.Origin.Offset) != 1 {
			t.Errorf("held bundle %s %v not released by ForgetHub", b.Type, b.Version)
		}
	}
	// The write in flight fails; nothing of it is kept for a retry.
	f.m.Report(j, Transient)
	if f.done.count(j.Last().Origin.Offset) != 1 {
		t.Fatalf("in-flight bundle not released when reported after ForgetHub")
	}
	if f.m.HeldBytes() != 0 {
		t.Fatalf("held bytes %d after the hub was forgotten", f.m.HeldBytes())
	}
	f.noneReady()

	// What the hub sends next starts from nothing: an older version than
	// the forgotten ones is taken (a reset hub's incarnation went back).
	f.insert("hub1", "managedclusters", v(1, 1), nil)
	if j := f.take(); j.Last().Version != v(1, 1) {
		t.Fatalf("job version %v, want 1.1", j.Last().Version)
	}
}

func TestForgetHubThenTombstoneMakesOldBundlesStale(t *testing.T) {
	f := newIdleFixture(t, 0)
	f.insert("hub1", "compliance", v(3, 2), ptr(v(3, 1)))
	f.m.ForgetHub("hub1")
	tomb := v(3, ^uint64(0))
	for _, typ := range []string{"managedclusters", "clusterspolicies", "compliance", "compliancedelta"} {
		f.m.Restore("hub1", typ, tomb)
	}
	for _, typ := range []string{"managedclusters", "compliance"} {
		b := f.insert("hub1", typ, v(3, 7), ptr(v(3, 1)))
		if f.done.count(b.Origin.Offset) != 1 {
			t.Errorf("%s of the deleted incarnation not dropped as stale", typ)
		}
	}
	f.noneReady()
	f.insert("hub1", "managedclusters", v(4, 1), nil)
	if j := f.take(); j.Last().Version != v(4, 1) {
		t.Fatalf("a newer incarnation after the delete: job %v, want 4.1", j.Last().Version)
	}
}

// TestEvictionRacesInsertion inserts newer and newer bundles of a few hubs
// from several goroutines while units are evicted as fast as they idle and
// a worker writes what is ready: no bundle may be lost or left unreleased,
// and each hub must end at its newest version.
func TestEvictionRacesInsertion(t *testing.T) {
	clock := &fakeClock{now: time.Unix(1_700_000_000, 0)}
	m, err := NewManager(Config{Types: policyTypes, Now: clock.Now, IdleTimeout: time.Nanosecond})
	if err != nil {
		t.Fatal(err)
	}
	const hubs, perHub = 8, 400
	done := &doneSet{}
	var (
		wrote sync.Map // hub -> newest version written
		wg    sync.WaitGroup
		stop  = make(chan struct{})
	)
	wg.Add(2)
	go func() { // evictor
		defer wg.Done()
		for {
			select {
			case <-stop:
				return
			default:
			}
			clock.Advance(time.Millisecond)
			m.WakeAll()
		}
	}()
	go func() { // worker
		defer wg.Done()
		for {
			u := m.queue.tryPop()
			if u == nil {
				select {
				case <-stop:
					if m.queue.Len() == 0 {
						return
					}
				default:
				}
				continue
			}
			j, err := u.Next()
			if err != nil {
				continue
			}
			prev, _ := wrote.Load(u.Hub)
			if p, ok := prev.(bundle.Version); ok && !j.Last().Version.Newer(p) {
				t.Errorf("%s: wrote %v after %v", u.Hub, j.Last().Version, p)
			}
			wrote.Store(u.Hub, j.Last().Version)
			m.Report(j, Applied)
		}
	}()
	var senders sync.WaitGroup
	var off int64
	var offMu sync.Mutex
	for h := range hubs {
		senders.Add(1)
		go func() {
			defer senders.Done()
			r := rand.New(rand.NewPCG(uint64(h), 1))
			for g := uint64(1); g <= perHub; g++ {
				offMu.Lock()
				off++
				o := off
				offMu.Unlock()
				b := &bundle.Bundle{Hub: fmt.Sprintf("hub%d", h), Type: "managedclusters", Version: v(1, g), Size: 1, Origin: bundle.Origin{Offset: o}}
				b.Track(done)
				m.Insert(b)
				if r.IntN(4) == 0 {
					time.Sleep(time.Microsecond)
				}
			}
		}()
	}
	senders.Wait()
	close(stop)
	wg.Wait()
	for u := m.queue.tryPop(); u != nil; u = m.queue.tryPop() { // what the worker left
		if j, err := u.Next(); err == nil {
			wrote.Store(u.Hub, j.Last().Version)
			m.Report(j, Applied)
		}
	}
	if m.HeldBytes() != 0 {
		t.Fatalf("held bytes %d after draining", m.HeldBytes())
	}
	for o := int64(1); o <= off; o++ {
		if n := done.count(o); n != 1 {
			t.Fatalf("bundle at offset %d released %d times, want once", o, n)
		}
	}
	for h := range hubs {
		hub := fmt.Sprintf("hub%d", h)
		got, _ := wrote.Load(hub)
		if got != v(1, perHub) {
			t.Errorf("%s ended at %v, want %v", hub, got, v(1, perHub))
		}
	}
	t.Logf("%v evictions", testutil.ToFloat64(m.metrics.evicted))
}

// TestInsertIntoEvictedUnitGoesToTheNewOne is the interleaving the
// eviction race comes down to: an inserter looked the unit up just before
// it was evicted. The old unit must refuse the bundle, and the manager put
// it in the hub's new unit, which starts from the evicted one's versions.
func TestInsertIntoEvictedUnitGoesToTheNewOne(t *testing.T) {
	f := newIdleFixture(t, time.Minute)
	f.insert("hub1", "managedclusters", v(1, 1), nil)
	f.m.Report(f.take(), Applied)
	old, _ := f.m.Lookup("hub1")
	f.clock.Advance(time.Minute)
	f.m.WakeAll()

	b := &bundle.Bundle{Hub: "hub1", Type: "managedclusters", Version: v(1, 2), Size: 10}
	if ready, retired := old.Insert(b); ready || !retired {
		t.Fatalf("Insert into an evicted unit: ready %v, retired %v; want it refused", ready, retired)
	}
	if _, retired := old.restore(1, v(1, 3)); !retired {
		t.Fatalf("restore into an evicted unit was taken")
	}
	f.m.Insert(b)
	u, ok := f.m.Lookup("hub1")
	if !ok || u == old {
		t.Fatalf("the bundle did not go to a new unit")
	}
	if j := f.take(); j.Unit != u || j.Last() != b {
		t.Fatalf("the new unit's job is not the refused bundle")
	}
	if st := u.Snapshot(); len(st.Types) != 1 || st.Types[0].Processed != v(1, 1).String() {
		t.Fatalf("the new unit does not start from the evicted one's versions: %+v", st)
	}
}

func newResyncFixture(t *testing.T, got *[]Resync) *fixture {
	t.Helper()
	f := newFixture(t)
	m, err := NewManager(Config{Types: policyTypes, Now: f.clock.Now, ResyncAfter: 5 * time.Second, ResyncInterval: time.Minute,
		OnResync: func(rs []Resync) { *got = append(*got, rs...) }})
	if err != nil {
		t.Fatal(err)
	}
	f.m = m
	return f
}

// TestResyncAskedForAMissingBase: a delta whose base was never read asks
// for the base type once it has waited ResyncAfter, then at most once per
// ResyncInterval; a base read but not yet written asks nothing; the
// complete bundle the hub sends in answer makes the delta stale.
func TestResyncAskedForAMissingBase(t *testing.T) {
	var got []Resync
	f := newResyncFixture(t, &got)
	f.m.Restore("hub1", "compliance", v(2, 3))
	delta := f.insert("hub1", "compliancedelta", v(2, 9), ptr(v(2, 8))) // base 2.8 lost
	f.clock.Advance(4 * time.Second)
	f.m.WakeAll()
	if len(got) != 0 {
		t.Fatalf("asked before ResyncAfter: %+v", got)
	}
	f.clock.Advance(time.Second)
	f.m.WakeAll()
	want := Resync{Hub: "hub1", Type: "compliance", WaitingType: "compliancedelta", Waiting: v(2, 9),
		Dependency: v(2, 8), HasDependency: true, Processed: v(2, 3), HasProcessed: true}
	if len(got) != 1 || got[0] != want {
		t.Fatalf("resyncs %+v, want [%+v]", got, want)
	}
	for range 11 { // 55 s more: still within the interval
		f.clock.Advance(5 * time.Second)
		f.m.WakeAll()
	}
	if len(got) != 1 {
		t.Fatalf("%d requests within one interval, want 1", len(got))
	}
	f.clock.Advance(5 * time.Second)
	f.m.WakeAll()
	if len(got) != 2 {
		t.Fatalf("%d requests after the interval, want 2", len(got))
	}
	u, _ := f.m.Lookup("hub1")
	if st := u.Snapshot(); st.Types[0].Type != "compliance" || st.Types[0].Resyncs != 2 {
		t.Fatalf("snapshot %+v, want compliance with 2 resyncs", st.Types)
	}
	// The answer: a complete compliance with a new generation.
	f.insert("hub1", "compliance", v(2, 10), ptr(v(2, 1)))
	if f.done.count(delta.Origin.Offset) != 1 {
		t.Fatalf("the delta on the lost base was not dropped once a newer base came")
	}
	if n := testutil.ToFloat64(f.m.metrics.types[3].resyncs); n != 2 {
		t.Fatalf("stb_conflation_resyncs_total{type=compliance} = %v, want 2", n)
	}
}

func TestNoResyncForABaseOnItsWay(t *testing.T) {
	var got []Resync
	f := newResyncFixture(t, &got)
	f.insert("hub1", "managedclusters", v(1, 1), nil)
	j := f.take() // in flight, for long
	f.insert("hub1", "clusterspolicies", v(1, 2), nil)
	f.clock.Advance(time.Hour)
	f.m.WakeAll()
	if len(got) != 0 {
		t.Fatalf("asked for a base that was read and is being written: %+v", got)
	}
	f.m.Report(j, Applied)
	// A hub whose first bundle is a placement: no clusters ever read.
	f.insert("hub2", "clusterspolicies", v(4, 2), nil)
	f.clock.Advance(5 * time.Second)
	f.m.WakeAll()
	if len(got) != 1 || got[0].Hub != "hub2" || got[0].Type != "managedclusters" || got[0].HasDependency || got[0].HasProcessed {
		t.Fatalf("resyncs %+v, want one of hub2's managedclusters", got)
	}
}

// TestNoResyncCountedWithoutASender: with ResyncAfter but no OnResync (a
// bridge without --resync-topic), nothing is asked, so neither the unit's
// snapshot nor stb_conflation_resyncs_total counts resyncs that were
// never sent; the delta keeps waiting for its base.
func TestNoResyncCountedWithoutASender(t *testing.T) {
	f := newFixture(t)
	m, err := NewManager(Config{Types: policyTypes, Now: f.clock.Now, ResyncAfter: 5 * time.Second, ResyncInterval: time.Minute})
	if err != nil {
		t.Fatal(err)
	}
	f.m = m
	f.m.Restore("hub1", "compliance", v(2, 3))
	f.insert("hub1", "compliancedelta", v(2, 9), ptr(v(2, 8))) // base 2.8 lost
	for range 30 {
		f.clock.Advance(5 * time.Second)
		f.m.WakeAll()
	}
	u, _ := f.m.Lookup("hub1")
	st := u.Snapshot()
	for _, ts := range st.Types {
		if ts.Resyncs != 0 {
			t.Fatalf("%s: %d resyncs counted with nothing to send them", ts.Type, ts.Resyncs)
		}
	}
	if n := testutil.ToFloat64(f.m.metrics.types[3].resyncs); n != 0 {
		t.Fatalf("stb_conflation_resyncs_total{type=compliance} = %v with no sender, want 0", n)
	}
	held := 0
	for _, ts := range st.Types {
		if ts.Type == "compliancedelta" {
			held = ts.HeldCount
		}
	}
	if held != 1 {
		t.Fatalf("the delta is not held waiting for its base: %+v", st.Types)
	}
}
