package conflation

import (
	"sync"
	"testing"
	"time"

	"github.com/stbridge/stb/pkg/backoff"
	"github.com/stbridge/stb/pkg/bundle"
)

// policyTypes mirrors the bridge's registry: the full dependency chain.
var policyTypes = []bundle.TypeInfo{
	{Name: "heartbeat", Kind: bundle.Complete},
	{Name: "managedclusters", Kind: bundle.Complete},
	{Name: "clusterspolicies", Kind: bundle.Complete, DependsOn: "managedclusters", Rule: bundle.AfterProcessed},
	{Name: "compliance", Kind: bundle.Complete, DependsOn: "clusterspolicies", Rule: bundle.AtLeast},
	{Name: "compliancedelta", Kind: bundle.Delta, DependsOn: "compliance", Rule: bundle.Exactly},
	{Name: "policyevents", Kind: bundle.Stream},
}

// doneSet records which offsets were released.
type doneSet struct {
	mu   sync.Mutex
	done map[int64]int
}

func (d *doneSet) Done(o bundle.Origin) {
	d.mu.Lock()
	defer d.mu.Unlock()
	if d.done == nil {
		d.done = map[int64]int{}
	}
	d.done[o.Offset]++
}

func (d *doneSet) count(off int64) int {
	d.mu.Lock()
	defer d.mu.Unlock()
	return d.done[off]
}

type fakeClock struct {
	mu  sync.Mutex
	now time.Time
}

func (c *fakeClock) Now() time.Time {
	c.mu.Lock()
	defer c.mu.Unlock()
	return c.now
}

func (c *fakeClock) Advance(d time.Duration) {
	c.mu.Lock()
	c.now = c.now.Add(d)
	c.mu.Unlock()
}

type fixture struct {
	t     *testing.T
	m     *Manager
	done  *doneSet
	clock *fakeClock
	off   int64
}

func newFixture(t *testing.T) *fixture {
	t.Helper()
	clock := &fakeClock{now: time.Unix(1_700_000_000, 0)}
	m, err := NewManager(Config{Types: policyTypes, Now: clock.Now, Backoff: backoff.Exponential{Min: time.Second, Max: 8 * time.Second}})
	if err != nil {
		t.Fatal(err)
	}
	return &fixture{t: t, m: m, done: &doneSet{}, clock: clock}
}

func v(inc, gen uint64) bundle.Version { return bundle.Version{Incarnation: inc, Generation: gen} }

// insert inserts a bundle for hub with the next offset and returns it.
func (f *fixture) insert(hub, typ string, ver bundle.Version, dep *bundle.Version) *bundle.Bundle {
	f.off++
	b := &bundle.Bundle{Hub: hub, Type: typ, Version: ver, Size: 10, Origin: bundle.Origin{Topic: "t", Offset: f.off}, ReceivedAt: f.clock.Now()}
	if dep != nil {
		b.Dependency, b.HasDependency = *dep, true
	}
	b.Track(f.done)
	f.m.Insert(b)
	return b
}

// take pops the next ready unit and its job, failing if none is ready.
func (f *fixture) take() *Job {
	f.t.Helper()
	u := f.m.queue.tryPop()
	if u == nil {
		f.t.Fatalf("no unit ready")
	}
	j, err := u.Next()
	if err != nil {
		f.t.Fatalf("Next: %v", err)
	}
	return j
}

func (f *fixture) noneReady() {
	f.t.Helper()
	if n := f.m.queue.Len(); n != 0 {
		f.t.Fatalf("%d units ready, want none", n)
	}
}

func versions(j *Job) []bundle.Version {
	out := make([]bundle.Version, len(j.Bundles))
	for i, b := range j.Bundles {
		out[i] = b.Version
	}
	return out
}
