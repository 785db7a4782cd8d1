// Deleting a cluster of the work profile while the bridge runs.

package test

import (
	"context"
	"fmt"
	"testing"
	"time"

	"go.uber.org/zap"

	wf "github.com/stbridge/stb/dbsyncers/work"
	simwork "github.com/stbridge/stb/pkg/sim/work"
	"github.com/stbridge/stb/pkg/transport"
)

// TestWorkClusterDelete: `stb hub delete` of a cluster of the work
// profile, on a running bridge, removes the cluster's rows of
// work.resource_status and leaves another cluster's; once the bridge has
// applied the request, the cluster's next status is written. (Before,
// the rows stayed, and the delete left a tombstone at the family's
// constant version 0.0 that refused every later status of the cluster,
// in the database and in the bridge's memory.)
func TestWorkClusterDelete(t *testing.T) {
	e := newEnv(t, 2)
	e.createTopic(simwork.DefaultTopic, 2)
	b := e.startBridge(workBridgeArgs...)
	pub, err := transport.NewPublisher(transport.PublisherConfig{Brokers: e.brokers}, zap.NewNop())
	if err != nil {
		t.Fatal(err)
	}
	defer pub.Close()
	ctx := context.Background()
	seq := int64(0)
	publish := func(cluster, id string) {
		t.Helper()
		seq++
		now := time.Now()
		ev, _ := simwork.Status{Type: wf.UpdateRequest, ID: fmt.Sprint("ev-", seq), Cluster: cluster, Source: "maestro",
			ResourceID: id, Generation: 1, SequenceID: wf.SequenceID(now, seq), Time: now}.Event()
		msg, err := simwork.Message(ev, simwork.DefaultTopic, false)
		if err != nil {
			t.Fatal(err)
		}
		if err := pub.PublishMessage(ctx, msg); err != nil {
			t.Fatal(err)
		}
		if err := pub.Flush(ctx); err != nil {
			t.Fatal(err)
		}
	}
	rows := func(cluster string) int {
		t.Helper()
		var n int
		if err := e.pool.QueryRow(ctx, `SELECT count(*) FROM work.resource_status WHERE cluster = $1`, cluster).Scan(&n); err != nil {
			t.Fatal(err)
		}
		return n
	}
	waitRows := func(cluster string, want int, what string) {
		t.Helper()
		deadline := time.Now().Add(time.Minute)
		for rows(cluster) != want {
			if time.Now().After(deadline) {
				t.Fatalf("%s: %s has %d rows, want %d", what, cluster, rows(cluster), want)
			}
			time.Sleep(100 * time.Millisecond)
		}
	}
	for _, id := range []string{"r1", "r2", "r3"} {
		publish("work-c1", "c1-"+id)
	}
	publish("work-c2", "c2-r1")
	waitRows("work-c1", 3, "before the delete")
	waitRows("work-c2", 1, "before the delete")

	out, err := e.stb("hub", "delete", "work-c1", "--database-url", e.dbURL)
	if err != nil {
		t.Fatalf("stb hub delete: %v\n%s", err, out)
	}
	t.Logf("%s", out)
	if n := rows("work-c1"); n != 0 {
		t.Errorf("the deleted cluster keeps %d rows", n)
	}
	if n := rows("work-c2"); n != 1 {
		t.Errorf("the other cluster has %d rows, want 1", n)
	}
	deadline := time.Now().Add(30 * time.Second)
	for {
		m, err := b.scrape()
		if err == nil && m.sumWith("stb_hubs_requests_applied_total", "action", "delete") >= 1 {
			break
		}
		if time.Now().After(deadline) {
			t.Fatalf("the bridge never applied the delete (%v)", err)
		}
		time.Sleep(100 * time.Millisecond)
	}

	publish("work-c1", "c1-r4")
	waitRows("work-c1", 1, "the deleted cluster's next status")
	var state string
	if err := e.pool.QueryRow(ctx, `SELECT state FROM stb.hubs WHERE name = 'work-c1'`).Scan(&state); err != nil || state != "active" {
		t.Errorf("stb.hubs says %q (%v) after the cluster's next status, want active", state, err)
	}
	e.noDeadLetters()
	b.stop(30 * time.Second)
}
