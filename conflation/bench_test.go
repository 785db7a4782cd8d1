package conflation

import (
	"fmt"
	"runtime"
	"testing"
	"time"

	"github.com/stbridge/stb/pkg/bundle"
)

type nopTracker struct{}

func (nopTracker) Done(bundle.Origin) {}

// BenchmarkUnitInsert measures the reader's hot path: a bundle replacing
// the unwritten one of its hub and type (the common case under overload),
// across 1,000 hubs.
func BenchmarkUnitInsert(b *testing.B) {
	m, err := NewManager(Config{Types: policyTypes})
	if err != nil {
		b.Fatal(err)
	}
	const hubs = 1000
	names := make([]string, hubs)
	for i := range names {
		names[i] = fmt.Sprintf("hub-%04d", i)
	}
	bs := make([]bundle.Bundle, 4096)
	now := time.Now()
	var gen uint64
	b.ReportAllocs()
	i := 0
	for b.Loop() {
		gen++
		x := &bs[i%len(bs)]
		*x = bundle.Bundle{Hub: names[i%hubs], Type: "managedclusters", Version: bundle.Version{Incarnation: 1, Generation: gen}, Size: 1024, ReceivedAt: now}
		x.Track(nopTracker{})
		m.Insert(x)
		i++
	}
	// Keep the queue from growing without bound across b.Loop rounds.
	for m.queue.TryPop() != nil {
	}
}

// BenchmarkNextReport measures a worker's round trip through a unit: take
// the ready job, report it written.
func BenchmarkNextReport(b *testing.B) {
	m, err := NewManager(Config{Types: policyTypes})
	if err != nil {
		b.Fatal(err)
	}
	var gen uint64
	b.ReportAllocs()
	for b.Loop() {
		gen++
		x := &bundle.Bundle{Hub: "hub", Type: "heartbeat", Version: bundle.Version{Incarnation: 1, Generation: gen}}
		m.Insert(x)
		u := m.queue.TryPop()
		j, err := u.Next()
		if err != nil {
			b.Fatal(err)
		}
		m.Report(j, Applied)
	}
}

// BenchmarkIdleUnitBytes measures what a hub's unit holds with nothing
// buffered (issue 22: ≤ 2 KB per hub is the target): units of 17 types,
// as a bridge reading both wire profiles has, after a catch-up and before
// idle eviction: two of the types each had a bundle read and written
// through the unit. It reports the live heap per unit, the hub's name and
// its entry in the manager's index included.
func BenchmarkIdleUnitBytes(b *testing.B) {
	types := make([]bundle.TypeInfo, 17)
	for i := range types {
		types[i] = bundle.TypeInfo{Name: fmt.Sprintf("type-%02d", i), Kind: bundle.Complete}
	}
	const hubs = 20000
	for b.Loop() {
		m, err := NewManager(Config{Types: types})
		if err != nil {
			b.Fatal(err)
		}
		before := liveHeap()
		for i := range hubs {
			writeThrough(b, m, fmt.Sprintf("hub-%05d", i), types[0].Name, types[5].Name)
		}
		after := liveHeap()
		b.ReportMetric(float64(after-before)/hubs, "B/unit")
		runtime.KeepAlive(m)
	}
}

// writeThrough has hub's unit take a bundle of each type and report each
// written, as a worker does.
func writeThrough(tb testing.TB, m *Manager, hub string, types ...string) {
	tb.Helper()
	for _, typ := range types {
		x := &bundle.Bundle{Hub: hub, Type: typ, Version: bundle.Version{Incarnation: 1, Generation: 1}, Size: 100}
		x.Track(nopTracker{})
		m.Insert(x)
		u := m.queue.TryPop()
		if u == nil {
			tb.Fatalf("hub %s: no unit ready after a %s bundle", hub, typ)
		}
		j, err := u.Next()
		if err != nil {
			tb.Fatal(err)
		}
		m.Report(j, Applied)
	}
}

func liveHeap() uint64 {
	runtime.GC()
	var ms runtime.MemStats
	runtime.ReadMemStats(&ms)
	return ms.HeapAlloc
}
