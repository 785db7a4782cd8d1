package main

import (
	"context"
	"errors"
	"flag"
	"fmt"
	"strings"
	"testing"
	"time"

	"github.com/confluentinc/confluent-kafka-go/v2/kafka"

	"github.com/stbridge/stb/dbsyncers"
	wf "github.com/stbridge/stb/dbsyncers/work"
	"github.com/stbridge/stb/internal/profiles"
	"github.com/stbridge/stb/pkg/bundle"
	"github.com/stbridge/stb/pkg/db"
	"github.com/stbridge/stb/pkg/db/dbtest"
	simwork "github.com/stbridge/stb/pkg/sim/work"
	"github.com/stbridge/stb/pkg/transport"
)

// TestHubHelpTouchesNothing: --help (or -h) after the action prints the
// usage and connects to nothing; it used to be taken for the hub's name,
// and `stb hub delete --help` deleted a hub named "--help" (issue 21). A
// name that starts with '-' is refused; flags go before or after NAME.
func TestHubHelpTouchesNothing(t *testing.T) {
	unreachable := "postgres://stb@127.0.0.1:1/nothing?connect_timeout=1"
	ctx := context.Background()
	for _, args := range [][]string{
		{"delete", "--help"}, {"reset", "-h"}, {"--help"}, {"help"},
		{"delete", "--database-url", unreachable, "--help"},
		{"delete", "hub-a", "--help"},
	} {
		if err := hubCmd(ctx, args); !errors.Is(err, flag.ErrHelp) {
			t.Errorf("stb hub %s: %v, want the usage (flag.ErrHelp)", strings.Join(args, " "), err)
		}
	}
	for _, args := range [][]string{{"delete", "--", "-x"}, {"delete"}, {"remove", "hub-a"}} {
		err := hubCmd(ctx, args)
		if err == nil || !strings.Contains(err.Error(), "usage: stb hub") {
			t.Errorf("stb hub %s: %v, want a usage error", strings.Join(args, " "), err)
		}
	}
	// A real request, with the URL after NAME and before it: both reach
	// the (unreachable) database.
	for _, args := range [][]string{
		{"delete", "hub-a", "--database-url", unreachable},
		{"reset", "--database-url", unreachable, "hub-a"},
	} {
		err := hubCmd(ctx, args)
		if err == nil || errors.Is(err, flag.ErrHelp) || strings.Contains(err.Error(), "usage:") {
			t.Errorf("stb hub %s: %v, want a connection error", strings.Join(args, " "), err)
		}
	}
}

// TestDeadLettersHelp: `stb deadletters --help` prints the usage instead of
// "unknown deadletters command".
func TestDeadLettersHelp(t *testing.T) {
	for _, arg := range []string{"--help", "-h", "help"} {
		if err := deadLettersCmd(context.Background(), []string{arg}); !errors.Is(err, flag.ErrHelp) {
			t.Errorf("stb deadletters %s: %v, want the usage", arg, err)
		}
	}
}

// TestHubDeleteOfAWorkCluster is the regression test of deleting a
// cluster of the work profile, whose bundles carry no hub-level version
// (a constant 0.0) and whose rows keep their own fence: `stb hub delete`
// turned the cluster's work.status version into a tombstone at 0.max,
// which refused every later status of the cluster for good, and left its
// rows in work.resource_status, which has no hub column. The rows must go,
// the cluster's next status must be written (it comes back, as a hub of a
// newer incarnation does), and another cluster must keep its rows.
func TestHubDeleteOfAWorkCluster(t *testing.T) {
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
	var offset int64
	// write sends one status of resource id on cluster through the read
	// and write path a bridge runs, and reports whether it was applied.
	write := func(cluster, id string, seq int64) bool {
		t.Helper()
		offset++
		ev, _ := simwork.Status{Type: wf.UpdateRequest, ID: fmt.Sprintf("ev-%d", offset), Cluster: cluster, Source: "maestro",
			ResourceID: id, Generation: 1, SequenceID: wf.SequenceID(at, seq), Time: at}.Event()
		msg, err := simwork.Message(ev, simwork.DefaultTopic, false)
		if err != nil {
			t.Fatal(err)
		}
		msg.TopicPartition.Partition, msg.TopicPartition.Offset = 0, kafka.Offset(offset)
		b, rej := transport.DecodeProfiles(msg, rules, nil, set.Families(), at)
		if rej != nil {
			t.Fatalf("status of %s/%s rejected: %v", cluster, id, rej)
		}
		if err := reg.DecodeBundle(b); err != nil {
			t.Fatal(err)
		}
		applied, err := reg.Write(ctx, pool, [][]*bundle.Bundle{{b}})
		if errors.Is(err, dbsyncers.ErrStale) {
			return false
		}
		if err != nil {
			t.Fatal(err)
		}
		return applied[0]
	}
	rows := func(cluster string) int {
		t.Helper()
		var n int
		if err := pool.QueryRow(ctx, `SELECT count(*) FROM work.resource_status WHERE cluster = $1`, cluster).Scan(&n); err != nil {
			t.Fatal(err)
		}
		return n
	}
	for _, c := range []string{"c1", "c2"} {
		for i, id := range []string{"r1", "r2", "r3"} {
			if !write(c, c+"-"+id, int64(i)) {
				t.Fatalf("status %s of %s refused before any delete", id, c)
			}
		}
	}
	if err := hubCmd(ctx, []string{"delete", "c1", "--database-url", url}); err != nil {
		t.Fatal(err)
	}
	if n := rows("c1"); n != 0 {
		t.Errorf("the deleted cluster keeps %d rows of work.resource_status, want none", n)
	}
	if n := rows("c2"); n != 3 {
		t.Errorf("the other cluster has %d rows, want its 3", n)
	}
	if !write("c1", "c1-r4", 10) {
		t.Fatal("the deleted cluster's next status was refused by the (hub, type) fence: the cluster can never come back")
	}
	if n := rows("c1"); n != 1 {
		t.Errorf("after the cluster's next status, %d rows, want 1", n)
	}
	if s, ok, err := db.LoadHubStatus(ctx, pool, "c1"); err != nil || !ok || s.State != db.HubActive {
		t.Errorf("after the cluster's next status, stb.hubs says %+v (%v, %v), want active", s, ok, err)
	}
}

// TestHubCommandsRefuseAnUnknownHub: `stb hub delete no-such-hub` printed
// "deleted: 0 rows removed" and exited 0, recording a request for a name
// that matched nothing. A hub the database holds nothing of is refused,
// and nothing is recorded; a hub known only from the global hub's own
// tables (written by upstream's manager before STB) is still deleted, and
// a second delete of a deleted hub still succeeds (idempotent).
func TestHubCommandsRefuseAnUnknownHub(t *testing.T) {
	pool, url := dbtest.New(t)
	ctx := t.Context()
	requests := func() int {
		t.Helper()
		var n int
		if err := pool.QueryRow(ctx, `SELECT count(*) FROM stb.hub_requests`).Scan(&n); err != nil {
			t.Fatal(err)
		}
		return n
	}
	for _, action := range []string{"delete", "reset"} {
		err := hubCmd(ctx, []string{action, "no-such-hub", "--database-url", url})
		if !errors.Is(err, db.ErrUnknownHub) || !strings.Contains(err.Error(), `"no-such-hub"`) {
			t.Fatalf("stb hub %s no-such-hub: %v, want ErrUnknownHub naming it", action, err)
		}
	}
	if n := requests(); n != 0 {
		t.Fatalf("%d requests recorded for an unknown hub, want none", n)
	}
	// Known from upstream's table only.
	if _, err := pool.Exec(ctx, `INSERT INTO status.leaf_hubs (leaf_hub_name, cluster_id, payload) VALUES ('hub-up', gen_random_uuid(), '{}')`); err != nil {
		t.Fatal(err)
	}
	for range 2 { // the second finds the hub deleted: still fine
		if err := hubCmd(ctx, []string{"delete", "hub-up", "--database-url", url}); err != nil {
			t.Fatalf("stb hub delete of a hub in status.leaf_hubs: %v", err)
		}
	}
	if n := requests(); n != 2 {
		t.Fatalf("%d requests recorded, want the 2 deletes", n)
	}
}
