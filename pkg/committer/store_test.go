package committer

import (
	"context"
	"errors"
	"testing"
	"time"

	"github.com/prometheus/client_golang/prometheus/testutil"
	"go.uber.org/zap"

	"github.com/stbridge/stb/pkg/bundle"
	"github.com/stbridge/stb/pkg/db/dbtest"
)

func TestPGStoreRoundTrip(t *testing.T) {
	pool, _ := dbtest.New(t)
	s := NewPGStore(pool, "bridge-a")
	ctx := context.Background()
	if _, ok, err := s.Claim(ctx, "status", 3); err != nil || ok {
		t.Fatalf("empty store: ok=%v err=%v, want nothing stored", ok, err)
	}
	// status/4 was never loaded: Save claims it on the way.
	if err := s.Save(ctx, []Position{{"status", 3, 42, "c1"}, {"status", 4, 7, "c1"}}); err != nil {
		t.Fatal(err)
	}
	if err := s.Save(ctx, []Position{{"status", 3, 50, "c1"}}); err != nil {
		t.Fatal(err)
	}
	p, ok, err := s.Claim(ctx, "status", 3)
	if err != nil || !ok || p != (Position{"status", 3, 50, "c1"}) {
		t.Fatalf("loaded %+v ok=%v err=%v, want status/3 at 50", p, ok, err)
	}
	var name, owner string
	if err := pool.QueryRow(ctx, `SELECT t.name, o.owner FROM status.transport AS t JOIN stb.partition_owners AS o USING (name) WHERE t.payload->>'offset' = '7'`).Scan(&name, &owner); err != nil || name != "status@4" || owner != "bridge-a" {
		t.Fatalf("row %q of %q (%v), want status@4 of bridge-a", name, owner, err)
	}
}

// TestPGStoreGuard: once another bridge has claimed a partition, the one
// that had it can no longer move its position (docs/design.md, Scaling out), until it
// claims the partition again.
func TestPGStoreGuard(t *testing.T) {
	pool, _ := dbtest.New(t)
	ctx := context.Background()
	a, b := NewPGStore(pool, "bridge-a"), NewPGStore(pool, "bridge-b")
	stored := func() int64 {
		t.Helper()
		var off int64
		if err := pool.QueryRow(ctx, `SELECT (payload->>'offset')::bigint FROM status.transport WHERE name = 'status@0'`).Scan(&off); err != nil {
			t.Fatal(err)
		}
		return off
	}
	mustClaim := func(s *PGStore, want int64) {
		t.Helper()
		p, ok, err := s.Claim(ctx, "status", 0)
		if err != nil || !ok || p.Offset != want {
			t.Fatalf("%s loaded %+v ok=%v err=%v, want offset %d", s.owner, p, ok, err, want)
		}
	}
	if _, _, err := a.Claim(ctx, "status", 0); err != nil {
		t.Fatal(err)
	}
	if err := a.Save(ctx, []Position{{"status", 0, 10, "c"}}); err != nil {
		t.Fatal(err)
	}
	mustClaim(b, 10) // b is assigned the partition and claims it

	err := a.Save(ctx, []Position{{"status", 0, 20, "c"}, {"status", 1, 5, "c"}})
	var lost *LostError
	if !errors.As(err, &lost) || len(lost.Lost) != 1 || lost.Lost[0] != (Position{"status", 0, 20, "c"}) {
		t.Fatalf("save by the bridge that lost status/0: %v, want a LostError for status/0 only", err)
	}
	if got := stored(); got != 10 {
		t.Fatalf("status/0 at %d after the refused save, want 10", got)
	}
	if err := b.Save(ctx, []Position{{"status", 0, 15, "c"}}); err != nil || stored() != 15 {
		t.Fatalf("save by the new owner: %v, stored %d; want 15", err, stored())
	}

	mustClaim(a, 15) // the partition comes back to a
	if err := a.Save(ctx, []Position{{"status", 0, 30, "c"}}); err != nil || stored() != 30 {
		t.Fatalf("save after claiming again: %v, stored %d; want 30", err, stored())
	}
	if err := b.Save(ctx, []Position{{"status", 0, 40, "c"}}); !errors.As(err, &lost) || stored() != 30 {
		t.Fatalf("save by b after a claimed again: %v, stored %d; want a LostError and 30", err, stored())
	}
}

// TestCommitterDropsPartitionsClaimedElsewhere: a commit that finds one of
// its partitions claimed by another bridge stores the others, reports no
// error, stops committing that partition and counts it as lost.
func TestCommitterDropsPartitionsClaimedElsewhere(t *testing.T) {
	pool, _ := dbtest.New(t)
	ctx := context.Background()
	storeA := NewPGStore(pool, "bridge-a")
	c, err := New(Config{Interval: time.Hour}, Deps{Store: storeA, Logger: zap.NewNop()})
	if err != nil {
		t.Fatal(err)
	}
	c.SetClusterID("c")
	var parts []*Partition
	for i := range int32(2) {
		if _, _, err := storeA.Claim(ctx, "status", i); err != nil {
			t.Fatal(err)
		}
		parts = append(parts, c.Assign("status", i, 0))
	}
	advance := func(off int64) {
		for _, p := range parts {
			p.Read(off)
			p.Done(bundle.Origin{Offset: off})
		}
	}
	advance(0)
	if err := c.Commit(ctx); err != nil {
		t.Fatal(err)
	}
	if _, _, err := NewPGStore(pool, "bridge-b").Claim(ctx, "status", 1); err != nil {
		t.Fatal(err)
	}
	advance(1)
	if err := c.Commit(ctx); err != nil || c.Err() != nil {
		t.Fatalf("commit with a partition claimed elsewhere: %v / %v, want no error", err, c.Err())
	}
	if tracked(c, "status", 1) {
		t.Error("status/1 still tracked after another bridge claimed it")
	}
	if !tracked(c, "status", 0) {
		t.Error("status/0 dropped")
	}
	if got0, got1 := parts[0].Committed(), parts[1].Committed(); got0 != 2 || got1 != 1 {
		t.Errorf("committed positions %d and %d, want status/0 at 2 and status/1 left at 1", got0, got1)
	}
	if got := testutil.ToFloat64(c.metrics.commits.WithLabelValues("lost")); got != 1 {
		t.Errorf("stb_committer_commits_total{result=\"lost\"} = %v, want 1", got)
	}
	var off int64
	if err := pool.QueryRow(ctx, `SELECT (payload->>'offset')::bigint FROM status.transport WHERE name = 'status@1'`).Scan(&off); err != nil || off != 1 {
		t.Errorf("status/1 stored at %d (%v), want 1, from before the claim", off, err)
	}
}
