package committer

import (
	"context"
	"testing"
	"time"

	"go.uber.org/zap"

	"github.com/stbridge/stb/conflation"
	"github.com/stbridge/stb/pkg/bundle"
)

// TestNoCommitAfterRevoke is the regression test of TestScaleOut's lost
// policy events ("Edges, round 3"). A periodic Commit lists the partitions
// and then waits for the commit in progress: the revocation's final one.
// The reader then drops the partition's held bundles (which releases their
// offsets) and the write in flight finishes. The periodic Commit went on
// with its list and stored the partition's position as it now was, past
// the dropped bundles; the new owner resumed there and never read them: a
// stream type's events (policyevents) were lost for good. Once revoked,
// a partition's position must never be stored again.
func TestNoCommitAfterRevoke(t *testing.T) {
	m, err := conflation.NewManager(conflation.Config{Types: []bundle.TypeInfo{{Name: "policyevents", Kind: bundle.Stream}}})
	if err != nil {
		t.Fatal(err)
	}
	store := &memStore{}
	c, err := New(Config{Interval: time.Hour}, Deps{Store: store, Logger: zap.NewNop()})
	if err != nil {
		t.Fatal(err)
	}
	p := c.Assign("status", 1, 99)
	event := func(off int64, hub string, gen uint64) {
		b := &bundle.Bundle{Hub: hub, Type: "policyevents", Version: bundle.Version{Incarnation: 1, Generation: gen},
			Origin: bundle.Origin{Topic: "status", Partition: 1, Offset: off}}
		p.Read(off)
		b.Track(p)
		m.Insert(b)
	}
	ctx := context.Background()

	take := func() *conflation.Job {
		t.Helper()
		job, err := mustPop(t, m).Next()
		if err != nil {
			t.Fatal(err)
		}
		return job
	}
	event(99, "hub-a", 1)
	m.Report(take(), conflation.Applied) // written
	event(100, "hub-a", 2)
	job := take()          // in flight: a worker writes it
	event(101, "hub-a", 3) // held: no worker has taken them
	event(102, "hub-b", 1)

	listed := c.Partitions() // a periodic Commit lists the partitions ...
	if err := c.Revoke(ctx, "status", 1); err != nil {
		t.Fatal(err)
	}
	final := p.Committed()
	if final != 100 {
		t.Fatalf("final commit stored %d, want 100 (the write in flight)", final)
	}
	end := m.DropPartition("status", 1) // the reader drops what is held
	m.Report(job, conflation.Applied)   // and waits for the write in flight
	end()
	if off, _ := p.Position(); off != 103 {
		t.Fatalf("after the drop the partition's position is %d, want 103 (nothing outstanding)", off)
	}

	// ... and goes on with its list once the final commit is done.
	if err := c.commit(ctx, listed, false); err != nil {
		t.Fatal(err)
	}
	if err := c.Commit(ctx); err != nil {
		t.Fatal(err)
	}
	store.mu.Lock()
	defer store.mu.Unlock()
	last := int64(-1)
	for _, save := range store.saves {
		for _, ps := range save {
			if ps.Partition == 1 {
				last = ps.Offset
			}
		}
	}
	if last != final {
		t.Fatalf("status@1 stored at %d after its final commit at %d: the new owner would resume past the dropped events at 101 and 102 (saves %v)",
			last, final, store.saves)
	}
}
