package dbsyncers

import (
	"errors"
	"maps"
	"reflect"
	"testing"
	"time"

	"github.com/jackc/pgx/v5"
	"github.com/jackc/pgx/v5/pgxpool"

	"github.com/stbridge/stb/pkg/bundle"
	"github.com/stbridge/stb/pkg/db/dbtest"
	"github.com/stbridge/stb/pkg/deadletter"
)

// event returns a policyevents object.
func event(policyID, cluster, name, message, at string) map[string]any {
	e := map[string]any{"policyId": policyID, "clusterName": cluster, "eventName": name, "reason": "PolicyStatusSync", "message": message}
	if at != "" {
		e["time"] = at
	}
	return e
}

// decodeEventsCases are the decoder's table cases, also the fuzz seeds.
// want lists "policy/cluster/event=message" in order.
var decodeEventsCases = []struct {
	name   string
	data   string
	want   []string
	reason deadletter.Reason // the decoder error's dead-letter reason, "" for none
}{
	{"empty list", `{"objects":[]}`, []string{}, ""},
	{"sorted by key", `{"objects":[
		{"policyId":"p2","clusterName":"a","eventName":"e1","reason":"r","message":"m1","time":"2026-01-02T03:04:05Z"},
		{"policyId":"p1","clusterName":"b","eventName":"e2","message":"m2","time":"2026-01-02T03:04:05.123+02:00"},
		{"policyId":"p1","clusterName":"b","eventName":"e1","message":"m3"}]}`,
		[]string{"p1/b/e1=m3", "p1/b/e2=m2", "p2/a/e1=m1"}, ""},
	{"duplicate: first kept", `{"objects":[
		{"policyId":"p1","clusterName":"a","eventName":"e","message":"first"},
		{"policyId":"p1","clusterName":"a","eventName":"e","message":"second"}]}`, []string{"p1/a/e=first"}, ""},
	{"empty time", `{"objects":[{"policyId":"p1","clusterName":"a","eventName":"e","time":""}]}`, []string{"p1/a/e="}, ""},
	{"missing objects", `{}`, nil, deadletter.BadPayload},
	{"missing policyId", `{"objects":[{"clusterName":"a","eventName":"e"}]}`, nil, deadletter.BadPayload},
	{"missing clusterName", `{"objects":[{"policyId":"p1","eventName":"e"}]}`, nil, deadletter.BadPayload},
	{"empty eventName", `{"objects":[{"policyId":"p1","clusterName":"a","eventName":""}]}`, nil, deadletter.BadPayload},
	{"eventName not a string", `{"objects":[{"policyId":"p1","clusterName":"a","eventName":3}]}`, nil, deadletter.BadPayload},
	{"message not a string", `{"objects":[{"policyId":"p1","clusterName":"a","eventName":"e","message":{}}]}`, nil, deadletter.BadPayload},
	{"bad time", `{"objects":[{"policyId":"p1","clusterName":"a","eventName":"e","time":"yesterday"}]}`, nil, deadletter.BadPayload},
	{"time not a string", `{"objects":[{"policyId":"p1","clusterName":"a","eventName":"e","time":1700000000}]}`, nil, deadletter.BadPayload},
	{"NUL in a message", `{"objects":[{"policyId":"p1","clusterName":"a","eventName":"e","message":"a\u0000"}]}`, nil, deadletter.BadPayload},
	{"not JSON", `objects`, nil, deadletter.BadPayload},
}

func TestDecodePolicyEvents(t *testing.T) {
	rows := decodeEventsCases
	runDecodeCases(t, decodePolicyEvents, len(rows), func(i int) decodeCase {
		return decodeCase{rows[i].name, rows[i].data, rows[i].reason}
	}, func(t *testing.T, i int, p any) {
		tt := rows[i]
		got := []string{}
		for _, e := range p.(*PolicyEventsPayload).Events {
			got = append(got, e.PolicyID+"/"+e.ClusterName+"/"+e.EventName+"="+e.Message)
		}
		if !reflect.DeepEqual(got, tt.want) {
			t.Errorf("events = %v, want %v", got, tt.want)
		}
	})
}

func TestDecodePolicyEventsTime(t *testing.T) {
	p := mustDecode(t, "policyevents", objectsData(
		event("p1", "a", "e1", "", "2026-01-02T03:04:05.5+01:00"),
		event("p1", "a", "e2", "", ""),
	)).(*PolicyEventsPayload)
	if want := time.Date(2026, 1, 2, 2, 4, 5, 5e8, time.UTC); !p.Events[0].Time.Equal(want) {
		t.Errorf("time = %v, want %v", p.Events[0].Time, want)
	}
	if !p.Events[1].Time.IsZero() {
		t.Errorf("missing time decoded as %v, want zero", p.Events[1].Time)
	}
}

// FuzzDecodePolicyEvents: whatever a hub sends, the decoder must not
// panic, and what it accepts is sorted, unique and has its key.
func FuzzDecodePolicyEvents(f *testing.F) {
	for _, tt := range decodeEventsCases {
		f.Add([]byte(tt.data))
	}
	f.Fuzz(func(t *testing.T, data []byte) {
		p, err := decodePolicyEvents(data)
		if err != nil {
			return
		}
		events := p.(*PolicyEventsPayload).Events
		for i, e := range events {
			if err := checkEvent(e); err != nil {
				t.Errorf("event %d: %v", i, err)
			}
			if i > 0 && compareEvent(events[i-1], e) >= 0 {
				t.Errorf("events %d and %d not sorted and unique", i-1, i)
			}
		}
	})
}

// eventRow is one row of stb.policy_events, as tests compare them.
type eventRow struct {
	Message string
	Created time.Time // zero for NULL
	XMin    string
}

// readEvents returns the hub's events by "policy/cluster/event".
func readEvents(t testing.TB, pool *pgxpool.Pool, hub string) map[string]eventRow {
	t.Helper()
	rows, err := pool.Query(t.Context(), `
		SELECT policy_id || '/' || cluster_name || '/' || event_name, message, created_at, xmin::text
		FROM stb.policy_events WHERE hub = $1`, hub)
	if err != nil {
		t.Fatal(err)
	}
	out := map[string]eventRow{}
	var key string
	var r eventRow
	var created *time.Time
	if _, err := pgx.ForEachRow(rows, []any{&key, &r.Message, &created, &r.XMin}, func() error {
		r.Created = time.Time{}
		if created != nil {
			r.Created = created.UTC()
		}
		out[key] = r
		return nil
	}); err != nil {
		t.Fatal(err)
	}
	return out
}

// TestPolicyEvents writes groups of event bundles and checks that each
// event is stored once, with the content it first came with, and that
// replaying a group writes nothing.
func TestPolicyEvents(t *testing.T) {
	t.Parallel()
	pool, _ := dbtest.New(t)
	const hub = "hub-ev"
	bundleOf := func(gen uint64, objects ...any) *bundle.Bundle {
		return newBundle(hub, "policyevents", bundle.Version{Incarnation: 1, Generation: gen}, mustDecode(t, "policyevents", objectsData(objects...)))
	}
	t1 := time.Date(2026, 3, 4, 5, 6, 7, 0, time.UTC)
	b1 := bundleOf(1, event("p1", "a", "e1", "one", t1.Format(time.RFC3339)), event("p1", "b", "e2", "two", t1.Format(time.RFC3339)))
	b2 := bundleOf(2, event("p1", "b", "e2", "two again", ""), event("p2", "a", "e3", "three", t1.Format(time.RFC3339)))
	b3 := bundleOf(3, event("p2", "a", "e3", "three again", ""), event("p2", "a", "e4", "four", ""))

	want := map[string]eventRow{
		"p1/a/e1": {Message: "one", Created: t1},
		"p1/b/e2": {Message: "two", Created: t1},
		"p2/a/e3": {Message: "three", Created: t1},
		"p2/a/e4": {Message: "four", Created: b3.EventTime.UTC()}, // no time of its own: its bundle's
	}
	steps := []struct {
		name        string
		group       []*bundle.Bundle
		wantApplied bool
		want        []string // keys of the rows wanted after the step
	}{
		{"first bundle", []*bundle.Bundle{b1}, true, []string{"p1/a/e1", "p1/b/e2"}},
		{"group of two, duplicates within and across bundles", []*bundle.Bundle{b2, b3}, true, []string{"p1/a/e1", "p1/b/e2", "p2/a/e3", "p2/a/e4"}},
		{"replayed group: fenced", []*bundle.Bundle{b2, b3}, false, []string{"p1/a/e1", "p1/b/e2", "p2/a/e3", "p2/a/e4"}},
		{"older bundle: fenced", []*bundle.Bundle{b1}, false, []string{"p1/a/e1", "p1/b/e2", "p2/a/e3", "p2/a/e4"}},
	}
	for _, st := range steps {
		before := readEvents(t, pool, hub)
		applied, err := apply(t, pool, st.group...)
		if err != nil || applied != st.wantApplied {
			t.Fatalf("%s: Apply = %v, %v; want %v, nil", st.name, applied, err, st.wantApplied)
		}
		got := readEvents(t, pool, hub)
		for _, k := range st.want {
			w, g := want[k], got[k]
			if g.Message != w.Message || !g.Created.Equal(w.Created) {
				t.Errorf("%s: event %s = %q at %v, want %q at %v", st.name, k, g.Message, g.Created, w.Message, w.Created)
			}
			if b, ok := before[k]; ok && b.XMin != g.XMin {
				t.Errorf("%s: event %s was written again", st.name, k)
			}
		}
		if len(got) != len(st.want) {
			t.Errorf("%s: %d events stored, want %d", st.name, len(got), len(st.want))
		}
	}

	// Replayed past the fence (the handler alone, as after a hub reset):
	// ON CONFLICT DO NOTHING still writes nothing twice.
	before := readEvents(t, pool, hub)
	if err := pgx.BeginFunc(t.Context(), pool, func(tx pgx.Tx) error {
		return execPlan(t.Context(), tx, planPolicyEvents, []*bundle.Bundle{b1, b2, b3})
	}); err != nil {
		t.Fatal(err)
	}
	if got := readEvents(t, pool, hub); !maps.Equal(got, before) {
		t.Errorf("replay changed events: %v, were %v", got, before)
	}

	// Neither the event nor its bundle has a time: NULL.
	b4 := bundleOf(4, event("p3", "a", "e5", "five", ""))
	b4.EventTime = time.Time{}
	if applied, err := apply(t, pool, b4); err != nil || !applied {
		t.Fatalf("Apply without times = %v, %v", applied, err)
	}
	if got := readEvents(t, pool, hub)["p3/a/e5"]; !got.Created.IsZero() {
		t.Errorf("event without any time stored at %v, want NULL", got.Created)
	}
}

func TestPolicyEventsBadPayload(t *testing.T) {
	t.Parallel()
	pool, _ := dbtest.New(t)
	v := bundle.Version{Incarnation: 1, Generation: 1}
	b := newBundle("hub-bad", "policyevents", v, &PolicyEventsPayload{Events: []PolicyEvent{{PolicyID: "p", ClusterName: "a"}}})
	applied, err := apply(t, pool, b)
	var pe *PermanentError
	if applied || !errors.As(err, &pe) || pe.Reason != deadletter.BadPayload {
		t.Errorf("Apply = %v, %v; want a bad_payload PermanentError", applied, err)
	}
}
