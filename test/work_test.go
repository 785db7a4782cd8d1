// The ManifestWork status family end to end: simulated work agents
// (pkg/sim/work) publish through the confluent client to kfake over TCP,
// and `stb run --profiles …,work` reads them with the real reader into
// PostgreSQL, across a crash and a restart of the bridge.

package test

import (
	"context"
	"encoding/json"
	"testing"
	"time"

	"github.com/twmb/franz-go/pkg/kgo"
	"go.uber.org/zap"

	wf "github.com/stbridge/stb/dbsyncers/work"
	simwork "github.com/stbridge/stb/pkg/sim/work"
	"github.com/stbridge/stb/pkg/transport"
)

// workBridgeArgs read STB's topic and the work agents' topic with the
// work profile on.
var workBridgeArgs = []string{"--kafka-topics", "status," + simwork.DefaultTopic, "--profiles", "stb,globalhub,work"}

// TestWorkAgents: statuses of 8 clusters' works from two sources, with
// agent restarts (every status again, as resync responses), duplicates,
// late copies of older statuses, deletes followed by late copies, half the
// clusters in structured mode, on 4 partitions keyed
// "<originalsource>@<cluster>" as sdk-go's Kafka transport keyed them.
// The bridge is killed after its first writes and started again: the
// database must end in the fence's state, with no dead letter. Then a
// status of a stored work from another cluster must be one
// cluster_mismatch dead letter, and a spec event, a status resync
// request and a heartbeat on the same topic nothing at all.
func TestWorkAgents(t *testing.T) {
	e := newEnv(t, 4)
	e.createTopic(simwork.DefaultTopic, 4)
	exp := e.simulate("work", "--agent", "work", "--hubs", "8", "--clusters", "12", "--generations", "8",
		"--restart-probability", "0.15", "--work-duplicate-probability", "0.1", "--work-late-probability", "0.15",
		"--work-delete-probability", "0.08", "--work-status-bytes", "3000", "--seed", "23")
	w, ok, err := simwork.ReadExpected(exp)
	if err != nil || !ok {
		t.Fatalf("expected state: %v, %v", ok, err)
	}
	for what, n := range map[string]int{"restarts": w.Restarts, "duplicates": w.Duplicates, "late copies": w.LateCopies,
		"deletes": w.Deletes, "structured events": w.Structured} {
		if n == 0 {
			t.Errorf("the simulation had no %s; pick another seed", what)
		}
	}

	b := e.startBridge(workBridgeArgs...)
	deadline := time.Now().Add(time.Minute)
	for {
		var n int
		if err := e.pool.QueryRow(context.Background(), `SELECT count(*) FROM work.resource_status`).Scan(&n); err != nil {
			t.Fatal(err)
		}
		if n > 0 {
			break
		}
		if time.Now().After(deadline) {
			t.Fatal("the bridge wrote no status within a minute")
		}
		time.Sleep(50 * time.Millisecond)
	}
	_ = b.cmd.Process.Kill() // a crash: what was not committed is read again
	<-b.done

	b = e.startBridge(workBridgeArgs...)
	e.waitVerified(exp, 2*time.Minute)
	e.noDeadLetters()

	// What the family skips, and a status from the wrong cluster.
	pub, err := transport.NewPublisher(transport.PublisherConfig{Brokers: e.brokers}, zap.NewNop())
	if err != nil {
		t.Fatal(err)
	}
	defer pub.Close()
	stored := w.Rows[len(w.Rows)-1]
	wrong := simwork.Status{Type: wf.UpdateRequest, ID: "wrong-cluster", Cluster: "work-999", Source: stored.Source,
		ResourceID: stored.ResourceID, Generation: stored.ResourceVersion + 1, SequenceID: wf.SequenceID(time.Now(), 1), Time: time.Now()}
	ev, _ := wrong.Event()
	for _, typ := range []string{wf.TypePrefix + "spec.create_request", wf.ResyncRequest, wf.HeartbeatType, ""} {
		if typ != "" {
			ev := ev.Clone()
			ev.SetType(typ)
			ev.SetID("skipped-" + typ)
			msg, err := simwork.Message(ev, simwork.DefaultTopic, false)
			if err != nil {
				t.Fatal(err)
			}
			if err := pub.PublishMessage(context.Background(), msg); err != nil {
				t.Fatal(err)
			}
			continue
		}
		msg, err := simwork.Message(ev, simwork.DefaultTopic, true)
		if err != nil {
			t.Fatal(err)
		}
		if err := pub.PublishMessage(context.Background(), msg); err != nil {
			t.Fatal(err)
		}
	}
	if err := pub.Flush(context.Background()); err != nil {
		t.Fatal(err)
	}
	deadline = time.Now().Add(time.Minute)
	for {
		rows, err := e.pool.Query(context.Background(), `SELECT reason, hub FROM stb.dead_letters`)
		if err != nil {
			t.Fatal(err)
		}
		var letters [][2]string
		for rows.Next() {
			var l [2]string
			if err := rows.Scan(&l[0], &l[1]); err != nil {
				t.Fatal(err)
			}
			letters = append(letters, l)
		}
		rows.Close()
		if len(letters) > 0 {
			if len(letters) != 1 || letters[0] != [2]string{"cluster_mismatch", "work-999"} {
				t.Errorf("dead letters %v, want one cluster_mismatch of work-999", letters)
			}
			break
		}
		if time.Now().After(deadline) {
			t.Fatal("no dead letter for a status from the wrong cluster")
		}
		time.Sleep(100 * time.Millisecond)
	}
	if ok, out := e.verify(exp); !ok {
		t.Errorf("after the wrong cluster's status:\n%s", out)
	}
	b.stop(30 * time.Second)

	// Status resync: `stb work resync` asks every cluster's agent, per
	// source, with the stored hashes of its live works; `stb run
	// --work-resync-topic` does it again at start-up.
	e.createTopic(wf.DefaultResyncTopic, 2)
	out, err := e.stb("work", "resync", "--kafka-brokers", e.brokers, "--database-url", e.dbURL)
	if err != nil {
		t.Fatalf("stb work resync: %v\n%s", err, out)
	}
	t.Logf("%s", out)
	live := 0
	for _, r := range w.Rows {
		if !r.Deleted {
			live++
		}
	}
	first := e.readResyncRequests(t, 0, live)
	b = e.startBridge(append(workBridgeArgs, "--work-resync-topic", wf.DefaultResyncTopic)...)
	e.readResyncRequests(t, first, live)
	b.stop(30 * time.Second)
}

// readResyncRequests reads the status resync requests on
// wf.DefaultResyncTopic after the first skip ones until they list hashes
// hashes, checks their shape and returns how many there were.
func (e *env) readResyncRequests(t *testing.T, skip, hashes int) int {
	t.Helper()
	cl, err := kgo.NewClient(kgo.SeedBrokers(e.brokers), kgo.ConsumeTopics(wf.DefaultResyncTopic),
		kgo.ConsumeResetOffset(kgo.NewOffset().AtStart()))
	if err != nil {
		t.Fatal(err)
	}
	defer cl.Close()
	ctx, cancel := context.WithTimeout(context.Background(), time.Minute)
	defer cancel()
	seen, listed := 0, 0
	for listed < hashes {
		fs := cl.PollFetches(ctx)
		if ctx.Err() != nil {
			t.Fatalf("%d hashes listed in %d requests after the first %d, want %d", listed, seen-skip, skip, hashes)
		}
		fs.EachRecord(func(r *kgo.Record) {
			seen++
			if seen <= skip {
				return
			}
			headers := map[string]string{}
			for _, h := range r.Headers {
				headers[h.Key] = string(h.Value)
			}
			var data struct {
				StatusHashes []struct {
					ResourceID string `json:"resourceID"`
					StatusHash string `json:"statusHash"`
				} `json:"statusHashes"`
			}
			if err := json.Unmarshal(r.Value, &data); err != nil {
				t.Fatal(err)
			}
			if headers["ce_type"] != wf.ResyncRequest || headers["ce_clustername"] == "" ||
				string(r.Key) != headers["ce_source"]+"@"+headers["ce_clustername"] ||
				len(data.StatusHashes) == 0 || len(data.StatusHashes) > wf.MaxResyncEntries {
				t.Errorf("request %v, key %q, %d hashes", headers, r.Key, len(data.StatusHashes))
			}
			listed += len(data.StatusHashes)
		})
	}
	if listed != hashes {
		t.Errorf("%d hashes listed, want %d (the live works)", listed, hashes)
	}
	return seen
}
