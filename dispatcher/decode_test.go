package dispatcher

import (
	"bytes"
	"context"
	"fmt"
	"sync/atomic"
	"testing"
	"time"

	"github.com/confluentinc/confluent-kafka-go/v2/kafka"
	"github.com/jackc/pgx/v5/pgconn"
	"github.com/jackc/pgx/v5/pgxpool"
	"github.com/prometheus/client_golang/prometheus/testutil"
	"go.uber.org/zap"

	"github.com/stbridge/stb/conflation"
	"github.com/stbridge/stb/dbsyncers"
	"github.com/stbridge/stb/pkg/backoff"
	"github.com/stbridge/stb/pkg/bundle"
	"github.com/stbridge/stb/pkg/db/dbtest"
	"github.com/stbridge/stb/pkg/deadletter"
	"github.com/stbridge/stb/pkg/transport"
)

// counted wraps s's decoder with a count of the payloads it decodes.
func counted(s dbsyncers.Syncer) (dbsyncers.Syncer, *atomic.Int32) {
	n := &atomic.Int32{}
	decode := s.Decode
	s.Decode = func(data []byte) (any, error) {
		n.Add(1)
		return decode(data)
	}
	return s, n
}

// read turns envelopes into bundles as the reader does (transport.Decode
// with the bridge's rules and reg as the decoder), each at the next offset
// of partition 0 of "status", tracked by released.
func read(t *testing.T, reg *dbsyncers.Registry, released bundle.Tracker, envs ...transport.Envelope) []*bundle.Bundle {
	t.Helper()
	rules := transport.DefaultConfig().Rules(reg)
	var out []*bundle.Bundle
	for i, env := range envs {
		env.Topic = "status"
		msg, err := transport.Encode(env, rules.TypePrefix)
		if err != nil {
			t.Fatal(err)
		}
		msg.TopicPartition.Partition, msg.TopicPartition.Offset = 0, kafka.Offset(i)
		b, rej := transport.Decode(msg, rules, time.Now())
		if rej != nil {
			t.Fatalf("envelope %d rejected when read: %s: %v", i, rej.Reason, rej.Err)
		}
		b.Track(released)
		out = append(out, b)
	}
	return out
}

// dispatch inserts bundles, all before a worker starts, and runs a
// dispatcher of one worker until every bundle is released.
func dispatch(t *testing.T, pool *pgxpool.Pool, reg *dbsyncers.Registry, mcfg conflation.Config, released *doneCount, bundles []*bundle.Bundle) *Dispatcher {
	t.Helper()
	return dispatchWith(t, pool, reg, mcfg, DefaultConfig(1), released, bundles)
}

// dispatchWith is dispatch with the dispatcher's configuration cfg.
func dispatchWith(t *testing.T, pool *pgxpool.Pool, reg *dbsyncers.Registry, mcfg conflation.Config, cfg Config, released *doneCount, bundles []*bundle.Bundle) *Dispatcher {
	t.Helper()
	mcfg.Types = reg.Types()
	mcfg.Backoff = backoff.Exponential{Min: 5 * time.Millisecond, Max: 20 * time.Millisecond}
	mgr, err := conflation.NewManager(mcfg)
	if err != nil {
		t.Fatal(err)
	}
	for _, b := range bundles {
		mgr.Insert(b)
	}
	cfg.WakeInterval = 10 * time.Millisecond
	d, err := New(cfg, Deps{Pool: pool, Manager: mgr, Applier: reg, DeadLetters: deadletter.NewWriter(pool), Logger: zap.NewNop()})
	if err != nil {
		t.Fatal(err)
	}
	ctx, cancel := context.WithCancel(context.Background())
	done := make(chan error, 1)
	go func() { done <- d.Run(ctx) }()
	deadline := time.Now().Add(20 * time.Second)
	for int(released.n.Load()) < len(bundles) && time.Now().Before(deadline) {
		time.Sleep(5 * time.Millisecond)
	}
	cancel()
	if err := <-done; err != nil {
		t.Fatal(err)
	}
	if n := int(released.n.Load()); n != len(bundles) {
		t.Fatalf("%d of %d bundles finished", n, len(bundles))
	}
	return d
}

// TestReplacedBundleIsNeverDecoded: of N bundles of one hub and type read
// before a worker takes the hub, only the newest is written, and only it
// is decoded. Every bundle was decoded when read, and ~95% of those decodes
// were thrown away when a newer bundle replaced the unwritten one (issue
// 22): this test counted N decodes then.
func TestReplacedBundleIsNeverDecoded(t *testing.T) {
	pool, _ := dbtest.New(t)
	mc, decodes := counted(dbsyncers.ManagedClusters())
	reg, err := dbsyncers.NewRegistry(mc)
	if err != nil {
		t.Fatal(err)
	}
	const n = 50
	var envs []transport.Envelope
	for i := 1; i <= n; i++ {
		envs = append(envs, transport.Envelope{Hub: "hub-1", Type: "managedclusters",
			Version: bundle.Version{Incarnation: 1, Generation: uint64(i)},
			Data:    fmt.Appendf(nil, `{"objects":[{"metadata":{"name":"c%d","uid":"u%d"}}]}`, i, i)})
	}
	var released doneCount
	dispatch(t, pool, reg, conflation.Config{}, &released, read(t, reg, &released, envs...))

	if got := decodes.Load(); got != 1 {
		t.Errorf("%d payloads decoded for %d bundles of one hub and type read before a worker took them, want 1: the newest", got, n)
	}
	var cluster string
	if err := pool.QueryRow(context.Background(), `SELECT cluster_name FROM stb.managed_clusters WHERE hub = 'hub-1'`).Scan(&cluster); err != nil || cluster != fmt.Sprintf("c%d", n) {
		t.Errorf("stored cluster %q (%v), want the newest bundle's c%d", cluster, err, n)
	}
}

// TestRetriedJobIsDecodedOnce: a job that fails transiently keeps the
// payloads it decoded; its retries do not decode them again.
func TestRetriedJobIsDecodedOnce(t *testing.T) {
	pool, _ := dbtest.New(t)
	fl, writes := failing("flaky", 2, &pgconn.PgError{Code: "40001", Message: "could not serialize access"})
	fl.Decode = func([]byte) (any, error) { return struct{}{}, nil }
	fl, decodes := counted(fl)
	reg, err := dbsyncers.NewRegistry(fl)
	if err != nil {
		t.Fatal(err)
	}
	var released doneCount
	b := &bundle.Bundle{Hub: "hub-1", Type: "flaky", Version: bundle.Version{Incarnation: 1, Generation: 1},
		Raw: []byte(`{}`), Size: 2, Origin: bundle.Origin{Topic: "status"}}
	b.Track(&released)
	dispatch(t, pool, reg, conflation.Config{}, &released, []*bundle.Bundle{b})
	if w, d := writes.Load(), decodes.Load(); w != 3 || d != 1 {
		t.Errorf("written %d times, decoded %d times; want 3 writes (two transient failures) and 1 decode", w, d)
	}
}

// TestBadNewestPayload: the newest bundle of a hub and type, whose data
// does not decode, replaces the older good one before a worker takes the
// hub. It is dead-lettered once, bad_payload, with the data it was read
// with; the older one is not written (it is state the hub has left) nor
// dead-lettered. The next good bundle is written as usual.
func TestBadNewestPayload(t *testing.T) {
	pool, _ := dbtest.New(t)
	reg := dbsyncers.Default()
	// JSON, which the reader takes (it checks the syntax only), that
	// does not decode.
	bad := []byte(`{"objects":7}`)
	version := func(g uint64) bundle.Version { return bundle.Version{Incarnation: 1, Generation: g} }
	var released doneCount
	bundles := read(t, reg, &released,
		transport.Envelope{Hub: "hub-1", Type: "managedclusters", Version: version(1), Data: []byte(`{"objects":[{"metadata":{"name":"old","uid":"u1"}}]}`)},
		transport.Envelope{Hub: "hub-1", Type: "managedclusters", Version: version(2), Data: bad},
	)
	d := dispatch(t, pool, reg, conflation.Config{}, &released, bundles)

	ctx := context.Background()
	var reason, version2 string
	var data []byte
	var letters int
	if err := pool.QueryRow(ctx, `SELECT count(*) FROM stb.dead_letters`).Scan(&letters); err != nil || letters != 1 {
		t.Fatalf("%d dead letters (%v), want 1: the bad one, once", letters, err)
	}
	if err := pool.QueryRow(ctx, `SELECT reason, version, data FROM stb.dead_letters`).Scan(&reason, &version2, &data); err != nil {
		t.Fatal(err)
	}
	if reason != string(deadletter.BadPayload) || version2 != "1.2" || !bytes.Equal(data, bad) {
		t.Errorf("dead letter %s of version %s with data %q, want bad_payload of 1.2 with the data as read, %q", reason, version2, data, bad)
	}
	if n := testutil.ToFloat64(d.metrics.dead.WithLabelValues("managedclusters", string(deadletter.BadPayload))); n != 1 {
		t.Errorf("counted %v bad_payload dead letters, want 1", n)
	}
	var rows, fences int
	if err := pool.QueryRow(ctx, `SELECT (SELECT count(*) FROM stb.managed_clusters), (SELECT count(*) FROM stb.bundle_versions)`).Scan(&rows, &fences); err != nil || rows != 0 || fences != 0 {
		t.Errorf("%d clusters and %d versions stored (%v): the replaced good bundle must not be written", rows, fences, err)
	}

	// The hub's next good bundle is written.
	released.n.Store(0)
	next := read(t, reg, &released, transport.Envelope{Hub: "hub-1", Type: "managedclusters", Version: version(3),
		Data: []byte(`{"objects":[{"metadata":{"name":"new","uid":"u3"}}]}`)})
	dispatch(t, pool, reg, conflation.Config{}, &released, next)
	var cluster string
	if err := pool.QueryRow(ctx, `SELECT cluster_name FROM stb.managed_clusters WHERE hub = 'hub-1'`).Scan(&cluster); err != nil || cluster != "new" {
		t.Errorf("stored cluster %q (%v), want new", cluster, err)
	}
}

// TestBadEventInAGroup: a stream's events wait as one group; an event in
// it whose data does not decode is dead-lettered on its own, and the
// others are written, as they were when the reader rejected it.
func TestBadEventInAGroup(t *testing.T) {
	pool, _ := dbtest.New(t)
	reg := dbsyncers.Default()
	event := func(g uint64, name string) transport.Envelope {
		return transport.Envelope{Hub: "hub-1", Type: "policyevents", Version: bundle.Version{Incarnation: 1, Generation: g},
			Data: fmt.Appendf(nil, `{"objects":[{"policyId":"p1","clusterName":"c1","eventName":%q,"time":"2026-01-02T03:04:05Z"}]}`, name)}
	}
	broken := event(2, "")
	broken.Data = []byte(`{"objects":7}`) // JSON, which the reader takes, that does not decode
	var released doneCount
	bundles := read(t, reg, &released, event(1, "e1"), broken, event(3, "e3"))
	dispatch(t, pool, reg, conflation.Config{}, &released, bundles)

	ctx := context.Background()
	var events []string
	rows, err := pool.Query(ctx, `SELECT event_name FROM stb.policy_events ORDER BY event_name`)
	if err != nil {
		t.Fatal(err)
	}
	for rows.Next() {
		var e string
		if err := rows.Scan(&e); err != nil {
			t.Fatal(err)
		}
		events = append(events, e)
	}
	if rows.Err() != nil || fmt.Sprint(events) != "[e1 e3]" {
		t.Errorf("events stored %v (%v), want [e1 e3]", events, rows.Err())
	}
	var reason, version string
	var letters int
	if err := pool.QueryRow(ctx, `SELECT count(*), min(reason), min(version) FROM stb.dead_letters`).Scan(&letters, &reason, &version); err != nil ||
		letters != 1 || reason != string(deadletter.BadPayload) || version != "1.2" {
		t.Errorf("%d dead letters, %s of %s (%v); want one, bad_payload of 1.2", letters, reason, version, err)
	}
}
