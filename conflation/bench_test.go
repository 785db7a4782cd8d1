package conflation

import (
	"fmt"
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
