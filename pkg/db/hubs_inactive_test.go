package db_test

import (
	"slices"
	"testing"
	"time"

	"github.com/jackc/pgx/v5"

	"github.com/stbridge/stb/pkg/db"
)

// TestMarkInactiveHubsReadsBothHeartbeats: a hub is inactive when neither
// STB's own heartbeat (stb.hub_heartbeats) nor the global-hub agent's
// (status.leaf_hub_heartbeats, whose last_timestamp is UTC without a time
// zone) came for the time given; the global-hub agent writes only the
// latter, so a hub of it that heartbeats must not be marked (nor flap:
// marked, then active again at its next write). The session is not in UTC
// (declaredPool), so a last_timestamp read as local time would be hours
// off.
func TestMarkInactiveHubsReadsBothHeartbeats(t *testing.T) {
	pool := declaredPool(t)
	ctx := t.Context()
	for _, q := range []string{
		`INSERT INTO stb.hubs (name, state_since) SELECT h, now() - interval '1 hour'
		 FROM unnest(ARRAY['stb-live', 'stb-quiet', 'gh-live', 'gh-quiet', 'silent']) AS h`,
		`INSERT INTO stb.hub_heartbeats (hub, last_timestamp, received_at) VALUES
		 ('stb-live', now(), now()), ('stb-quiet', now(), now() - interval '10 minutes')`,
		`INSERT INTO status.leaf_hub_heartbeats (leaf_hub_name, last_timestamp) VALUES
		 ('gh-live', now() AT TIME ZONE 'UTC'), ('gh-quiet', (now() - interval '10 minutes') AT TIME ZONE 'UTC')`,
	} {
		if _, err := pool.Exec(ctx, q); err != nil {
			t.Fatalf("%s: %v", q, err)
		}
	}
	n, err := db.MarkInactiveHubs(ctx, pool, 5*time.Minute)
	if err != nil {
		t.Fatal(err)
	}
	rows, err := pool.Query(ctx, `SELECT name FROM stb.hubs WHERE state = 'inactive' ORDER BY name`)
	if err != nil {
		t.Fatal(err)
	}
	inactive, err := pgx.CollectRows(rows, pgx.RowTo[string])
	if err != nil {
		t.Fatal(err)
	}
	if want := []string{"gh-quiet", "silent", "stb-quiet"}; n != 3 || !slices.Equal(inactive, want) {
		t.Errorf("marked %d: %v, want %v", n, inactive, want)
	}
}
