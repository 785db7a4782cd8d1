package committer

import (
	"context"
	"errors"
	"sync"
	"testing"
	"time"

	"go.uber.org/zap"

	"github.com/stbridge/stb/conflation"
	"github.com/stbridge/stb/pkg/bundle"
)

var types = []bundle.TypeInfo{
	{Name: "heartbeat", Kind: bundle.Complete},
	{Name: "managedclusters", Kind: bundle.Complete},
}

// feed reads offset off into the partition as a bundle of hub/typ/gen and
// inserts it, the way the transport reader does.
func feed(m *conflation.Manager, p *Partition, off int64, hub, typ string, gen uint64) {
	b := &bundle.Bundle{Hub: hub, Type: typ, Version: bundle.Version{Incarnation: 1, Generation: gen},
		Origin: bundle.Origin{Topic: p.Topic, Partition: p.Partition, Offset: off}}
	p.Read(off)
	b.Track(p)
	m.Insert(b)
}

func pos(t *testing.T, p *Partition) int64 {
	t.Helper()
	off, ok := p.Position()
	if !ok {
		t.Fatal("no position")
	}
	return off
}

func TestPositionFollowsHeldBundles(t *testing.T) {
	m, err := conflation.NewManager(conflation.Config{Types: types})
	if err != nil {
		t.Fatal(err)
	}
	c, err := New(Config{Interval: time.Second}, Deps{Store: &memStore{}, Logger: zap.NewNop()})
	if err != nil {
		t.Fatal(err)
	}
	p := c.Assign("status", 0, 100)
	if got := pos(t, p); got != 100 {
		t.Fatalf("none read: position %d, want the start 100", got)
	}

	feed(m, p, 100, "a", "managedclusters", 1)
	feed(m, p, 101, "b", "managedclusters", 1)
	if got := pos(t, p); got != 100 {
		t.Fatalf("held: position %d, want 100 (lowest held)", got)
	}

	// a's bundle goes in flight; a newer one for a replaces nothing yet
	// (in-flight bundles are not conflated away).
	ua := mustPop(t, m)
	ja, _ := ua.Next()
	feed(m, p, 102, "a", "managedclusters", 2)
	if got := pos(t, p); got != 100 {
		t.Fatalf("in flight: position %d, want 100", got)
	}
	// b's bundle is conflated away by a newer one: it no longer pins.
	feed(m, p, 103, "b", "managedclusters", 2)
	m.Report(ja, conflation.Applied)
	// 100 written, 101 conflated; 102 and 103 held.
	if got := pos(t, p); got != 102 {
		t.Fatalf("after write and conflation: position %d, want 102", got)
	}
	// Stale bundle: done at once, does not pin.
	feed(m, p, 104, "b", "managedclusters", 1)
	if got := pos(t, p); got != 102 {
		t.Fatalf("stale: position %d, want 102", got)
	}
	for m.Queue().Len() > 0 {
		u := mustPop(t, m)
		j, err := u.Next()
		if err != nil {
			continue
		}
		m.Report(j, conflation.Applied)
	}
	if got := pos(t, p); got != 105 {
		t.Fatalf("none held: position %d, want last read + 1 = 105", got)
	}
}

func mustPop(t *testing.T, m *conflation.Manager) *conflation.Unit {
	t.Helper()
	ctx, cancel := context.WithTimeout(context.Background(), time.Second)
	defer cancel()
	u, err := m.Queue().Pop(ctx)
	if err != nil {
		t.Fatal("no ready unit")
	}
	return u
}

func TestCommitStoresOnlyMovedPositions(t *testing.T) {
	store := &memStore{}
	c, err := New(Config{Interval: time.Second}, Deps{Store: store, Logger: zap.NewNop()})
	if err != nil {
		t.Fatal(err)
	}
	c.SetClusterID("cid")
	p0 := c.Assign("status", 0, -1)
	p1 := c.Assign("status", 1, 7)
	ctx := context.Background()
	if err := c.Commit(ctx); err != nil {
		t.Fatal(err)
	}
	if len(store.saves) != 0 {
		t.Fatalf("saved %v with nothing moved", store.saves)
	}
	p0.Read(0)
	p0.Read(1)
	p0.Done(bundle.Origin{Offset: 1})
	p1.Read(7)
	p1.Done(bundle.Origin{Offset: 7})
	if err := c.Commit(ctx); err != nil {
		t.Fatal(err)
	}
	want := []Position{{"status", 0, 0, "cid"}, {"status", 1, 8, "cid"}}
	if len(store.saves) != 1 || !equal(store.saves[0], want) {
		t.Fatalf("saved %v, want %v", store.saves, want)
	}
	// p0 offset 0 is still outstanding: 0 was already... not committed
	// beyond its start, so it moved from -1 to 0. Now nothing moves.
	if err := c.Commit(ctx); err != nil {
		t.Fatal(err)
	}
	if len(store.saves) != 1 {
		t.Fatalf("saved again without movement: %v", store.saves)
	}
	// A failing store keeps the position pending and reports the error.
	p0.Done(bundle.Origin{Offset: 0})
	store.fail = errors.New("database down")
	if err := c.Commit(ctx); err == nil || c.Err() == nil {
		t.Fatal("commit with a failing store succeeded")
	}
	store.fail = nil
	if err := c.Revoke(ctx, "status", 0); err != nil {
		t.Fatal(err)
	}
	if last := store.saves[len(store.saves)-1]; !equal(last, []Position{{"status", 0, 2, "cid"}}) {
		t.Fatalf("revoke saved %v, want status/0 at 2", last)
	}
	if tracked(c, "status", 0) {
		t.Fatal("revoked partition still tracked")
	}
	if c.Err() != nil {
		t.Fatalf("error not cleared after a good commit: %v", c.Err())
	}
}

// Done for an offset the partition does not hold (already done, or from
// before a reassignment) changes nothing.
func TestDoneUnknownOffsetIgnored(t *testing.T) {
	p := newPartition("t", 0, 5)
	p.Read(5)
	p.Read(6)
	p.Done(bundle.Origin{Offset: 3})
	p.Done(bundle.Origin{Offset: 6})
	p.Done(bundle.Origin{Offset: 6})
	if off, _ := p.Position(); off != 5 {
		t.Fatalf("position %d, want 5", off)
	}
	p.Done(bundle.Origin{Offset: 5})
	if off, _ := p.Position(); off != 7 {
		t.Fatalf("position %d, want 7", off)
	}
}

// Many offsets finishing in random order from many goroutines: the
// position ends at last read + 1 and never moved backwards on the way.
func TestPartitionConcurrentDone(t *testing.T) {
	p := newPartition("t", 0, 0)
	const n = 20000
	for i := int64(0); i < n; i++ {
		p.Read(i)
	}
	var wg sync.WaitGroup
	stop := make(chan struct{})
	go func() {
		last := int64(0)
		for {
			select {
			case <-stop:
				return
			default:
			}
			off, _ := p.Position()
			if off < last {
				t.Errorf("position went back from %d to %d", last, off)
				return
			}
			last = off
		}
	}()
	for w := int64(0); w < 4; w++ {
		wg.Add(1)
		go func() {
			defer wg.Done()
			for i := n - 1 - w; i >= 0; i -= 4 {
				p.Done(bundle.Origin{Offset: i})
			}
		}()
	}
	wg.Wait()
	close(stop)
	if off, _ := p.Position(); off != n {
		t.Fatalf("position %d, want %d", off, n)
	}
}

type memStore struct {
	mu    sync.Mutex
	saves [][]Position
	fail  error
}

func (s *memStore) Save(_ context.Context, ps []Position) error {
	s.mu.Lock()
	defer s.mu.Unlock()
	if s.fail != nil {
		return s.fail
	}
	s.saves = append(s.saves, append([]Position(nil), ps...))
	return nil
}

func equal(a, b []Position) bool {
	if len(a) != len(b) {
		return false
	}
	for i := range a {
		if a[i] != b[i] {
			return false
		}
	}
	return true
}

func TestPartitionIdle(t *testing.T) {
	c, err := New(Config{Interval: time.Second}, Deps{Store: &memStore{}, Logger: zap.NewNop()})
	if err != nil {
		t.Fatal(err)
	}
	p := c.Assign("status", 0, 0)
	select {
	case <-p.Idle():
	default:
		t.Fatal("Idle of a partition with nothing read is not closed")
	}
	p.Read(0)
	p.Read(1)
	idle := p.Idle()
	p.Done(bundle.Origin{Offset: 1})
	select {
	case <-idle:
		t.Fatal("Idle closed while offset 0 is outstanding")
	default:
	}
	p.Done(bundle.Origin{Offset: 0})
	select {
	case <-idle:
	default:
		t.Fatal("Idle not closed once nothing is outstanding")
	}
}

// tracked reports whether the committer tracks the partition.
func tracked(c *Committer, topic string, partition int32) bool {
	for _, p := range c.Partitions() {
		if p.Topic == topic && p.Partition == partition {
			return true
		}
	}
	return false
}
