package conflation

import (
	"sync/atomic"
	"testing"
	"time"

	"github.com/stbridge/stb/pkg/bundle"
)

// lingerFixture is a manager whose partitions of topic "t" are behind
// their end while behind is true; the end they report is far beyond any
// offset the tests read, unless lingerEndFixture sets it.
func lingerFixture(t *testing.T, maxBytes int64) (*fixture, *atomic.Bool) {
	t.Helper()
	f, behind, _ := lingerEndFixture(t, maxBytes)
	return f, behind
}

// lingerEndFixture is lingerFixture with the end the partitions report
// settable.
func lingerEndFixture(t *testing.T, maxBytes int64) (*fixture, *atomic.Bool, *atomic.Int64) {
	t.Helper()
	f := newFixture(t)
	behind, end := &atomic.Bool{}, &atomic.Int64{}
	end.Store(1 << 40)
	m, err := NewManager(Config{Types: policyTypes, Now: f.clock.Now, Linger: time.Second, LingerMaxBytes: maxBytes,
		CatchingUp: func(o bundle.Origin) (int64, bool) { return end.Load(), o.Topic == "t" && behind.Load() }})
	if err != nil {
		t.Fatal(err)
	}
	f.m = m
	return f, behind, end
}

// TestReadToItsEndReleases: a unit lingers until the reader has read its
// partition up to the end it had when the unit's newest bundle was read
// (any newer bundle of the hub waiting then has been read by then), even
// while the partition is still behind; a unit whose newer bundle was read
// with a later end waits for that one.
func TestReadToItsEndReleases(t *testing.T) {
	f, behind, end := lingerEndFixture(t, 0)
	behind.Store(true)
	end.Store(10)
	f.insert("hub1", "managedclusters", v(1, 1), nil) // offset 1, waits for 10
	f.insert("hub2", "managedclusters", v(1, 1), nil) // offset 2, waits for 10
	end.Store(20)
	f.insert("hub2", "managedclusters", v(1, 2), nil) // offset 3: hub2 now waits for 20
	for f.off < 8 {
		f.insert("other", "heartbeat", v(1, uint64(f.off)), nil) // offsets 4..8
	}
	f.noneReady()
	f.insert("other", "heartbeat", v(1, 100), nil) // offset 9: read up to 10
	ready := map[string]bool{}
	for f.m.queue.Len() > 0 {
		ready[f.take().Unit.Hub] = true
	}
	if !ready["hub1"] || ready["hub2"] {
		t.Fatalf("ready %v once the reader read up to 10, want hub1 and not hub2, which waits for 20", ready)
	}
	for f.off < 18 {
		f.insert("more", "heartbeat", v(1, uint64(f.off)), nil)
	}
	f.noneReady()
	f.insert("more", "heartbeat", v(1, 100), nil) // offset 19: read up to 20
	var hub2 *Job
	for f.m.queue.Len() > 0 {
		if j := f.take(); j.Unit.Hub == "hub2" {
			hub2 = j
		}
	}
	if hub2 == nil || hub2.Last().Version != v(1, 2) {
		t.Fatalf("hub2's job once the reader read up to 20: %v, want one of its newest", hub2)
	}
}

// TestCatchUpWritesEachHubOnce: while the partition is behind, a hub's
// many generations make one job per type, of the newest, after the
// linger; every older one is conflated away, and the held ones are not
// released (the committed offset cannot pass them) until written.
func TestCatchUpWritesEachHubOnce(t *testing.T) {
	f, behind := lingerFixture(t, 0)
	behind.Store(true)
	const hubs, gens = 50, 40
	newest, jobs := map[string]*bundle.Bundle{}, 0
	for g := range uint64(gens) {
		for h := range hubs {
			hub := "hub" + string(rune('A'+h%26)) + string(rune('a'+h/26))
			newest[hub] = f.insert(hub, "managedclusters", v(1, g+1), nil)
			f.clock.Advance(time.Millisecond) // 2 s of catch-up in all
			if g*hubs+uint64(h) < 900 {
				f.noneReady() // within the linger
			}
		}
		f.m.WakeAll()
		for f.m.queue.Len() > 0 { // workers free: written as soon as ready
			j := f.take()
			jobs++
			if len(j.Bundles) != 1 {
				t.Fatalf("job of %d bundles", len(j.Bundles))
			}
			f.m.Report(j, Applied)
		}
	}
	for range 3 { // the rest end their linger
		f.clock.Advance(time.Second)
		f.m.WakeAll()
		for f.m.queue.Len() > 0 {
			j := f.take()
			jobs++
			if j.Last() != newest[j.Unit.Hub] {
				t.Fatalf("%s: wrote %v, want the newest %v", j.Unit.Hub, j.Last().Version, newest[j.Unit.Hub].Version)
			}
			f.m.Report(j, Applied)
		}
	}
	// 2 s of catch-up with a 1 s linger: at most 2 writes per hub, then the newest.
	if jobs > 3*hubs {
		t.Fatalf("%d writes for %d hubs × 1 type over %d generations, want at most %d", jobs, hubs, gens, 3*hubs)
	}
	for hub, b := range newest {
		if f.done.count(b.Origin.Offset) != 1 {
			t.Fatalf("%s: newest bundle released %d times, want once, when written", hub, f.done.count(b.Origin.Offset))
		}
	}
	t.Logf("%d writes for %d hubs × %d generations", jobs, hubs, gens)
}

// TestLingerHoldsUntilWrittenThenReleases: a lingering bundle is not
// released, so the committed offset cannot pass it.
func TestLingerHoldsUntilWritten(t *testing.T) {
	f, behind := lingerFixture(t, 0)
	behind.Store(true)
	b := f.insert("hub1", "managedclusters", v(1, 1), nil)
	f.clock.Advance(999 * time.Millisecond)
	f.m.WakeAll()
	f.noneReady()
	if f.done.count(b.Origin.Offset) != 0 {
		t.Fatal("a lingering bundle was released before it was written")
	}
	f.clock.Advance(time.Millisecond)
	f.m.WakeAll()
	j := f.take()
	if j.Last() != b {
		t.Fatal("the job is not the lingering bundle")
	}
	if f.done.count(b.Origin.Offset) != 0 {
		t.Fatal("released while in flight")
	}
	f.m.Report(j, Applied)
	if f.done.count(b.Origin.Offset) != 1 {
		t.Fatal("not released once written")
	}
}

// TestCaughtUpReleasesThePartition: the first bundle read at the end of
// the partition releases every unit lingering on it, at once, and is
// itself ready; units of another partition keep lingering.
func TestCaughtUpReleasesThePartition(t *testing.T) {
	f, behind := lingerFixture(t, 0)
	behind.Store(true)
	f.insert("hub1", "managedclusters", v(1, 1), nil)
	f.insert("hub2", "managedclusters", v(1, 1), nil)
	other := &bundle.Bundle{Hub: "hub3", Type: "managedclusters", Version: v(1, 1), Size: 10,
		Origin: bundle.Origin{Topic: "t", Partition: 1, Offset: 99}}
	other.Track(f.done)
	f.m.Insert(other) // CatchingUp is per partition; partition 1 counts as behind too here
	f.noneReady()
	behind.Store(false)
	f.insert("hub4", "managedclusters", v(1, 1), nil) // partition 0 at its end
	ready := map[string]bool{}
	for f.m.queue.Len() > 0 {
		ready[f.take().Unit.Hub] = true
	}
	if !ready["hub1"] || !ready["hub2"] || !ready["hub4"] || len(ready) != 3 {
		t.Fatalf("ready %v, want hub1 and hub2 released by their partition catching up, and hub4 live", ready)
	}
}

// TestLiveNeverLingers: a partition at its end keeps today's freshness.
func TestLiveNeverLingers(t *testing.T) {
	f, _ := lingerFixture(t, 0)
	f.insert("hub1", "managedclusters", v(1, 1), nil)
	if f.take().Unit.Hub != "hub1" {
		t.Fatal("wrong unit")
	}
}

// TestLingerBoundedByMemory: past LingerMaxBytes no unit lingers and the
// lingering ones are released.
func TestLingerBoundedByMemory(t *testing.T) {
	f, behind := lingerFixture(t, 1)
	behind.Store(true)
	f.insert("hub1", "managedclusters", v(1, 1), nil) // held 0 before: lingers
	f.noneReady()
	f.insert("hub2", "managedclusters", v(1, 1), nil) // over the bound: both go
	ready := map[string]bool{}
	for f.m.queue.Len() > 0 {
		ready[f.take().Unit.Hub] = true
	}
	if !ready["hub1"] || !ready["hub2"] {
		t.Fatalf("ready %v, want both units once the held bytes passed LingerMaxBytes", ready)
	}
}

// TestStreamsDoNotLinger: a lingering unit's events (a stream, every one
// written) are ready at once, written in order without its states, which
// keep lingering and being replaced; held, the events would only fill the
// buffer, and past LingerMaxBytes end every unit's linger.
func TestStreamsDoNotLinger(t *testing.T) {
	f, behind := lingerFixture(t, 0)
	behind.Store(true)
	f.insert("hub1", "managedclusters", v(1, 1), nil)
	f.noneReady()
	e1 := f.insert("hub1", "policyevents", v(1, 1), nil)
	j := f.take()
	if j.Type != "policyevents" || len(j.Bundles) != 1 || j.Last() != e1 {
		t.Fatalf("job %s of %d bundles, want the event alone", j.Type, len(j.Bundles))
	}
	mc := f.insert("hub1", "managedclusters", v(1, 2), nil) // replaces the first while the event is written
	f.m.Report(j, Applied)
	f.noneReady()
	f.clock.Advance(time.Second)
	f.m.WakeAll()
	if j := f.take(); j.Type != "managedclusters" || j.Last() != mc {
		t.Fatalf("after the linger: %s %v, want managedclusters' newest", j.Type, j.Last().Version)
	}
}
