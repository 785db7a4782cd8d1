package test

import (
	"context"
	"encoding/json"
	"fmt"
	"maps"
	"os"
	"slices"
	"strconv"
	"strings"
	"testing"
	"time"

	"github.com/jackc/pgx/v5"
	"github.com/twmb/franz-go/pkg/kgo"
	"go.uber.org/zap"

	"github.com/stbridge/stb/pkg/broker"
	"github.com/stbridge/stb/pkg/db"
	"github.com/stbridge/stb/pkg/db/dbtest"
	"github.com/stbridge/stb/pkg/sim"
	"github.com/stbridge/stb/pkg/transport"
)

// upstreamFixture is our DDL of the database upstream's operator creates
// (its head says what it is and cites the upstream files).
const upstreamFixture = "../pkg/db/testdata/upstream_operator_schema.sql"

// upstreamDatabase returns a throwaway database holding what upstream's
// operator creates and nothing of STB's.
func upstreamDatabase(t *testing.T) string {
	t.Helper()
	u := dbtest.Empty(t)
	sql, err := os.ReadFile(upstreamFixture)
	if err != nil {
		t.Fatal(err)
	}
	conn, err := pgx.Connect(t.Context(), u)
	if err != nil {
		t.Fatal(err)
	}
	defer conn.Close(context.Background())
	if _, err := conn.Exec(t.Context(), string(sql)); err != nil {
		t.Fatalf("load %s: %v", upstreamFixture, err)
	}
	return u
}

// newUpstreamEnv is newEnv on a database upstream's operator created and
// STB has not migrated yet: `stb run` migrates it when it starts.
func newUpstreamEnv(t *testing.T) *env {
	t.Helper()
	b, err := broker.Start(broker.Config{Topics: []string{"status"}, Partitions: 1}, zap.NewNop())
	if err != nil {
		t.Fatal(err)
	}
	t.Cleanup(b.Close)
	u := upstreamDatabase(t)
	pool, err := db.Connect(t.Context(), u, 4)
	if err != nil {
		t.Fatal(err)
	}
	t.Cleanup(pool.Close) // before dbtest drops the database
	return &env{t: t, broker: b, brokers: b.Addr(), dbURL: u, pool: pool, dir: t.TempDir()}
}

// upstreamPosition is a status.transport payload as upstream's manager
// writes it (pkg/transport's EventPosition: the topic is in the row's
// name, json:"-"; manager/pkg/status/conflator/conflation_committer.go
// commit) and reads it (pkg/transport/consumer/generic_consumer.go
// getInitOffset).
type upstreamPosition struct {
	Partition     int32  `json:"partition"`
	Offset        int64  `json:"offset"`
	OwnerIdentity string `json:"ownerIdentity"`
}

// TestTakeoverFromUpstreamPositions: STB started on a database upstream's
// manager used, with its positions in status.transport and none of STB's
// own (no stb.partition_owners rows, no bundle versions), resumes from
// them, and leaves positions upstream's manager, started again, would
// resume from.
//
// The global-hub agents' shared topic (sim.GlobalHubSharedTopic, the
// layout of a Kafka the user brings) holds, on each of its four
// partitions, ten managedhub.heartbeat events of hubs of their own, so
// that each message read leaves a stb.bundle_versions row naming its
// partition and offset, and no two are conflated. Upstream's rows are
// "<topic>@<partition>", payload {"partition","offset","ownerIdentity"}
// (conflation_committer.go positionKey and commit), and their offset is
// that of a bundle the manager processed or still held, which it reads
// again itself (getInitOffset starts at it): so STB starts AT it, and
// must read every message from it on and none before it. Upstream trusts
// only rows whose ownerIdentity is its Kafka identity, the built-in
// Kafka's cluster id or, with a Kafka the user brings, the bootstrap
// server (operator/pkg/controllers/transporter/protocol/byo_transporter.go
// GetConnCredential, pkg/transport/controller/controller.go
// config.SetKafkaOwnerIdentity); STB does the same:
//
//   - partition 0: the cluster id, offset 4: messages 4…9 read;
//   - partition 1: the bootstrap servers, offset 7: messages 7…9 read;
//   - partition 2: another Kafka's identity, offset 5: ignored, read from
//     the start (auto.offset.reset earliest);
//   - partition 3: the cluster id, offset 10, the end: nothing read.
//
// Then every row is upstream-shaped (name "<topic>@<partition>", payload
// keys exactly partition, offset and ownerIdentity, the cluster id) at the
// next offset to read, and upstream's getInitOffset, run on the table as
// the manager of the built-in Kafka runs it, starts every partition there.
func TestTakeoverFromUpstreamPositions(t *testing.T) {
	e := newUpstreamEnv(t)
	const topic, parts, perPartition = sim.GlobalHubSharedTopic, 4, 10
	e.createTopic(topic, parts)

	hub := func(p int32, i int64) string { return fmt.Sprintf("takeover-p%d-%02d", p, i) }
	var recs []*kgo.Record
	for p := range int32(parts) {
		for i := range int64(perPartition) {
			msg, err := transport.EncodeGlobalHub(transport.GlobalHubEvent{
				Topic: topic, Hub: hub(p, i), Type: strings.TrimPrefix(sim.TypeGHHeartbeat, "globalhub."),
				Version: "0.0", Data: []byte(`[]`),
			})
			if err != nil {
				t.Fatal(err)
			}
			r := &kgo.Record{Topic: topic, Partition: p, Key: msg.Key, Value: msg.Value}
			for _, h := range msg.Headers {
				r.Headers = append(r.Headers, kgo.RecordHeader{Key: h.Key, Value: h.Value})
			}
			recs = append(recs, r)
		}
	}
	if err := e.producer().ProduceSync(t.Context(), recs...).FirstErr(); err != nil {
		t.Fatal(err)
	}
	ends := e.highWatermarksOf(topic)
	for p := range int32(parts) {
		if ends[p] != perPartition {
			t.Fatalf("partition %d ends at %d, want %d: the offsets below assume one record per offset from 0", p, ends[p], perPartition)
		}
	}

	clusterID := e.broker.ClusterID()
	seeded := map[int32]upstreamPosition{
		0: {0, 4, clusterID},
		1: {1, 7, e.brokers},
		2: {2, 5, "another-kafka-cluster-id"},
		3: {3, perPartition, clusterID},
	}
	firstRead := map[int32]int64{0: 4, 1: 7, 2: 0, 3: perPartition}
	for p, pos := range seeded {
		payload, err := json.Marshal(pos)
		if err != nil {
			t.Fatal(err)
		}
		// As upstream's committer upserts them (timestamps UTC, gorm's
		// defaults): one row per partition, named topic@partition.
		if _, err := e.pool.Exec(t.Context(),
			`INSERT INTO status.transport (name, payload, created_at, updated_at) VALUES ($1, $2, now() AT TIME ZONE 'UTC', now() AT TIME ZONE 'UTC')`,
			topic+"@"+strconv.Itoa(int(p)), payload); err != nil {
			t.Fatal(err)
		}
	}

	b := e.startBridge(ghSharedTopic...)
	e.waitOffsets(map[int32]int64{0: perPartition, 1: perPartition, 2: perPartition, 3: perPartition}, 2*time.Minute)
	b.stop(30 * time.Second)

	// Read: exactly the messages from each partition's start on, each
	// applied from its own partition and offset.
	want := map[string]string{}
	for p := range int32(parts) {
		for i := firstRead[p]; i < perPartition; i++ {
			want[hub(p, i)] = fmt.Sprintf("%s@%d:%d", topic, p, i)
		}
	}
	rows, err := e.pool.Query(t.Context(), `SELECT hub, topic || '@' || "partition" || ':' || "offset" FROM stb.bundle_versions WHERE hub LIKE 'takeover-%'`)
	if err != nil {
		t.Fatal(err)
	}
	got := map[string]string{}
	var h, origin string
	if _, err := pgx.ForEachRow(rows, []any{&h, &origin}, func() error { got[h] = origin; return nil }); err != nil {
		t.Fatal(err)
	}
	for _, k := range slices.Sorted(maps.Keys(got)) {
		if _, ok := want[k]; !ok {
			t.Errorf("hub %s was written (from %s): a message before its partition's stored position was read", k, got[k])
		}
	}
	for _, k := range slices.Sorted(maps.Keys(want)) {
		switch o, ok := got[k]; {
		case !ok:
			t.Errorf("hub %s (%s) was never written: a message at or after its partition's stored position was lost", k, want[k])
		case o != want[k]:
			t.Errorf("hub %s was written from %s, want %s", k, o, want[k])
		}
	}
	e.noDeadLetters()

	// The rows left are upstream's shape, at the next offset to read.
	rows, err = e.pool.Query(t.Context(), `SELECT name, payload::text FROM status.transport ORDER BY name`)
	if err != nil {
		t.Fatal(err)
	}
	var name, payload string
	left := map[string]string{}
	if _, err := pgx.ForEachRow(rows, []any{&name, &payload}, func() error { left[name] = payload; return nil }); err != nil {
		t.Fatal(err)
	}
	if len(left) != parts {
		t.Errorf("status.transport holds %d rows, want one per partition: %v", len(left), left)
	}
	for p := range int32(parts) {
		name := fmt.Sprintf("%s@%d", topic, p)
		raw, ok := left[name]
		if !ok {
			t.Errorf("no row %s", name)
			continue
		}
		var keys map[string]json.RawMessage
		if err := json.Unmarshal([]byte(raw), &keys); err != nil {
			t.Fatalf("%s: %v", name, err)
		}
		if k := slices.Sorted(maps.Keys(keys)); !slices.Equal(k, []string{"offset", "ownerIdentity", "partition"}) {
			t.Errorf("row %s has payload keys %v, want exactly partition, offset, ownerIdentity: %s", name, k, raw)
		}
		var pos upstreamPosition
		if err := json.Unmarshal([]byte(raw), &pos); err != nil {
			t.Fatalf("%s: %v", name, err)
		}
		if want := (upstreamPosition{p, perPartition, clusterID}); pos != want {
			t.Errorf("row %s = %+v, want %+v (the next offset to read, of this cluster)", name, pos, want)
		}
	}

	// Upstream's manager of the built-in Kafka, started again, resumes
	// where STB stopped: getInitOffset's selection and reading, here in
	// SQL and Go.
	rows, err = e.pool.Query(t.Context(), `
		SELECT name, payload FROM status.transport
		WHERE payload->>'ownerIdentity' <> '' AND payload->>'ownerIdentity' = $1`, clusterID)
	if err != nil {
		t.Fatal(err)
	}
	resume := map[string]int64{}
	var raw []byte
	if _, err := pgx.ForEachRow(rows, []any{&name, &raw}, func() error {
		var pos upstreamPosition
		if err := json.Unmarshal(raw, &pos); err != nil {
			return err
		}
		topic := name
		if i := strings.LastIndex(name, "@"); i >= 0 {
			topic = name[:i]
		}
		resume[fmt.Sprintf("%s/%d", topic, pos.Partition)] = pos.Offset
		return nil
	}); err != nil {
		t.Fatal(err)
	}
	wantResume := map[string]int64{}
	for p := range int32(parts) {
		wantResume[fmt.Sprintf("%s/%d", topic, p)] = perPartition
	}
	if !maps.Equal(resume, wantResume) {
		t.Errorf("upstream's manager would resume at %v, want %v", resume, wantResume)
	}
}
