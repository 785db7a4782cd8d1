package deadletter

import (
	"context"
	"testing"

	"github.com/stbridge/stb/pkg/db/dbtest"
)

// TestListPages: a walk through the letters with Limit and After returns
// each page in id order, never more than the page, and every letter once;
// Count says how many are left after a page. A letter marked replayed
// between two pages (it leaves a NotApplied filter) shifts nothing, as an
// OFFSET would.
func TestListPages(t *testing.T) {
	pool, _ := dbtest.New(t)
	ctx := context.Background()
	for i := range 7 {
		if _, err := NewWriter(pool).Write(ctx, letterAt(int64(i))); err != nil {
			t.Fatal(err)
		}
	}
	f := Filter{NotApplied: true, Limit: 3}
	var ids []int64
	for page := 0; ; page++ {
		rows, err := List(ctx, pool, f)
		if err != nil {
			t.Fatal(err)
		}
		if len(rows) > f.Limit {
			t.Fatalf("page %d: %d rows, more than the page of %d", page, len(rows), f.Limit)
		}
		if len(rows) == 0 {
			break
		}
		for _, r := range rows {
			if len(ids) > 0 && r.ID <= ids[len(ids)-1] {
				t.Fatalf("page %d: id %d after %d, want ascending ids", page, r.ID, ids[len(ids)-1])
			}
			ids = append(ids, r.ID)
		}
		f.After = rows[len(rows)-1].ID
		if page == 0 {
			if err := MarkReplayed(ctx, pool, rows[0].ID, ReplayApplied, "", nil); err != nil {
				t.Fatal(err)
			}
			left, err := Count(ctx, pool, Filter{NotApplied: true, After: f.After, Limit: 1})
			if err != nil || left != 4 {
				t.Fatalf("Count after the first page: %d, %v; want 4 (Limit ignored)", left, err)
			}
		}
	}
	if len(ids) != 7 {
		t.Fatalf("the walk saw %d letters (%v), want all 7", len(ids), ids)
	}
}
