package hubs

import (
	"errors"
	"fmt"
	"testing"
	"time"

	"github.com/confluentinc/confluent-kafka-go/v2/kafka"
	"github.com/prometheus/client_golang/prometheus"

	"github.com/stbridge/stb/conflation"
	"github.com/stbridge/stb/dbsyncers"
	wf "github.com/stbridge/stb/dbsyncers/work"
	"github.com/stbridge/stb/internal/profiles"
	"github.com/stbridge/stb/pkg/bundle"
	"github.com/stbridge/stb/pkg/db"
	"github.com/stbridge/stb/pkg/db/dbtest"
	simwork "github.com/stbridge/stb/pkg/sim/work"
	"github.com/stbridge/stb/pkg/transport"
)

// managerMemory is a bridge's memory reduced to its conflation units.
type managerMemory struct{ *conflation.Manager }

func (m managerMemory) Restore(versions []db.StoredVersion) {
	for _, v := range versions {
		m.Manager.Restore(v.Hub, v.Type, v.Version)
	}
}

// TestDeleteTakesAClusterBack: after a delete of a hub that is a cluster
// of the work profile and also sent STB's heartbeat, a bridge's memory
// fences the STB types at the tombstone, those the hub never sent too,
// and not work.status, whose version is a constant 0.0: the cluster's
// next status is taken. (Fenced at 0.max, as every type the bridge knew
// was, the cluster's statuses were dropped by the bridge for good.)
func TestDeleteTakesAClusterBack(t *testing.T) {
	pool, url := dbtest.New(t)
	ctx := t.Context()
	set, err := profiles.Parse([]string{profiles.STB, wf.Name})
	if err != nil {
		t.Fatal(err)
	}
	reg, err := set.Registry()
	if err != nil {
		t.Fatal(err)
	}
	rules := transport.Rules{TypePrefix: transport.DefaultTypePrefix, MaxBundleBytes: 1 << 20, Decoder: reg}
	at := time.Date(2026, 11, 26, 10, 0, 0, 0, time.UTC)
	status := func(offset int64) *bundle.Bundle {
		t.Helper()
		ev, _ := simwork.Status{Type: wf.UpdateRequest, ID: fmt.Sprint(offset), Cluster: "c1", Source: "maestro",
			ResourceID: fmt.Sprint("r", offset), Generation: 1, SequenceID: wf.SequenceID(at, offset), Time: at}.Event()
		msg, err := simwork.Message(ev, simwork.DefaultTopic, false)
		if err != nil {
			t.Fatal(err)
		}
		msg.TopicPartition.Partition, msg.TopicPartition.Offset = 0, kafka.Offset(offset)
		b, rej := transport.DecodeFamilies(msg, rules, set.Families(), at)
		if rej != nil {
			t.Fatal(rej)
		}
		return b
	}
	if applied, err := reg.Write(ctx, pool, [][]*bundle.Bundle{{status(1)}}); err != nil || !applied[0] {
		t.Fatalf("first status: %v, %v", applied, err)
	}
	if _, err := pool.Exec(ctx, `INSERT INTO stb.bundle_versions (hub, bundle_type, incarnation, generation)
		VALUES ('c1', 'heartbeat', 3, 5)`); err != nil {
		t.Fatal(err)
	}
	mgr, err := conflation.NewManager(conflation.Config{Types: reg.Types(), Merge: reg.Mergers(), Decode: reg.Decode})
	if err != nil {
		t.Fatal(err)
	}
	mem := managerMemory{mgr}
	stored, err := db.LoadHubVersions(ctx, pool, "c1")
	if err != nil || len(stored) != 2 {
		t.Fatalf("stored versions %v, %v; want heartbeat and work.status", stored, err)
	}
	mem.Restore(stored) // as a bridge does when it starts
	last, err := db.LastHubRequest(ctx, pool)
	if err != nil {
		t.Fatal(err)
	}
	h, err := New(DefaultConfig(), Deps{Pool: pool, DatabaseURL: url, Memory: mem, After: last,
		Types: profiles.HubFencedTypes(), Scope: profiles.HubScope(), Registerer: prometheus.NewRegistry()})
	if err != nil {
		t.Fatal(err)
	}
	res, err := db.ApplyHubRequest(ctx, pool, db.HubRequest{Hub: "c1", Action: db.DeleteHub, Scope: profiles.HubScope()})
	if err != nil || res.Tombstone != 3 || res.Versions != 1 || res.KeyFenced != 1 || res.Removed != 1 {
		t.Fatalf("delete = %+v, %v; want the heartbeat's tombstone at 3, work.status forgotten, 1 row removed", res, err)
	}
	if err := h.applyRequests(ctx); err != nil {
		t.Fatal(err)
	}

	// Bundles of the deleted incarnation, of a type the hub sent and of
	// one it never sent, are fenced.
	for _, typ := range []string{"heartbeat", "managedclusters"} {
		mgr.Insert(&bundle.Bundle{Hub: "c1", Type: typ, Version: bundle.Version{Incarnation: 3, Generation: 9}, Raw: []byte(`{}`)})
	}
	if n := mgr.Queue().Len(); n != 0 {
		t.Fatalf("bundles of the deleted incarnation made %d units ready, want none", n)
	}
	mgr.Insert(status(2))
	u := mgr.Queue().TryPop()
	if u == nil {
		t.Fatal("the cluster's next status after the delete was dropped: work.status is fenced in memory")
	}
	job, err := u.Next()
	if err != nil || job.Type != wf.BundleType {
		t.Fatalf("next job %+v, %v; want the work status", job, err)
	}
	applied, err := reg.Write(ctx, pool, [][]*bundle.Bundle{job.Bundles})
	if err != nil && !errors.Is(err, dbsyncers.ErrStale) {
		t.Fatal(err)
	}
	if err != nil || !applied[0] {
		t.Fatal("the cluster's next status after the delete was refused by stb.bundle_versions")
	}
}
