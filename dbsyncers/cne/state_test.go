package cne_test

import (
	"encoding/json"
	"errors"
	"fmt"
	"strings"
	"testing"
	"time"

	"github.com/cloudevents/sdk-go/v2/event"
	"github.com/jackc/pgx/v5"
	"github.com/jackc/pgx/v5/pgxpool"

	"github.com/stbridge/stb/dbsyncers"
	"github.com/stbridge/stb/dbsyncers/cne"
	"github.com/stbridge/stb/internal/profiles"
	"github.com/stbridge/stb/pkg/bundle"
	"github.com/stbridge/stb/pkg/db"
	"github.com/stbridge/stb/pkg/db/dbtest"
	"github.com/stbridge/stb/pkg/deadletter"
	"github.com/stbridge/stb/pkg/transport"
)

// row is one row of stb.cne_state as the tests compare them.
type row struct {
	Node, ValueType, Value, Text, Numeric string
	TimeNS, Offset                        int64
	Partition                             int32
	ID, XMin                              string
}

func readState(t testing.TB, pool *pgxpool.Pool) map[string]row {
	t.Helper()
	rows, err := pool.Query(t.Context(), `
		SELECT event_type || ' ' || resource_address || ' ' || data_type, hub, value_type, value::text,
		       coalesce(value_text, '<null>'), coalesce(value_numeric::text, '<null>'), event_time_ns, "offset", "partition", event_id, xmin::text
		FROM stb.cne_state`)
	if err != nil {
		t.Fatal(err)
	}
	out := map[string]row{}
	for rows.Next() {
		var k string
		var r row
		if err := rows.Scan(&k, &r.Node, &r.ValueType, &r.Value, &r.Text, &r.Numeric, &r.TimeNS, &r.Offset, &r.Partition, &r.ID, &r.XMin); err != nil {
			t.Fatal(err)
		}
		out[k] = r
	}
	if err := rows.Err(); err != nil {
		t.Fatal(err)
	}
	return out
}

// write applies one group of bundles as a worker does: the registry's
// fence and the family's plan in one transaction.
func write(t testing.TB, pool *pgxpool.Pool, bundles ...*bundle.Bundle) {
	t.Helper()
	reg, err := dbsyncers.NewRegistry(cne.Syncers()...)
	if err != nil {
		t.Fatal(err)
	}
	var applied bool
	if err := pgx.BeginFunc(t.Context(), pool, func(tx pgx.Tx) error {
		applied, err = reg.Apply(t.Context(), tx, bundles)
		return err
	}); err != nil {
		t.Fatal(err)
	}
	if !applied {
		t.Fatal("the (node, type) fence refused a cne.event group: it must take every one")
	}
}

func mustBundle(t testing.TB, e interface{ Type() string }, tev func() (*bundle.Bundle, error)) *bundle.Bundle {
	t.Helper()
	b, err := tev()
	if err != nil {
		t.Fatalf("%s: %v", e.Type(), err)
	}
	return b
}

// stateOf returns a node's ptp-state-change bundle read at (part, off).
func stateOf(t testing.TB, node, state string, offset int64, at time.Time, part int32, off int64) *bundle.Bundle {
	t.Helper()
	e := ev(t, event.CloudEventsVersionV1, cne.PtpStateChange, at, part, off, ptpState(node, state, offset))
	return mustBundle(t, e, func() (*bundle.Bundle, error) { return cne.Family{}.Bundle(e) })
}

const (
	lockNote   = cne.PtpStateChange + " /cluster/node/n1/sync/ptp-status/lock-state notification"
	lockMetric = cne.PtpStateChange + " /cluster/node/n1/sync/ptp-status/lock-state metric"
)

// TestStateFence: per key, the latest CloudEvents time wins, ties broken
// by the Kafka position within a partition; late copies, replays and a
// clock stepped back never take a row backwards.
func TestStateFence(t *testing.T) {
	pool, _ := dbtest.New(t)
	sec := func(n int) time.Time { return t0.Add(time.Duration(n) * time.Second) }

	write(t, pool, stateOf(t, "n1", "FREERUN", 900, sec(0), 0, 10))
	got := readState(t, pool)
	if len(got) != 2 || got[lockNote].Text != "FREERUN" || got[lockNote].Numeric != "<null>" || got[lockNote].Value != `"FREERUN"` ||
		got[lockMetric].Numeric != "900" || got[lockMetric].Text != "900" || got[lockMetric].TimeNS != t0.UnixNano() || got[lockMetric].Node != "n1" {
		t.Fatalf("first event: %+v", got)
	}

	// A later event wins; an earlier one read after it (a late copy, or
	// the node's clock stepped back) does not.
	write(t, pool, stateOf(t, "n1", "LOCKED", 3, sec(2), 0, 11))
	write(t, pool, stateOf(t, "n1", "HOLDOVER", 50, sec(1), 0, 12))
	if got := readState(t, pool); got[lockNote].Text != "LOCKED" || got[lockMetric].Numeric != "3" || got[lockNote].Offset != 11 {
		t.Fatalf("after a later and a late event: %+v", got)
	}

	// The same message read again (a replay after a restart) writes
	// nothing, not even the row's xmin.
	before := readState(t, pool)
	write(t, pool, stateOf(t, "n1", "LOCKED", 3, sec(2), 0, 11))
	if after := readState(t, pool); after[lockNote].XMin != before[lockNote].XMin {
		t.Errorf("a replayed message rewrote the row")
	}

	// Same time: a later message of the same partition wins; one of
	// another partition does not (no order between partitions).
	write(t, pool, stateOf(t, "n1", "HOLDOVER", 4, sec(2), 0, 13))
	if got := readState(t, pool); got[lockNote].Text != "HOLDOVER" || got[lockNote].Offset != 13 {
		t.Fatalf("same time, later offset: %+v", got[lockNote])
	}
	// Another partition at the same time: ordered by partition, whatever
	// the offsets, the same whichever is read first.
	write(t, pool, stateOf(t, "n1", "FREERUN", 5, sec(2), 1, 2))
	if got := readState(t, pool); got[lockNote].Text != "FREERUN" || got[lockNote].Partition != 1 {
		t.Fatalf("same time, a higher partition: %+v", got[lockNote])
	}
	write(t, pool, stateOf(t, "n1", "HOLDOVER", 7, sec(2), 0, 99))
	if got := readState(t, pool); got[lockNote].Text != "FREERUN" || got[lockNote].Partition != 1 {
		t.Fatalf("same time, a lower partition at a later offset: %+v", got[lockNote])
	}

	// Nanoseconds count: one nanosecond later wins.
	write(t, pool, stateOf(t, "n1", "LOCKED", 6, sec(2).Add(time.Nanosecond), 1, 1))
	if got := readState(t, pool); got[lockNote].Text != "LOCKED" || got[lockNote].TimeNS != sec(2).UnixNano()+1 {
		t.Fatalf("one nanosecond later: %+v", got[lockNote])
	}
}

// TestStateGroup: a node's events written as one group (deltas waiting in
// its unit, or merged by it) end as if written one by one, in any order.
func TestStateGroup(t *testing.T) {
	pool, _ := dbtest.New(t)
	sec := func(n int) time.Time { return t0.Add(time.Duration(n) * time.Second) }
	a := stateOf(t, "n1", "FREERUN", 900, sec(0), 0, 10)
	b := stateOf(t, "n1", "LOCKED", 3, sec(5), 0, 11)
	c := stateOf(t, "n1", "HOLDOVER", 7, sec(3), 0, 12) // late
	cls := ev(t, event.CloudEventsVersionV03, cne.PtpClockClassChange, sec(4), 0, 13,
		data("1.0", v3(addr("n1", cne.ResourceClockClass), "metric", "decimal64.3", "6")))
	d := mustBundle(t, cls, func() (*bundle.Bundle, error) { return cne.Family{}.Bundle(cls) })

	pa, pb, pc := decoded(t, a), decoded(t, b), decoded(t, c)
	merged := &bundle.Bundle{Hub: "n1", Type: cne.BundleType, Payload: cne.Merge(cne.Merge(pa, pb), pc), Origin: a.Origin}
	write(t, pool, merged, d)
	got := readState(t, pool)
	if len(got) != 3 || got[lockNote].Text != "LOCKED" || got[lockMetric].Numeric != "3" ||
		got[cne.PtpClockClassChange+" /cluster/node/n1/sync/ptp-status/clock-class metric"].Numeric != "6" {
		t.Fatalf("group: %+v", got)
	}
	for _, p := range []*cne.Payload{pa, pb, pc} {
		if len(p.Values) != 2 {
			t.Fatal("Merge changed a payload it was given")
		}
	}
}

// TestStateLargeEvent: consumers SHOULD accept events of at least 64 KB
// (seed 004, "Size Limits"): a redfish-event of 80 KB and an event of
// 600 values are stored whole.
func TestStateLargeEvent(t *testing.T) {
	pool, _ := dbtest.New(t)
	big := map[string]any{"@odata.type": "#Event.v1_3_0.Event", "Context": strings.Repeat("c", 80<<10)}
	d1 := data("v1.0", v1(addr("big", "/redfish/v1/Systems"), "notification", "redfish-event", big))
	var vals []val
	for i := range 600 {
		vals = append(vals, v3(addr("many", fmt.Sprintf("/sync/ptp-status/lock-state/ens%df%d", i/4, i%4)), "metric", "decimal64.3", fmt.Sprintf("%d.125", i)))
	}
	d2 := data("1.0", vals...)
	if len(d1) < 64<<10 || len(d2) < 64<<10 {
		t.Fatalf("test data %d and %d bytes, want ≥ 64 KiB", len(d1), len(d2))
	}
	for i, d := range [][]byte{d1, d2} {
		e := ev(t, event.CloudEventsVersionV1, "event.redfish.alert", t0, 0, int64(i), d)
		write(t, pool, mustBundle(t, e, func() (*bundle.Bundle, error) { return cne.Family{}.Bundle(e) }))
	}
	got := readState(t, pool)
	if len(got) != 601 {
		t.Fatalf("%d rows, want 601", len(got))
	}
	var stored map[string]string
	if err := json.Unmarshal([]byte(got["event.redfish.alert /cluster/node/big/redfish/v1/Systems notification"].Value), &stored); err != nil || len(stored["Context"]) != 80<<10 {
		t.Errorf("redfish value not stored whole: %v", err)
	}
	if r := got["event.redfish.alert /cluster/node/many/sync/ptp-status/lock-state/ens149f3 metric"]; r.Numeric != "599.125" || r.Value != `"599.125"` {
		t.Errorf("last of 600 values: %+v", r)
	}
}

// A node is a hub to the hub lifecycle: its events keep its heartbeat row
// (so --hub-inactive-after measures its silence), `stb hub reset NODE`
// clears its rows and takes its next events, and so does `stb hub delete
// NODE`: the profile is key-fenced (internal/profiles), so a delete
// forgets the node's cne.event version rather than leave a tombstone that,
// the family's version being constant, would keep its events out for good.
func TestNodeLifecycle(t *testing.T) {
	pool, _ := dbtest.New(t)
	reg, err := dbsyncers.NewRegistry(cne.Syncers()...)
	if err != nil {
		t.Fatal(err)
	}
	apply := func(b *bundle.Bundle) bool {
		t.Helper()
		var applied bool
		if err := pgx.BeginFunc(t.Context(), pool, func(tx pgx.Tx) error {
			applied, err = reg.Apply(t.Context(), tx, []*bundle.Bundle{b})
			return err
		}); err != nil {
			t.Fatal(err)
		}
		return applied
	}
	rows := func() (state, heartbeats int) {
		t.Helper()
		if err := pool.QueryRow(t.Context(), `SELECT (SELECT count(*) FROM stb.cne_state WHERE hub = 'n1'),
			(SELECT count(*) FROM stb.hub_heartbeats WHERE hub = 'n1' AND last_timestamp = $1)`, t0).Scan(&state, &heartbeats); err != nil {
			t.Fatal(err)
		}
		return state, heartbeats
	}
	request := func(action db.HubAction) {
		t.Helper()
		req := db.HubRequest{Hub: "n1", Action: action, RequestedBy: "test", Scope: profiles.HubScope()}
		if _, err := db.ApplyHubRequest(t.Context(), pool, req); err != nil {
			t.Fatal(err)
		}
	}
	if !apply(stateOf(t, "n1", "LOCKED", 1, t0, 0, 1)) {
		t.Fatal("first event refused")
	}
	if s, hb := rows(); s != 2 || hb != 1 {
		t.Fatalf("after an event: %d rows, %d heartbeat rows at its time; want 2 and 1", s, hb)
	}
	request(db.ResetHub)
	if s, _ := rows(); s != 0 {
		t.Fatalf("after a reset: %d rows", s)
	}
	if !apply(stateOf(t, "n1", "HOLDOVER", 2, t0, 0, 2)) {
		t.Fatal("an event after a reset was refused")
	}
	request(db.DeleteHub)
	if s, _ := rows(); s != 0 {
		t.Fatalf("after a delete: %d rows", s)
	}
	if !apply(stateOf(t, "n1", "FREERUN", 3, t0.Add(time.Hour), 0, 3)) {
		t.Fatal("an event after a delete was refused: the node can never come back")
	}
	var tombstones int
	if err := pool.QueryRow(t.Context(), `SELECT count(*) FROM stb.bundle_versions WHERE hub = 'n1' AND generation > 0`).Scan(&tombstones); err != nil || tombstones != 0 {
		t.Fatalf("%d tombstones of the node (%v), want none", tombstones, err)
	}
}

// What PostgreSQL cannot store (U+0000 in text or jsonb, invalid UTF-8)
// is refused when read, one dead letter for the event: written, it would
// fail the whole job of its node, every other event of it with it. A
// backslash before u0000 that is itself escaped is text, and is stored.
func TestNotStorableIsRefusedWhenRead(t *testing.T) {
	pool, _ := dbtest.New(t)
	a := addr("n1", cne.ResourceLockState)
	one := func(value string) string {
		return `{"version":"1.0","values":[{"ResourceAddress":"` + a + `","data_type":"notification","value_type":"enumeration","value":` + value + `}]}`
	}
	redfish := func(value string) string {
		return `{"version":"1.0","values":[{"ResourceAddress":"` + a + `","data_type":"notification","value_type":"redfish-event","value":{"Context":` + value + `}}]}`
	}
	for _, d := range []string{one(`"LOCKED\u0000"`), redfish(`"x\u0000y"`), redfish("\"x\xff\""), one("\"LOCK\xc3\""),
		`{"version":"1\u0000","values":[{"ResourceAddress":"` + a + `","data_type":"metric","value_type":"decimal64.3","value":1}]}`} {
		_, err := cne.Family{}.Bundle(ev(t, event.CloudEventsVersionV1, cne.PtpStateChange, t0, 0, 1, []byte(d)))
		var reasoned deadletter.Reasoned
		if !errors.As(err, &reasoned) || reasoned.DeadLetterReason() != deadletter.BadPayload {
			t.Errorf("%q: %v, want a bad_payload", d, err)
		}
	}
	e := ev(t, event.CloudEventsVersionV1, cne.PtpStateChange, t0, 0, 1, []byte(redfish(`"a\\u0000b"`)))
	e.SetID("id\x00")
	if _, err := (cne.Family{}).Bundle(e); !errors.Is(err, cne.ErrNotStorable) {
		t.Errorf("an id with NUL: %v", err)
	}
	e.SetID("id")
	write(t, pool, mustBundle(t, e, func() (*bundle.Bundle, error) { return cne.Family{}.Bundle(e) }))
	var got string
	if err := pool.QueryRow(t.Context(), `SELECT value->>'Context' FROM stb.cne_state`).Scan(&got); err != nil || got != `a\u0000b` {
		t.Errorf("an escaped backslash before u0000: stored %q, %v", got, err)
	}
}

// A key too long for stb.cne_state's index is refused when read; one
// just short enough is stored.
func TestLongKey(t *testing.T) {
	pool, _ := dbtest.New(t)
	mk := func(addrLen int) *transport.Event {
		a := "/cluster/node/n1/" + strings.Repeat("x", addrLen-len("/cluster/node/n1/"))
		return ev(t, event.CloudEventsVersionV1, cne.PtpStateChange, t0, 0, 1, data("1.0", v3(a, "metric", "decimal64.3", 1)))
	}
	room := cne.MaxKeyBytes - len(cne.PtpStateChange) - len("metric")
	if _, err := (cne.Family{}).Bundle(mk(room + 1)); !errors.Is(err, cne.ErrKeyTooLong) {
		t.Fatalf("a key one byte too long: %v", err)
	}
	e := mk(room)
	write(t, pool, mustBundle(t, e, func() (*bundle.Bundle, error) { return cne.Family{}.Bundle(e) }))
	if got := readState(t, pool); len(got) != 1 {
		t.Fatalf("%d rows, want 1", len(got))
	}
}

// The extreme decimals the family takes fit stb.cne_state's numeric.
func TestDecimalExtremesStored(t *testing.T) {
	pool, _ := dbtest.New(t)
	a := addr("n1", cne.ResourceLockState)
	e := ev(t, event.CloudEventsVersionV1, cne.PtpStateChange, t0, 0, 1, data("1.0",
		v3(a, "metric", "decimal64.3", "1e-1000"), v3(a+"/max", "metric", "decimal64.3", "1.7976931348623157e308"),
		v3(a+"/long", "metric", "decimal64.3", "-"+strings.Repeat("9", 40)+"."+strings.Repeat("1", 22))))
	write(t, pool, mustBundle(t, e, func() (*bundle.Bundle, error) { return cne.Family{}.Bundle(e) }))
	var n int
	if err := pool.QueryRow(t.Context(), `SELECT count(*) FROM stb.cne_state WHERE value_numeric::text = value_text::numeric::text`).Scan(&n); err != nil || n != 3 {
		t.Fatalf("%d of 3 decimals stored exactly (%v)", n, err)
	}
}
