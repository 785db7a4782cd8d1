package test

import (
	"context"
	"encoding/json"
	"strings"
	"testing"
	"time"

	"github.com/cloudevents/sdk-go/protocol/kafka_confluent/v2"
	"github.com/cloudevents/sdk-go/v2/binding"
	"github.com/cloudevents/sdk-go/v2/event"
	"github.com/confluentinc/confluent-kafka-go/v2/kafka"

	"github.com/stbridge/stb/dbsyncers/cne"
	stbbridge "github.com/stbridge/stb/internal/bridge"
)

// cneEvent is one Cloud Native Event to publish: shaped as
// redhat-cne/cloud-event-proxy plugins/ptp_operator/metrics/manager.go
// (GetPTPEventsData: a state and an offset at
// /cluster/node/<node>/<resource>) builds them, with sdk-go's O-RAN v3
// names (pkg/event/event_data.go) or the v1 ones its reader still takes
// (pkg/event/event_unmarshal.go).
type cneEvent struct {
	spec       string // event.CloudEventsVersionV1 or V03
	structured bool
	id, typ    string
	node       string
	at         time.Time
	data       []byte
}

func ptpData(node, state string, offset any, v1 bool) []byte {
	addr := "/cluster/node/" + node + cne.ResourceLockState
	val := func(dataType, valueType string, value any) map[string]any {
		if v1 {
			return map[string]any{"resource": addr, "dataType": dataType, "valueType": valueType, "value": value}
		}
		return map[string]any{"ResourceAddress": addr, "data_type": dataType, "value_type": valueType, "value": value}
	}
	d, _ := json.Marshal(map[string]any{"version": "1.0", "values": []any{
		val("notification", "enumeration", state), val("metric", "decimal64.3", offset)}})
	return d
}

// publishCNE produces the events with the confluent client as the
// CloudEvents Kafka binding writes them (binary mode: ce_* headers;
// structured: the event in the value), keyed by node, and waits for each.
func (e *env) publishCNE(evs ...cneEvent) {
	e.t.Helper()
	p, err := kafka.NewProducer(&kafka.ConfigMap{"bootstrap.servers": e.brokers, "enable.metrics.push": false,
		"partitioner": "murmur2_random", "message.max.bytes": 16 << 20})
	if err != nil {
		e.t.Fatal(err)
	}
	defer p.Close()
	topic := "status"
	for _, c := range evs {
		ev := event.New(c.spec)
		ev.SetID(c.id)
		ev.SetSource(cne.ResourceLockState)
		ev.SetType(c.typ)
		ev.SetTime(c.at)
		if err := ev.SetData(event.ApplicationJSON, c.data); err != nil {
			e.t.Fatal(err)
		}
		ctx := context.Background()
		if c.structured {
			ctx = binding.WithForceStructured(ctx)
		}
		msg := &kafka.Message{TopicPartition: kafka.TopicPartition{Topic: &topic, Partition: kafka.PartitionAny}, Key: []byte(c.node)}
		if err := kafka_confluent.WriteProducerMessage(ctx, binding.ToMessage(&ev), msg); err != nil {
			e.t.Fatal(err)
		}
		done := make(chan kafka.Event, 1)
		if err := p.Produce(msg, done); err != nil {
			e.t.Fatal(err)
		}
		if m := (<-done).(*kafka.Message); m.TopicPartition.Error != nil {
			e.t.Fatal(m.TopicPartition.Error)
		}
	}
}

// cneState returns stb.cne_state as "type address data_type" → value text.
func (e *env) cneState() map[string]string {
	e.t.Helper()
	rows, err := e.pool.Query(context.Background(), `
		SELECT event_type || ' ' || resource_address || ' ' || data_type, coalesce(value_text, value::text) FROM stb.cne_state`)
	if err != nil {
		e.t.Fatal(err)
	}
	defer rows.Close()
	out := map[string]string{}
	for rows.Next() {
		var k, v string
		if err := rows.Scan(&k, &v); err != nil {
			e.t.Fatal(err)
		}
		out[k] = v
	}
	return out
}

// cneLetters returns the dead letters as "reason: error" lines.
func (e *env) cneLetters() []string {
	e.t.Helper()
	rows, err := e.pool.Query(context.Background(), `SELECT reason || ': ' || error FROM stb.dead_letters ORDER BY "partition", "offset"`)
	if err != nil {
		e.t.Fatal(err)
	}
	defer rows.Close()
	var out []string
	for rows.Next() {
		var s string
		if err := rows.Scan(&s); err != nil {
			e.t.Fatal(err)
		}
		out = append(out, s)
	}
	return out
}

// TestCNEEndToEnd: Cloud Native Events of CloudEvents 1.0 and 0.3, in
// binary and structured mode, go through the real reader (the confluent
// client on kfake over TCP) into stb.cne_state, latest per key by
// CloudEvents time: duplicates, late copies and a node whose clock stepped
// back do not take a row backwards; bad events are one dead letter each.
func TestCNEEndToEnd(t *testing.T) {
	e := newEnv(t, 2)
	b := e.startInProcess(func(c *stbbridge.Config) { c.Profiles = []string{"stb", "cne"} })
	at := func(s int) time.Time { return time.Date(2026, 11, 26, 10, 0, s, 5, time.UTC) }
	v1, v03 := event.CloudEventsVersionV1, event.CloudEventsVersionV03
	lock := cne.PtpStateChange

	// The large event: consumers SHOULD accept at least 64 KB (seed 004).
	big := map[string]any{"@odata.type": "#Event.v1_3_0.Event", "Context": strings.Repeat("r", 70<<10)}
	bigData, _ := json.Marshal(map[string]any{"version": "v1.0", "values": []any{map[string]any{
		"resource": "/cluster/node/n3/redfish/v1/Systems", "dataType": "notification", "valueType": "redfish-event", "value": big}}})
	badType, _ := json.Marshal(map[string]any{"version": "1.0", "values": []any{map[string]any{
		"ResourceAddress": "/cluster/node/n1/sync/ptp-status/clock-class", "data_type": "metric", "value_type": "metric", "value": "6"}}})

	evs := []cneEvent{
		// n1: 1.0 binary, then 0.3 structured later, a duplicate of it,
		// and a late copy of an earlier state.
		{spec: v1, id: "a", typ: lock, node: "n1", at: at(0), data: ptpData("n1", "FREERUN", 900, false)},
		{spec: v03, structured: true, id: "b", typ: lock, node: "n1", at: at(2), data: ptpData("n1", "LOCKED", "12", false)},
		{spec: v03, structured: true, id: "b", typ: lock, node: "n1", at: at(2), data: ptpData("n1", "LOCKED", "12", false)},
		{spec: v1, id: "c", typ: lock, node: "n1", at: at(1), data: ptpData("n1", "HOLDOVER", 40, false)},
		// n2 (v1 names): LOCKED at 10 s, then its clock stepped back 8 s:
		// FREERUN stamped 2 s stays out, HOLDOVER stamped 11 s (after the
		// stored time again) is taken.
		{spec: v1, structured: true, id: "d", typ: lock, node: "n2", at: at(10), data: ptpData("n2", "LOCKED", 1, true)},
		{spec: v1, id: "e", typ: lock, node: "n2", at: at(2), data: ptpData("n2", "FREERUN", 5000, true)},
		{spec: v03, id: "f", typ: lock, node: "n2", at: at(11), data: ptpData("n2", "HOLDOVER", 77, true)},
		// n3: a 70 KB redfish event, 1.0 binary and 0.3 structured.
		{spec: v1, id: "g", typ: "event.redfish.alert", node: "n3", at: at(3), data: bigData},
		{spec: v03, structured: true, id: "h", typ: cne.SyncStateChange, node: "n3", at: at(3),
			data: []byte(`{"version":"1.0","values":[{"ResourceAddress":"/cluster/node/n3/sync/sync-status/sync-state","data_type":"notification","value_type":"enumeration","value":"LOCKED"}]}`)},
		// Bad events: one dead letter each.
		{spec: v1, id: "x1", typ: lock, node: "n1", at: at(4), data: []byte(`{"version":"1.0","values":[]}`)},
		{spec: v1, id: "x2", typ: cne.PtpClockClassChange, node: "n1", at: at(4), data: badType},
	}
	e.publishCNE(evs...)

	want := map[string]string{
		lock + " /cluster/node/n1/sync/ptp-status/lock-state notification":                 "LOCKED",
		lock + " /cluster/node/n1/sync/ptp-status/lock-state metric":                       "12",
		lock + " /cluster/node/n2/sync/ptp-status/lock-state notification":                 "HOLDOVER",
		lock + " /cluster/node/n2/sync/ptp-status/lock-state metric":                       "77",
		cne.SyncStateChange + " /cluster/node/n3/sync/sync-status/sync-state notification": "LOCKED",
	}
	deadline := time.Now().Add(time.Minute)
	for {
		st := b.Stats()
		if st.Done() == int64(len(evs)) && len(e.cneLetters()) == 2 {
			break
		}
		if time.Now().After(deadline) {
			t.Fatalf("after a minute: %d of %d messages done, letters %q", st.Done(), len(evs), e.cneLetters())
		}
		time.Sleep(50 * time.Millisecond)
	}
	got := e.cneState()
	for k, v := range want {
		if got[k] != v {
			t.Errorf("%s = %q, want %q", k, got[k], v)
		}
	}
	redfish := got["event.redfish.alert /cluster/node/n3/redfish/v1/Systems notification"]
	if len(got) != len(want)+1 || len(redfish) < 70<<10 {
		t.Errorf("%d rows (want %d), the redfish value %d bytes", len(got), len(want)+1, len(redfish))
	}
	letters := e.cneLetters()
	if len(letters) != 2 || !strings.HasPrefix(letters[0], "bad_payload: ") || !strings.HasPrefix(letters[1], "bad_payload: ") ||
		!strings.Contains(strings.Join(letters, "\n"), cne.ErrEmptyValues.Error()) || !strings.Contains(strings.Join(letters, "\n"), cne.ErrUnknownValueType.Error()) {
		t.Errorf("dead letters %q, want bad_payload for empty values and an unknown value_type", letters)
	}
	var nodes int
	if err := e.pool.QueryRow(context.Background(), `SELECT count(*) FROM stb.bundle_versions WHERE bundle_type = $1`, cne.BundleType).Scan(&nodes); err != nil || nodes != 3 {
		t.Errorf("%d nodes in bundle_versions (%v), want 3", nodes, err)
	}
	t.Logf("cne: %d rows, %d dead letters", len(got), len(letters))
}

// TestCNESimulateVerify: `stb simulate --agent cne` (nodes restarting,
// sending duplicates and late copies, stepping their clocks back, and a
// few bad events), read by `stb run --profiles stb,cne` killed once with
// SIGKILL and started again (a replay from the stored offsets), ends in
// the state `stb verify` expects.
func TestCNESimulateVerify(t *testing.T) {
	e := newEnv(t, 3)
	exp := e.simulate("cne", "--agent", "cne", "--hubs", "12", "--generations", "60", "--seed", "5")
	first := e.startBridge("--profiles", "stb,cne")
	e.waitFirstCommit(time.Minute)
	if err := first.cmd.Process.Kill(); err != nil {
		t.Fatal(err)
	}
	<-first.done
	e.startBridge("--profiles", "stb,cne")
	e.waitVerified(exp, 2*time.Minute)
}
