package dbsyncers

import (
	"testing"
	"time"

	"github.com/stbridge/stb/pkg/bundle"
	"github.com/stbridge/stb/pkg/db/dbtest"
)

func TestDecodeHeartbeat(t *testing.T) {
	tests := []struct {
		name    string
		data    string
		wantErr bool
	}{
		{"empty object", `{}`, false},
		{"empty objects", `{"objects":[]}`, false},
		{"null objects", `{"objects":null}`, false},
		{"objects ignored", `{"objects":[{"x":1}]}`, false},
		{"extra member", `{"objects":[],"agent":"v2"}`, false},
		{"null", `null`, true},
		{"array", `[]`, true},
		{"string", `"alive"`, true},
		{"objects not a list", `{"objects":{}}`, true},
		{"truncated", `{"objects":[`, true},
		{"trailing data", `{} {}`, true},
		{"empty", ``, true},
	}
	for _, tt := range tests {
		t.Run(tt.name, func(t *testing.T) {
			p, err := decodeHeartbeat([]byte(tt.data))
			if (err != nil) != tt.wantErr {
				t.Fatalf("decode(%s) error = %v, want error %v", tt.data, err, tt.wantErr)
			}
			if err == nil {
				if _, ok := p.(*HeartbeatPayload); !ok {
					t.Errorf("decode(%s) = %T, want *HeartbeatPayload", tt.data, p)
				}
			}
		})
	}
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
			SELECT last_timestamp, received_at, (SELECT count(*) FROM status.hub_heartbeats)
			FROM status.hub_heartbeats WHERE hub = 'hub-hb'`).Scan(&last, &at, &rows); err != nil {
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
		FROM status.hub_heartbeats WHERE hub = 'hub-hb'`).Scan(&age); err != nil {
		t.Fatal(err)
	}
	if age < 0 || age > time.Minute {
		t.Errorf("no times: last_timestamp is %v old, want the database's now()", age)
	}
}
