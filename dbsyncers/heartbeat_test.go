package dbsyncers

import (
	"testing"
	"time"

	"github.com/stbridge/stb/pkg/bundle"
	"github.com/stbridge/stb/pkg/db/dbtest"
	"github.com/stbridge/stb/pkg/deadletter"
)

func TestDecodeHeartbeat(t *testing.T) {
	rows := []decodeCase{
		{"empty object", `{}`, ""},
		{"empty objects", `{"objects":[]}`, ""},
		{"null objects", `{"objects":null}`, ""},
		{"objects ignored", `{"objects":[{"x":1}]}`, ""},
		{"extra member", `{"objects":[],"agent":"v2"}`, ""},
		{"null", `null`, deadletter.BadPayload},
		{"array", `[]`, deadletter.BadPayload},
		{"string", `"alive"`, deadletter.BadPayload},
		{"objects not a list", `{"objects":{}}`, deadletter.BadPayload},
		{"truncated", `{"objects":[`, deadletter.BadPayload},
		{"trailing data", `{} {}`, deadletter.BadPayload},
		{"empty", ``, deadletter.BadPayload},
	}
	runDecodeCases(t, decodeHeartbeat, len(rows), func(i int) decodeCase { return rows[i] }, func(t *testing.T, i int, p any) {
		if _, ok := p.(*HeartbeatPayload); !ok {
			t.Errorf("decode(%s) = %T, want *HeartbeatPayload", rows[i].data, p)
		}
	})
}

func TestHeartbeat(t *testing.T) {
	t.Parallel()
	pool, _ := dbtest.New(t)
	payload := mustDecode(t, "heartbeat", []byte(`{}`))
	received := time.Date(2026, 5, 6, 7, 8, 9, 0, time.UTC)

	tests := []struct {
		name      string
		eventTime time.Time
		want      time.Time
	}{
		{"event time", time.Date(2026, 5, 6, 7, 0, 0, 0, time.UTC), time.Date(2026, 5, 6, 7, 0, 0, 0, time.UTC)},
		{"later event time replaces it", time.Date(2026, 5, 6, 7, 1, 0, 0, time.UTC), time.Date(2026, 5, 6, 7, 1, 0, 0, time.UTC)},
		{"no event time: receive time", time.Time{}, received},
	}
	for i, tt := range tests {
		b := newBundle("hub-hb", "heartbeat", bundle.Version{Incarnation: 1, Generation: uint64(i + 1)}, payload)
		b.EventTime, b.ReceivedAt = tt.eventTime, received
		before := time.Now()
		if applied, err := apply(t, pool, b); err != nil || !applied {
			t.Fatalf("%s: Apply = %v, %v", tt.name, applied, err)
		}
		var last, at time.Time
		var rows int
		if err := pool.QueryRow(t.Context(), `
			SELECT last_timestamp, received_at, (SELECT count(*) FROM stb.hub_heartbeats)
			FROM stb.hub_heartbeats WHERE hub = 'hub-hb'`).Scan(&last, &at, &rows); err != nil {
			t.Fatalf("%s: %v", tt.name, err)
		}
		if !last.Equal(tt.want) {
			t.Errorf("%s: last_timestamp = %v, want %v", tt.name, last, tt.want)
		}
		// received_at is the database's clock; allow for clock skew within
		// the machine, not for a stale value.
		if at.Before(before.Add(-time.Minute)) {
			t.Errorf("%s: received_at = %v, not updated (test started %v)", tt.name, at, before)
		}
		if rows != 1 {
			t.Errorf("%s: %d heartbeat rows, want 1", tt.name, rows)
		}
	}

	// Neither time known: the database's clock, rather than a dead letter.
	b := newBundle("hub-hb", "heartbeat", bundle.Version{Incarnation: 2}, payload)
	b.EventTime, b.ReceivedAt = time.Time{}, time.Time{}
	if applied, err := apply(t, pool, b); err != nil || !applied {
		t.Fatalf("no times: Apply = %v, %v", applied, err)
	}
	var age time.Duration
	if err := pool.QueryRow(t.Context(), `
		SELECT extract(epoch FROM now() - last_timestamp) * interval '1 second'
		FROM stb.hub_heartbeats WHERE hub = 'hub-hb'`).Scan(&age); err != nil {
		t.Fatal(err)
	}
	if age < 0 || age > time.Minute {
		t.Errorf("no times: last_timestamp is %v old, want the database's now()", age)
	}
}
