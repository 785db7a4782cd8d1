package committer

import (
	"context"
	"testing"

	"github.com/stbridge/stb/pkg/db/dbtest"
)

func TestPGStoreRoundTrip(t *testing.T) {
	pool, _ := dbtest.New(t)
	s := NewPGStore(pool)
	ctx := context.Background()
	if _, ok, err := s.Load(ctx, "status", 3); err != nil || ok {
		t.Fatalf("empty store: ok=%v err=%v, want nothing stored", ok, err)
	}
	if err := s.Save(ctx, []Position{{"status", 3, 42, "c1"}, {"status", 4, 7, "c1"}}); err != nil {
		t.Fatal(err)
	}
	if err := s.Save(ctx, []Position{{"status", 3, 50, "c1"}}); err != nil {
		t.Fatal(err)
	}
	p, ok, err := s.Load(ctx, "status", 3)
	if err != nil || !ok || p != (Position{"status", 3, 50, "c1"}) {
		t.Fatalf("loaded %+v ok=%v err=%v, want status/3 at 50", p, ok, err)
	}
	var name string
	if err := pool.QueryRow(ctx, `SELECT name FROM status.transport WHERE payload->>'offset' = '7'`).Scan(&name); err != nil || name != "status@4" {
		t.Fatalf("row name %q (%v), want status@4", name, err)
	}
}
