package dbsyncers

import (
	"context"
	"errors"
	"strconv"
	"testing"
	"time"

	"github.com/jackc/pgx/v5"
	"github.com/jackc/pgx/v5/pgconn"
	"github.com/jackc/pgx/v5/pgxpool"

	"github.com/stbridge/stb/pkg/bundle"
	"github.com/stbridge/stb/pkg/db/dbtest"
)

// roundTrips is a DB that counts what is sent through it, each call one
// round trip to the server, and passes everything to the real
// transaction.
type roundTrips struct {
	Conn
	exec, query, queryRow, batch, copy, begin int
	// customPlans counts the batches that asked for custom plans.
	customPlans int
}

func (c *roundTrips) sawBatch(b *pgx.Batch) {
	c.batch++
	if len(b.QueuedQueries) > 0 && b.QueuedQueries[0].SQL == customPlansSQL {
		c.customPlans++
	}
}

// Begin counts the BEGIN (a SAVEPOINT in a transaction) and returns the
// transaction counting what is sent through it here too.
func (c *roundTrips) Begin(ctx context.Context) (pgx.Tx, error) {
	c.begin++
	tx, err := c.Conn.Begin(ctx)
	if err != nil {
		return nil, err
	}
	return &countedTx{Tx: tx, rt: c}, nil
}

// countedTx is a transaction begun through roundTrips, counting there.
type countedTx struct {
	pgx.Tx
	rt *roundTrips
}

func (t *countedTx) Exec(ctx context.Context, sql string, args ...any) (pgconn.CommandTag, error) {
	t.rt.exec++
	return t.Tx.Exec(ctx, sql, args...)
}

func (t *countedTx) Query(ctx context.Context, sql string, args ...any) (pgx.Rows, error) {
	t.rt.query++
	return t.Tx.Query(ctx, sql, args...)
}

func (t *countedTx) QueryRow(ctx context.Context, sql string, args ...any) pgx.Row {
	t.rt.queryRow++
	return t.Tx.QueryRow(ctx, sql, args...)
}

func (t *countedTx) SendBatch(ctx context.Context, b *pgx.Batch) pgx.BatchResults {
	t.rt.sawBatch(b)
	return t.Tx.SendBatch(ctx, b)
}

func (t *countedTx) CopyFrom(ctx context.Context, table pgx.Identifier, columns []string, src pgx.CopyFromSource) (int64, error) {
	t.rt.copy++
	return t.Tx.CopyFrom(ctx, table, columns, src)
}

func (c *roundTrips) Exec(ctx context.Context, sql string, args ...any) (pgconn.CommandTag, error) {
	c.exec++
	return c.Conn.Exec(ctx, sql, args...)
}

func (c *roundTrips) Query(ctx context.Context, sql string, args ...any) (pgx.Rows, error) {
	c.query++
	return c.Conn.Query(ctx, sql, args...)
}

func (c *roundTrips) QueryRow(ctx context.Context, sql string, args ...any) pgx.Row {
	c.queryRow++
	return c.Conn.QueryRow(ctx, sql, args...)
}

func (c *roundTrips) SendBatch(ctx context.Context, b *pgx.Batch) pgx.BatchResults {
	c.sawBatch(b)
	return c.Conn.SendBatch(ctx, b)
}

func (c *roundTrips) CopyFrom(ctx context.Context, table pgx.Identifier, columns []string, src pgx.CopyFromSource) (int64, error) {
	c.copy++
	return c.Conn.CopyFrom(ctx, table, columns, src)
}

func (c *roundTrips) total() int { return c.exec + c.query + c.queryRow + c.batch + c.copy + c.begin }

// writeInTx runs Write in a transaction of the caller's and returns what
// it sent, in the savepoint it began too, if it began one.
func writeInTx(t testing.TB, pool *pgxpool.Pool, groups ...[]*bundle.Bundle) ([]bool, *roundTrips, error) {
	t.Helper()
	var applied []bool
	var rt *roundTrips
	err := pgx.BeginFunc(t.Context(), pool, func(tx pgx.Tx) error {
		rt = &roundTrips{Conn: tx}
		var err error
		applied, err = Default().Write(t.Context(), rt, groups)
		return err
	})
	return applied, rt, err
}

// write runs Write on the pool and returns what it sent, in the
// transaction it began too, if it began one.
func write(t testing.TB, pool *pgxpool.Pool, groups ...[]*bundle.Bundle) ([]bool, *roundTrips, error) {
	t.Helper()
	rt := &roundTrips{Conn: pool}
	applied, err := Default().Write(t.Context(), rt, groups)
	return applied, rt, err
}

func heartbeatAt(hub string, gen uint64) *bundle.Bundle {
	return newBundle(hub, "heartbeat", bundle.Version{Incarnation: 1, Generation: gen}, &HeartbeatPayload{})
}

func readHeartbeat(t testing.TB, pool *pgxpool.Pool, hub string) (time.Time, bool) {
	t.Helper()
	var at time.Time
	err := pool.QueryRow(t.Context(), `SELECT last_timestamp FROM stb.hub_heartbeats WHERE hub = $1`, hub).Scan(&at)
	if errors.Is(err, pgx.ErrNoRows) {
		return at, false
	}
	if err != nil {
		t.Fatal(err)
	}
	return at.UTC(), true
}

// TestWriteOneRoundTrip: small bundles of several hubs and types, fences
// included, cost one round trip together, without BEGIN or COMMIT, and are
// all written, visible to other connections once Write returns.
func TestWriteOneRoundTrip(t *testing.T) {
	t.Parallel()
	pool, _ := dbtest.New(t)
	v := bundle.Version{Incarnation: 1, Generation: 1}
	var groups [][]*bundle.Bundle
	for i := range 10 {
		hub := "hub-rt-" + strconv.Itoa(i)
		groups = append(groups,
			[]*bundle.Bundle{heartbeatAt(hub, 1)},
			[]*bundle.Bundle{newBundle(hub, "managedclusters", v, mustDecode(t, "managedclusters", clustersData(clusterJSON("c1", "u1", "1"))))},
			[]*bundle.Bundle{newBundle(hub, "clusterspolicies", v, mustDecode(t, "clusterspolicies", objectsData(placement("p1", "c1", "c2"))))},
		)
	}
	applied, rt, err := write(t, pool, groups...)
	if err != nil {
		t.Fatal(err)
	}
	if rt.batch != 1 || rt.total() != 1 {
		t.Fatalf("%d groups took %d round trips (%+v), want one batch", len(groups), rt.total(), *rt)
	}
	if rt.customPlans != 0 {
		t.Errorf("a batch of small bundles asked for custom plans: PostgreSQL plans each statement anew")
	}
	for i, a := range applied {
		if !a {
			t.Errorf("group %d (%s of %s) not applied", i, groups[i][0].Type, groups[i][0].Hub)
		}
	}
	for i := range 10 {
		hub := "hub-rt-" + strconv.Itoa(i)
		if _, ok := readHeartbeat(t, pool, hub); !ok {
			t.Errorf("%s: no heartbeat written", hub)
		}
		if got := readClusters(t, pool, hub); len(got) != 1 {
			t.Errorf("%s: %d clusters written, want 1", hub, len(got))
		}
		if got := readCompliance(t, pool, hub); len(got) != 2 {
			t.Errorf("%s: %d placements written, want 2", hub, len(got))
		}
		if r, ok := readVersion(t, pool, hub, "clusterspolicies"); !ok || r.Version != "1.1" {
			t.Errorf("%s: clusterspolicies version %+v, want 1.1", hub, r)
		}
	}
}

// TestWriteCustomPlansForLargeBundles: a pipelined batch holding a bundle
// of more than customPlansAbove bytes asks for custom plans (its arrays
// may be long: a generic plan assumes about 100 elements); one of small
// bundles does not.
func TestWriteCustomPlansForLargeBundles(t *testing.T) {
	t.Parallel()
	pool, _ := dbtest.New(t)
	large := heartbeatAt("hub-large", 1)
	large.Size = customPlansAbove + 1
	applied, rt, err := write(t, pool, []*bundle.Bundle{heartbeatAt("hub-small", 1)}, []*bundle.Bundle{large})
	if err != nil || !applied[0] || !applied[1] {
		t.Fatalf("applied %v, %v", applied, err)
	}
	if rt.batch != 1 || rt.customPlans != 1 {
		t.Errorf("%d batches, %d with custom plans; want the one batch with them", rt.batch, rt.customPlans)
	}
}

// TestWriteStale: a stale group sent with its statements makes the batch
// fail with ErrStale and roll back whole, in a transaction of Write's own
// or the caller's: the database keeps the newer state, and nothing of the
// other groups lands until they are written without it.
func TestWriteStale(t *testing.T) {
	t.Parallel()
	pool, _ := dbtest.New(t)
	if _, _, err := write(t, pool, []*bundle.Bundle{heartbeatAt("hub-new", 5)}); err != nil {
		t.Fatal(err)
	}
	want, _ := readHeartbeat(t, pool, "hub-new")

	for _, way := range []struct {
		name  string
		write func(testing.TB, *pgxpool.Pool, ...[]*bundle.Bundle) ([]bool, *roundTrips, error)
	}{{"Write", write}, {"Write in the caller's transaction", writeInTx}} {
		for _, order := range [][2]string{{"hub-new", "hub-fresh"}, {"hub-fresh", "hub-new"}} {
			groups := make([][]*bundle.Bundle, 2)
			for i, hub := range order {
				gen := uint64(1)
				if hub == "hub-new" {
					gen = 3 // older than the stored 5
				}
				groups[i] = []*bundle.Bundle{heartbeatAt(hub, gen)}
			}
			if _, _, err := way.write(t, pool, groups...); !errors.Is(err, ErrStale) {
				t.Fatalf("%s %v: err %v, want ErrStale", way.name, order, err)
			}
			if got, _ := readHeartbeat(t, pool, "hub-new"); !got.Equal(want) {
				t.Fatalf("%s %v: the stale heartbeat's time %v stayed, want %v", way.name, order, got, want)
			}
			if _, ok := readHeartbeat(t, pool, "hub-fresh"); ok {
				t.Fatalf("%s %v: the fresh hub's heartbeat landed with a stale batch", way.name, order)
			}
		}
	}
	if _, _, err := write(t, pool, []*bundle.Bundle{heartbeatAt("hub-new", 3)}); !errors.Is(err, ErrStale) {
		t.Fatalf("alone, the stale group: err %v, want ErrStale", err)
	}
	applied, _, err := write(t, pool, []*bundle.Bundle{heartbeatAt("hub-fresh", 1)})
	if err != nil || !applied[0] {
		t.Fatalf("alone, the fresh group: applied %v, err %v", applied, err)
	}
}

// TestApplyBatchStagedAlone: a bundle large enough to be staged is written
// on its own, fence first, in its place among the pipelined groups:
// correct rows, and stale when the database is newer, without ErrStale
// (nothing of it was sent).
func TestApplyBatchStagedAlone(t *testing.T) {
	t.Parallel()
	pool, _ := dbtest.New(t)
	clusters := make([]string, stageRowsAbove+1)
	for i := range clusters {
		clusters[i] = "c" + strconv.Itoa(i)
	}
	big := func(gen uint64) []*bundle.Bundle {
		p := mustDecode(t, "clusterspolicies", objectsData(placement("p1", clusters...)))
		return []*bundle.Bundle{newBundle("hub-big", "clusterspolicies", bundle.Version{Incarnation: 1, Generation: gen}, p)}
	}
	small := func(gen uint64) []*bundle.Bundle {
		p := mustDecode(t, "clusterspolicies", objectsData(placement("p1", "c0")))
		return []*bundle.Bundle{newBundle("hub-big", "clusterspolicies", bundle.Version{Incarnation: 1, Generation: gen}, p)}
	}
	// In order: the small placement, then the big one over it.
	if applied, _, err := writeInTx(t, pool, small(1), big(2)); err != nil || !applied[0] || !applied[1] {
		t.Fatalf("small then big of one hub: applied %v, err %v", applied, err)
	}
	if got := readCompliance(t, pool, "hub-big"); len(got) != len(clusters) {
		t.Fatalf("small then big: %d placements, want the big one's %d", len(got), len(clusters))
	}
	applied, rt, err := writeInTx(t, pool, big(3), []*bundle.Bundle{heartbeatAt("hub-small", 1)})
	if err != nil {
		t.Fatal(err)
	}
	if !applied[0] || !applied[1] {
		t.Fatalf("applied %v, want both", applied)
	}
	// The heartbeat and its fence; the big one's fence, create, copy, batch.
	if rt.batch != 2 || rt.queryRow != 1 || rt.exec != 1 || rt.copy != 1 {
		t.Fatalf("sent %+v, want 2 batches, 1 fence alone, 1 create and 1 copy", *rt)
	}
	if rt.customPlans != 1 {
		t.Errorf("%d batches asked for custom plans, want 1: the staged bundle's, not the heartbeat's", rt.customPlans)
	}
	if got := readCompliance(t, pool, "hub-big"); len(got) != len(clusters) {
		t.Fatalf("%d placements written, want %d", len(got), len(clusters))
	}
	applied, rt, err = writeInTx(t, pool, big(2))
	if err != nil || applied[0] {
		t.Fatalf("older big bundle: applied %v, err %v; want not applied", applied, err)
	}
	if rt.queryRow != 1 || rt.total() != 2 {
		t.Fatalf("older big bundle sent %+v: want only its fence, in the savepoint Write began", *rt)
	}
	// Write begins a transaction for a batch that cannot go as one.
	applied, rt, err = write(t, pool, big(4), []*bundle.Bundle{heartbeatAt("hub-small", 2)})
	if err != nil || !applied[0] || !applied[1] {
		t.Fatalf("Write of a staged bundle and a heartbeat: applied %v, err %v", applied, err)
	}
	// One BEGIN, and in it what the caller's transaction saw above.
	if rt.begin != 1 || rt.batch != 2 || rt.queryRow != 1 || rt.exec != 1 || rt.copy != 1 {
		t.Fatalf("Write of a staged bundle sent %+v, want one BEGIN, then 2 batches, 1 fence alone, 1 create and 1 copy", *rt)
	}
}
