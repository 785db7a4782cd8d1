package hubs

import (
	"context"
	"maps"
	"slices"
	"testing"
	"time"

	"github.com/prometheus/client_golang/prometheus"

	"github.com/stbridge/stb/pkg/bundle"
	"github.com/stbridge/stb/pkg/db"
	"github.com/stbridge/stb/pkg/db/dbtest"
)

// TestFenceEveryType: after a delete, the database holds tombstones only
// for the types the hub had written; a bridge's memory fences every type
// it knows at the newest tombstone, leaves the rows it loaded as they are
// and fences nothing when there is no tombstone.
func TestFenceEveryType(t *testing.T) {
	tomb := func(inc uint64) bundle.Version {
		return bundle.Version{Incarnation: inc, Generation: db.TombstoneGeneration}
	}
	row := func(typ string, v bundle.Version) db.StoredVersion {
		return db.StoredVersion{Hub: "hub-a", Type: typ, Version: v}
	}
	types := []string{"heartbeat", "managedclusters", "policyevents", "gh.event.managedcluster"}
	for _, tc := range []struct {
		name     string
		versions []db.StoredVersion
		want     map[string]bundle.Version
	}{
		{"tombstones of two types", []db.StoredVersion{row("heartbeat", tomb(3)), row("managedclusters", tomb(3))},
			map[string]bundle.Version{"heartbeat": tomb(3), "managedclusters": tomb(3), "policyevents": tomb(3), "gh.event.managedcluster": tomb(3)}},
		{"the hub came back for one type", []db.StoredVersion{row("heartbeat", bundle.Version{Incarnation: 4, Generation: 1}), row("managedclusters", tomb(3))},
			map[string]bundle.Version{"heartbeat": {Incarnation: 4, Generation: 1}, "managedclusters": tomb(3), "policyevents": tomb(3), "gh.event.managedcluster": tomb(3)}},
		{"no tombstone", []db.StoredVersion{row("heartbeat", bundle.Version{Incarnation: 4, Generation: 1})},
			map[string]bundle.Version{"heartbeat": {Incarnation: 4, Generation: 1}}},
		{"no versions", nil, map[string]bundle.Version{}},
	} {
		t.Run(tc.name, func(t *testing.T) {
			in := slices.Clone(tc.versions)
			got := map[string]bundle.Version{}
			for _, v := range fenceEveryType(in, types) {
				if v.Hub != "hub-a" {
					t.Errorf("%s for hub %q", v.Type, v.Hub)
				}
				got[v.Type] = v.Version
			}
			if !maps.Equal(got, tc.want) {
				t.Fatalf("got %v, want %v", got, tc.want)
			}
			if len(in) != len(tc.versions) || (len(in) > 0 && in[0].Version != tc.versions[0].Version) {
				t.Fatalf("the versions passed in changed: %v", in)
			}
		})
	}
}

// TestSweepHasADeadline: a database that hangs (here a lock another
// transaction holds on stb.hubs, which the sweep updates) fails the
// sweep after the pass timeout, to be retried at the next one, instead of
// holding the lifecycle's goroutine until the database answers.
func TestSweepHasADeadline(t *testing.T) {
	pool, url := dbtest.New(t)
	ctx := context.Background()
	h, err := New(DefaultConfig(), Deps{Pool: pool, DatabaseURL: url, Registerer: prometheus.NewRegistry()})
	if err != nil {
		t.Fatal(err)
	}
	h.passTimeout = 200 * time.Millisecond
	blocker, err := pool.Begin(ctx)
	if err != nil {
		t.Fatal(err)
	}
	defer func() { _ = blocker.Rollback(ctx) }()
	if _, err := blocker.Exec(ctx, `LOCK TABLE stb.hubs IN ACCESS EXCLUSIVE MODE`); err != nil {
		t.Fatal(err)
	}
	start := time.Now()
	err = h.bounded(ctx, h.sweep)
	if took := time.Since(start); err == nil || took > 5*time.Second {
		t.Fatalf("a sweep against a locked table returned %v after %v, want an error after about %v", err, took, h.passTimeout)
	}
	if err := blocker.Rollback(ctx); err != nil {
		t.Fatal(err)
	}
	if err := h.bounded(ctx, h.sweep); err != nil {
		t.Fatalf("the sweep after the lock: %v", err)
	}
}
