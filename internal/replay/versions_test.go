package replay

import (
	"context"
	"strings"
	"sync"
	"testing"

	"github.com/jackc/pgx/v5"
	"github.com/jackc/pgx/v5/pgxpool"
	"go.uber.org/zap"

	"github.com/stbridge/stb/dbsyncers"
	"github.com/stbridge/stb/pkg/bundle"
	"github.com/stbridge/stb/pkg/db/dbtest"
	"github.com/stbridge/stb/pkg/deadletter"
	"github.com/stbridge/stb/pkg/transport"
)

// versionReads counts the rows that SELECTs on stb.bundle_versions return
// through a pool (pgx.QueryTracer), and the hubs they were asked for.
type versionReads struct {
	mu    sync.Mutex
	rows  int64
	calls []string
}

type traceKey struct{}

func (v *versionReads) TraceQueryStart(ctx context.Context, _ *pgx.Conn, d pgx.TraceQueryStartData) context.Context {
	if !strings.Contains(d.SQL, "stb.bundle_versions") || !strings.HasPrefix(strings.TrimSpace(d.SQL), "SELECT") {
		return ctx
	}
	hub := "(every hub)"
	if len(d.Args) > 0 {
		if s, ok := d.Args[0].(string); ok {
			hub = s
		}
	}
	return context.WithValue(ctx, traceKey{}, hub)
}

func (v *versionReads) TraceQueryEnd(ctx context.Context, _ *pgx.Conn, d pgx.TraceQueryEndData) {
	hub, ok := ctx.Value(traceKey{}).(string)
	if !ok || d.Err != nil {
		return
	}
	v.mu.Lock()
	defer v.mu.Unlock()
	v.rows += d.CommandTag.RowsAffected()
	v.calls = append(v.calls, hub)
}

// TestReplayLoadsOnlyTheLettersHub: a replay with the global-hub profile
// (the default) must know the agent's runs of the letter's hub to number
// its event, and only those. It loaded the whole of stb.bundle_versions
// (db.LoadVersions) for every replay, in the running bridge's heap when
// the console asks: millions of rows at 200,000 hubs for one letter. The
// letter here is applied only if its hub's runs are known (a first read
// would file it under run 1, older than the run 2 stored), and the rows
// read are the letter's hub's alone, whatever the other hubs hold.
func TestReplayLoadsOnlyTheLettersHub(t *testing.T) {
	url := dbtest.URL(t)
	ctx := context.Background()
	reads := &versionReads{}
	pcfg, err := pgxpool.ParseConfig(url)
	if err != nil {
		t.Fatal(err)
	}
	pcfg.ConnConfig.Tracer = reads
	pool, err := pgxpool.NewWithConfig(ctx, pcfg)
	if err != nil {
		t.Fatal(err)
	}
	t.Cleanup(pool.Close)

	const others = 2000
	// Every other hub holds a heartbeat and a managed cluster version.
	if _, err := pool.Exec(ctx, `
		INSERT INTO stb.bundle_versions (hub, bundle_type, incarnation, generation, topic, "partition", "offset", family_state)
		SELECT format('other-%s', i), t, (1::numeric * 4294967296), i, 'status', 0, i, jsonb_build_object('run_ids', jsonb_build_array(format('start-%s', i)))
		FROM generate_series(1, $1::int) AS i, unnest(ARRAY[$2, $3]) AS t`,
		others, dbsyncers.GHHeartbeat, dbsyncers.GHManagedCluster); err != nil {
		t.Fatal(err)
	}
	// hub-a's agent is in its second run (incarnation 2<<32 | 1), at 1.3,
	// read at offset 2, started by event start-2.
	if _, err := pool.Exec(ctx, `
		INSERT INTO stb.bundle_versions (hub, bundle_type, incarnation, generation, topic, "partition", "offset", family_state)
		VALUES ('hub-a', $1, 2::numeric * 4294967296 + 1, 3, 'status', 0, 2, '{"run_ids": ["start-1", "start-2"]}')`, dbsyncers.GHHeartbeat); err != nil {
		t.Fatal(err)
	}
	reads.mu.Lock()
	reads.rows, reads.calls = 0, nil
	reads.mu.Unlock()

	// A heartbeat of that run at 1.5, read at offset 5, dead-lettered
	// when read (too large for the limit of the time).
	msg, err := transport.EncodeGlobalHub(transport.GlobalHubEvent{Topic: "status", Hub: "hub-a",
		Type: strings.TrimPrefix(dbsyncers.GHHeartbeat, bundle.GlobalHubPrefix), ID: "beat-5", Version: "1.5", Data: []byte(`[]`)})
	if err != nil {
		t.Fatal(err)
	}
	h := map[string]string{}
	for _, x := range msg.Headers {
		h[x.Key] = string(x.Value)
	}
	store(t, pool, deadletter.Letter{Hub: "hub-a", Type: dbsyncers.GHHeartbeat, Version: "1.5",
		Origin: bundle.Origin{Topic: "status", Partition: 0, Offset: 5}, Reason: deadletter.TooLarge,
		Headers: h, Data: msg.Value, Key: msg.Key})

	var results []Result
	if _, err := Run(ctx, pool, DefaultConfig(), zap.NewNop(), func(r Result) { results = append(results, r) }); err != nil {
		t.Fatal(err)
	}
	if len(results) != 1 || results[0].Outcome != deadletter.ReplayApplied {
		t.Fatalf("results %+v, want the heartbeat applied", results)
	}
	if v, ok := held(t, pool, "hub-a", dbsyncers.GHHeartbeat); !ok || v != (bundle.Version{Incarnation: 2<<32 | 1, Generation: 5}) {
		t.Fatalf("hub-a heartbeat stored at %v (%v), want run 2 at 1.5", v, ok)
	}
	reads.mu.Lock()
	defer reads.mu.Unlock()
	t.Logf("a replay of one letter read %d rows of stb.bundle_versions in %d queries (hubs asked: %v); %d rows of other hubs are stored",
		reads.rows, len(reads.calls), reads.calls, 2*others)
	if reads.rows > int64(len(reads.calls)) {
		t.Errorf("the replay read %d rows of stb.bundle_versions in %d queries, want hub-a's one row per query", reads.rows, len(reads.calls))
	}
	for _, hub := range reads.calls {
		if hub != "hub-a" {
			t.Errorf("the replay read the versions of %s, want hub-a's alone", hub)
		}
	}
}
