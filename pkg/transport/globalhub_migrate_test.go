package transport_test

import (
	"strconv"
	"testing"
	"time"

	"github.com/jackc/pgx/v5"
	"github.com/jackc/tern/v2/migrate"
	"go.uber.org/zap"

	"github.com/stbridge/stb/dbsyncers"
	"github.com/stbridge/stb/pkg/bundle"
	"github.com/stbridge/stb/pkg/db"
	"github.com/stbridge/stb/pkg/db/dbtest"
	"github.com/stbridge/stb/pkg/transport"
	schema "github.com/stbridge/stb/sql"
)

// TestGlobalHubRunsSurviveFamilyStateMigration: a bridge restarted on a
// database written before sql/003_family_state.sql (the runs in run_ids
// and start_frames) keeps its runs: the migration converts them into the
// profile's state, and Restore takes them back, so a late copy of a run's
// first event or of a start frame is still stale, not a new run.
func TestGlobalHubRunsSurviveFamilyStateMigration(t *testing.T) {
	pool, url := dbtest.New(t)
	ctx := t.Context()
	conn, err := pgx.Connect(ctx, url)
	if err != nil {
		t.Fatal(err)
	}
	defer conn.Close(ctx)
	m, err := migrate.NewMigrator(ctx, conn, db.VersionTable)
	if err != nil {
		t.Fatal(err)
	}
	if err := m.LoadMigrations(schema.Migrations); err != nil {
		t.Fatal(err)
	}
	if err := m.MigrateTo(ctx, 2); err != nil {
		t.Fatalf("down to the schema before family_state: %v", err)
	}

	// A bridge of that schema wrote run 2 of hub1's managed clusters: its
	// first event "r2-start", a resync frame "r2-frame" at its version.
	gh := transport.NewGlobalHub()
	rules := ghRules(t)
	decode := func(gh *transport.GlobalHub, id, version string, offset int64) *bundle.Bundle {
		t.Helper()
		msg := ghEncode(t, transport.GlobalHubEvent{Topic: "gh-status.hub1", Hub: "hub1", Type: "managedcluster", Version: version, Data: []byte(`[]`)})
		setHeader(msg, "ce_id", id)
		b, rej := gh.Decode(consumed(msg, 0, offset), rules, time.Now())
		if rej != nil {
			t.Fatalf("%s: %v", id, rej)
		}
		return b
	}
	decode(gh, "r1-start", "0.9", 0)
	start := decode(gh, "r2-start", "0.1", 1)
	frame := decode(gh, "r2-frame", "0.1", 2)
	if frame.StartFrame == 0 || start.RunID != "r2-start" {
		t.Fatalf("run 2: run id %q, start frame %d", start.RunID, frame.StartFrame)
	}
	if _, err := conn.Exec(ctx, `
		INSERT INTO stb.bundle_versions (hub, bundle_type, incarnation, generation, topic, "partition", "offset", run_ids, start_frames)
		VALUES ('hub1', $1, $2::text::numeric, $3::text::numeric, 'gh-status.hub1', 0, 2, $4, $5),
		       ('hub1', 'heartbeat', 1, 1, 'status', 0, 0, '{}', '{}')`,
		dbsyncers.GHManagedCluster, uint64ToText(frame.Version.Incarnation), uint64ToText(frame.Version.Generation),
		[]string{"r1-start", "r2-start"}, []int64{frame.StartFrame}); err != nil {
		t.Fatal(err)
	}

	if from, to, err := db.Migrate(ctx, url, zap.NewNop()); err != nil || from != 2 || to < 3 {
		t.Fatalf("Migrate = %d, %d, %v; want from 2 to 3 or later", from, to, err)
	}
	versions, err := db.LoadHubVersions(ctx, pool, "hub1")
	if err != nil {
		t.Fatal(err)
	}
	restarted := transport.NewGlobalHub()
	for _, v := range versions {
		if v.Type == "heartbeat" && v.FamilyState != nil {
			t.Errorf("heartbeat: family state %s, want none", v.FamilyState)
		}
		restarted.Restore(v.Hub, v.Type, v.Version, v.Origin, v.FamilyState)
	}
	// Read again past the stored offset: copies, not new runs.
	for i, id := range []string{"r2-start", "r2-frame", "r1-start"} {
		if b := decode(restarted, id, "0.1", int64(10+i)); b.Version != (bundle.Version{}) {
			t.Errorf("late copy of %s after the migration: %v, want stale", id, b.Version)
		}
	}
	if b := decode(restarted, "r2-next", "1.2", 20); b.Version != (bundle.Version{Incarnation: 2<<32 | 1, Generation: 2}) {
		t.Errorf("next event of run 2 after the migration: %v, want run 2", b.Version)
	}
}

func uint64ToText(v uint64) string { return strconv.FormatUint(v, 10) }
