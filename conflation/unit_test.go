package conflation

import (
	"context"
	"errors"
	"maps"
	"reflect"
	"slices"
	"testing"
	"time"

	"github.com/stbridge/stb/pkg/bundle"
)

func TestLatestWins(t *testing.T) {
	f := newFixture(t)
	b1 := f.insert("hub1", "managedclusters", v(1, 1), nil)
	b2 := f.insert("hub1", "managedclusters", v(1, 2), nil)
	b3 := f.insert("hub1", "managedclusters", v(1, 3), nil)
	if f.m.queue.Len() != 1 {
		t.Fatalf("queue length %d, want 1 (a unit is queued at most once)", f.m.queue.Len())
	}
	j := f.take()
	if got := versions(j); !slices.Equal(got, []bundle.Version{v(1, 3)}) {
		t.Fatalf("job versions %v, want [1.3]", got)
	}
	for _, b := range []*bundle.Bundle{b1, b2} {
		if f.done.count(b.Origin.Offset) != 1 {
			t.Errorf("conflated bundle at offset %d not released", b.Origin.Offset)
		}
	}
	if f.done.count(b3.Origin.Offset) != 0 {
		t.Fatalf("in-flight bundle released before its report")
	}
	f.m.Report(j, Applied)
	if f.done.count(b3.Origin.Offset) != 1 {
		t.Fatalf("written bundle not released")
	}
	if f.m.HeldBytes() != 0 {
		t.Fatalf("held bytes %d after everything was written", f.m.HeldBytes())
	}
}

func TestStaleDropped(t *testing.T) {
	cases := []struct {
		name     string
		restored *bundle.Version
		first    bundle.Version
		second   bundle.Version
	}{
		{"duplicate", nil, v(1, 5), v(1, 5)},
		{"older generation", nil, v(1, 5), v(1, 4)},
		{"older incarnation, higher generation", nil, v(2, 1), v(1, 99)},
		{"restored version replayed", ptr(v(1, 7)), v(1, 7), v(1, 6)},
	}
	for _, tc := range cases {
		t.Run(tc.name, func(t *testing.T) {
			f := newFixture(t)
			if tc.restored != nil {
				f.m.Restore("hub1", "managedclusters", *tc.restored)
			}
			first := f.insert("hub1", "managedclusters", tc.first, nil)
			second := f.insert("hub1", "managedclusters", tc.second, nil)
			if f.done.count(second.Origin.Offset) != 1 {
				t.Fatalf("stale bundle %v not released at once", tc.second)
			}
			if tc.restored != nil {
				// Even the first is not newer than the database.
				if f.done.count(first.Origin.Offset) != 1 {
					t.Fatalf("bundle equal to the restored version kept")
				}
				f.noneReady()
				return
			}
			j := f.take()
			if j.Last() != first {
				t.Fatalf("job holds %v, want the first bundle %v", j.Last().Version, tc.first)
			}
		})
	}
}

func ptr[T any](x T) *T { return &x }

func TestOneWorkerPerUnit(t *testing.T) {
	f := newFixture(t)
	f.insert("hub1", "heartbeat", v(1, 1), nil)
	j := f.take()
	// While the job is out, newer bundles arrive: the unit must not be
	// queued again, or a second worker could write the hub concurrently.
	f.insert("hub1", "heartbeat", v(1, 2), nil)
	f.insert("hub1", "managedclusters", v(1, 3), nil)
	f.noneReady()
	u, _ := f.m.Lookup("hub1")
	if _, err := u.Next(); !errors.Is(err, ErrNoReadyBundle) {
		t.Fatalf("Next on a busy unit: %v, want ErrNoReadyBundle", err)
	}
	f.m.Report(j, Applied)
	if f.m.queue.Len() != 1 {
		t.Fatalf("unit not ready again after a report while more is held")
	}
	j = f.take()
	if j.Type != "heartbeat" || j.Last().Version != v(1, 2) {
		t.Fatalf("got %s %v, want heartbeat 1.2 first by priority", j.Type, j.Last().Version)
	}
	f.m.Report(j, Applied)
	j = f.take()
	if j.Type != "managedclusters" {
		t.Fatalf("got %s, want managedclusters", j.Type)
	}
	f.m.Report(j, Applied)
	f.noneReady()
}

func TestTransientRetryAfterBackoff(t *testing.T) {
	f := newFixture(t)
	b := f.insert("hub1", "managedclusters", v(1, 1), nil)
	j := f.take()
	retryIn := f.m.Report(j, Transient)
	if retryIn <= 0 {
		t.Fatalf("retry delay %v, want positive", retryIn)
	}
	f.noneReady()
	if f.done.count(b.Origin.Offset) != 0 {
		t.Fatalf("a transiently failed bundle was released")
	}
	u := j.Unit
	f.m.Wake(u) // too early: nothing happens
	f.noneReady()
	f.clock.Advance(retryIn)
	f.m.Wake(u)
	j = f.take()
	if j.Last() != b || j.Attempt != 1 {
		t.Fatalf("retry job %v attempt %d, want the same bundle, attempt 1", j.Last().Version, j.Attempt)
	}
	// A newer bundle arriving during the retry replaces the failed one.
	nb := f.insert("hub1", "managedclusters", v(1, 2), nil)
	f.m.Report(j, Transient)
	if f.done.count(b.Origin.Offset) != 1 {
		t.Fatalf("failed bundle not released after a newer one replaced it")
	}
	f.clock.Advance(time.Minute)
	f.m.Wake(u)
	j = f.take()
	if j.Last() != nb {
		t.Fatalf("got %v, want the newer bundle", j.Last().Version)
	}
	f.m.Report(j, Permanent)
	if f.done.count(nb.Origin.Offset) != 1 {
		t.Fatalf("dead-lettered bundle not released")
	}
}

func TestReadyQueuePopBlocks(t *testing.T) {
	q := NewReadyQueue()
	ctx, cancel := context.WithTimeout(context.Background(), 50*time.Millisecond)
	defer cancel()
	if _, err := q.Pop(ctx); !errors.Is(err, context.DeadlineExceeded) {
		t.Fatalf("Pop on empty queue: %v, want deadline exceeded", err)
	}
	u := &Unit{Hub: "a"}
	got := make(chan *Unit)
	go func() {
		u, _ := q.Pop(context.Background())
		got <- u
	}()
	q.Push(u)
	if g := <-got; g != u {
		t.Fatalf("popped %v, want %v", g, u)
	}
}

func TestDependencyTimeoutExpiresWaitingBundle(t *testing.T) {
	f := newFixture(t)
	f.m.cfg.DependencyTimeout = time.Minute
	b := f.insert("hub1", "clusterspolicies", v(1, 1), nil) // managedclusters never arrives
	f.noneReady()
	f.clock.Advance(59 * time.Second)
	f.m.WakeAll()
	f.noneReady()
	f.clock.Advance(time.Second)
	f.m.WakeAll()
	j := f.take()
	if !j.Expired || j.Last() != b {
		t.Fatalf("job expired=%v for %v, want the waiting bundle expired", j.Expired, j.Last().Version)
	}
	f.m.Report(j, Permanent)
	if f.done.count(b.Origin.Offset) != 1 {
		t.Fatal("expired bundle still pins its offset")
	}
	// A bundle whose dependency is met is never expired, however old.
	f.insert("hub1", "managedclusters", v(1, 2), nil)
	f.clock.Advance(time.Hour)
	j = f.take()
	if j.Expired {
		t.Fatal("a bundle without a dependency expired")
	}
}

// With conflation off every bundle is written on its own, in order: the
// baseline the benchmarks compare against.
func TestNoConflationWritesEveryBundleInOrder(t *testing.T) {
	f := newFixture(t)
	m, err := NewManager(Config{Types: policyTypes, Now: f.clock.Now, NoConflation: true})
	if err != nil {
		t.Fatal(err)
	}
	f.m = m
	for g := uint64(1); g <= 3; g++ {
		f.insert("hub1", "managedclusters", v(1, g), nil)
	}
	for g := uint64(1); g <= 3; g++ {
		j := f.take()
		if len(j.Bundles) != 1 || j.Last().Version != v(1, g) {
			t.Fatalf("job %d: %v, want just 1.%d", g, versions(j), g)
		}
		f.m.Report(j, Applied)
	}
	f.noneReady()
}

// Regression: Pop handed out queued units after its context was
// cancelled, so on SIGTERM the workers kept draining a backlog until the
// shutdown timeout and the final commit failed.
func TestPopStopsWhenCancelledEvenWithUnitsQueued(t *testing.T) {
	q := NewReadyQueue()
	q.Push(&Unit{Hub: "a"})
	ctx, cancel := context.WithCancel(context.Background())
	cancel()
	if u, err := q.Pop(ctx); err == nil {
		t.Fatalf("Pop after cancel returned unit %v", u.Hub)
	}
	if q.Len() != 1 {
		t.Fatalf("queue length %d, want the unit still queued", q.Len())
	}
}

// TestDropPartition: a revoked partition's bundles that no worker has
// taken are dropped, what is in flight stays, and once the partition comes
// back the dropped versions are taken again rather than counted as stale
// (docs/design.md, Scaling out).
func TestDropPartition(t *testing.T) {
	f := newFixture(t)
	f.insert("hub", "heartbeat", v(1, 1), nil)
	inflight := f.take() // heartbeat 1.1 is being written
	f.insert("hub", "managedclusters", v(1, 2), nil)
	f.insert("hub", "heartbeat", v(1, 3), nil)
	held := f.m.HeldBytes()

	f.m.DropPartition("t", 0)
	if got := f.m.HeldBytes(); got != 10 {
		t.Fatalf("held %d bytes after the drop (%d before), want only the in-flight bundle's 10", got, held)
	}
	f.m.Report(inflight, Applied)
	f.noneReady()

	// The partition is back: the same messages are read again.
	f.insert("hub", "managedclusters", v(1, 2), nil)
	f.insert("hub", "heartbeat", v(1, 3), nil)
	f.insert("hub", "heartbeat", v(1, 1), nil) // written before: stale
	got := map[string]bundle.Version{}
	for range 2 {
		j := f.take()
		got[j.Type] = j.Last().Version
		f.m.Report(j, Applied)
	}
	want := map[string]bundle.Version{"managedclusters": v(1, 2), "heartbeat": v(1, 3)}
	if !maps.Equal(got, want) {
		t.Fatalf("after the partition came back, wrote %v, want %v", got, want)
	}
	f.noneReady()
	if got := f.m.HeldBytes(); got != 0 {
		t.Fatalf("held %d bytes at the end, want 0", got)
	}
}

// TestDropPartitionDropsWhatAFailedWriteHandsBack: while a revocation
// waits for the partition's in-flight job, that job fails transiently; its
// bundle must be dropped, not put back, so the partition's outstanding
// messages reach zero and the wait ends (it used to poll every 5 ms and
// drop again). After end, a failure puts bundles back as usual.
func TestDropPartitionDropsWhatAFailedWriteHandsBack(t *testing.T) {
	f := newFixture(t)
	f.insert("hub", "heartbeat", v(1, 1), nil)
	inflight := f.take()
	end := f.m.DropPartition("t", 0)
	f.m.Report(inflight, Transient)
	if got := f.m.HeldBytes(); got != 0 {
		t.Fatalf("held %d bytes after the failed write of a revoked partition, want 0", got)
	}
	end()
	end() // idempotent

	f.insert("hub", "managedclusters", v(1, 2), nil)
	j := f.take()
	f.m.Report(j, Transient)
	if got := f.m.HeldBytes(); got == 0 {
		t.Fatal("a failed write after the drop ended was dropped, want it kept for a retry")
	}
}

// A unit keeps why each type's last write failed, and since when, for the
// console: it outlives the retry that succeeds, so an operator sees what
// happened, and how long ago.
func TestLastErrorKept(t *testing.T) {
	f := newFixture(t)
	f.insert("hub1", "managedclusters", v(1, 1), nil)
	j := f.take()
	j.Err = errors.New("connection refused")
	retryIn := f.m.Report(j, Transient)
	lastErr := func() TypeState {
		t.Helper()
		for _, ts := range j.Unit.Snapshot().Types {
			if ts.Type == "managedclusters" {
				return ts
			}
		}
		t.Fatal("no managedclusters in the snapshot")
		return TypeState{}
	}
	if ts := lastErr(); ts.LastError != "connection refused" || ts.Retries != 1 {
		t.Fatalf("after a failure: last error %q, retries %d", ts.LastError, ts.Retries)
	}
	f.clock.Advance(retryIn)
	f.m.Wake(j.Unit)
	j = f.take()
	f.m.Report(j, Applied)
	if ts := lastErr(); ts.LastError != "connection refused" || ts.LastErrorAgeSec < retryIn.Seconds() || ts.Retries != 0 {
		t.Fatalf("after the retry applied: last error %q %.1fs ago, retries %d", ts.LastError, ts.LastErrorAgeSec, ts.Retries)
	}
}

// TestTakesEqualVersions: a type that takes equal versions (the
// global-hub agent's: the frames of a resync share one extversion,
// agent/pkg/status/emitters/object_emitter.go) queues every bundle at the
// version already seen, in order, and still drops an older one.
func TestTakesEqualVersions(t *testing.T) {
	clock := &fakeClock{now: time.Unix(1_700_000_000, 0)}
	m, err := NewManager(Config{Types: []bundle.TypeInfo{{Name: "frames", Kind: bundle.Stream, TakesEqual: true}}, Now: clock.Now})
	if err != nil {
		t.Fatal(err)
	}
	f := &fixture{t: t, m: m, done: &doneSet{}, clock: clock}
	f.insert("hub1", "frames", v(1, 4), nil)
	f.insert("hub1", "frames", v(1, 4), nil)
	old := f.insert("hub1", "frames", v(1, 3), nil)
	f.insert("hub1", "frames", v(1, 4), nil)
	j := f.take()
	if got := versions(j); !slices.Equal(got, []bundle.Version{v(1, 4), v(1, 4), v(1, 4)}) {
		t.Fatalf("job versions %v, want three frames at 1.4", got)
	}
	if f.done.count(old.Origin.Offset) != 1 {
		t.Fatal("the older bundle was not dropped")
	}
	f.m.Report(j, Applied)
	f.insert("hub1", "frames", v(1, 4), nil)
	if got := versions(f.take()); !slices.Equal(got, []bundle.Version{v(1, 4)}) {
		t.Fatalf("after the write, a frame at the written version: job %v", got)
	}
}

// TestSlotsSettle: a slot holds an activity of its own only while it has
// something to do or to report (issue 22: memory per hub). Once its bundle
// is written, conflated or dropped it is back on the shared idle one,
// which nothing ever writes; a failure it must report keeps its own.
func TestSlotsSettle(t *testing.T) {
	f := newFixture(t)
	own := func(hub string) []string {
		t.Helper()
		var out []string
		for _, s := range f.m.unit(hub).slots {
			if s.activity != &idle {
				out = append(out, s.info.Name)
			}
		}
		return out
	}
	if got := own("hub1"); got != nil {
		t.Fatalf("a new unit's slots with an activity: %v", got)
	}
	f.insert("hub1", "managedclusters", v(1, 1), nil)
	f.insert("hub1", "managedclusters", v(1, 2), nil)
	if got := own("hub1"); !slices.Equal(got, []string{"managedclusters"}) {
		t.Fatalf("holding a bundle: activities %v, want [managedclusters]", got)
	}
	j := f.take()
	f.m.Report(j, Applied)
	if got := own("hub1"); got != nil {
		t.Fatalf("after the write: activities %v, want none", got)
	}
	f.insert("hub1", "managedclusters", v(1, 2), nil) // stale: nothing taken
	if got := own("hub1"); got != nil {
		t.Fatalf("after a stale bundle: activities %v, want none", got)
	}

	f.insert("hub2", "managedclusters", v(1, 1), nil)
	j = f.take()
	j.Err = errors.New("connection refused")
	f.m.Report(j, Permanent)
	if got := own("hub2"); !slices.Equal(got, []string{"managedclusters"}) {
		t.Fatalf("after a failure: activities %v, want [managedclusters] (its last error)", got)
	}

	f.insert("hub3", "managedclusters", v(1, 1), nil)
	f.m.DropPartition("t", 0)
	if got := own("hub3"); got != nil {
		t.Fatalf("after its partition was dropped: activities %v, want none", got)
	}
	checkSettled(t, f.m)
}

// checkSettled fails t if the shared idle activity was written, or if a
// unit's slot keeps an activity with nothing in it worth keeping.
func checkSettled(t *testing.T, m *Manager) {
	t.Helper()
	if !reflect.ValueOf(idle).IsZero() {
		t.Fatalf("the shared idle activity was written: %+v", idle)
	}
	m.mu.Lock()
	units := slices.Collect(maps.Values(m.units))
	m.mu.Unlock()
	for _, u := range units {
		u.mu.Lock()
		for i := range u.slots {
			s := u.slots[i] // a copy: settle must not change the unit
			if a := s.activity; a != &idle {
				s.settle()
				if s.activity == &idle {
					t.Errorf("hub %s type %s keeps an activity with nothing in it: %+v", u.Hub, s.info.Name, *a)
				}
			}
		}
		u.mu.Unlock()
	}
}
