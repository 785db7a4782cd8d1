package work_test

import (
	"errors"
	"math"
	"strconv"
	"strings"
	"testing"

	"github.com/cloudevents/sdk-go/v2/event"

	"github.com/stbridge/stb/dbsyncers/work"
	"github.com/stbridge/stb/pkg/bundle"
	"github.com/stbridge/stb/pkg/deadletter"
)

// TestFamilyReadsAgentStatus reads a status as the agent codec encodes it,
// in binary mode (ce_* headers, as sdk-go's Kafka transport, built on the
// CloudEvents confluent binding, sent it) and in structured mode, and
// checks that every extension lands where the table keeps it.
func TestFamilyReadsAgentStatus(t *testing.T) {
	for _, structured := range []bool{false, true} {
		t.Run(map[bool]string{false: "binary", true: "structured"}[structured], func(t *testing.T) {
			seq := work.SequenceID(baseTime, 3)
			ev := statusEvent(t, agentStatus{cluster: "c1", source: "maestro", resourceID: "6f1c5c6e-uid", generation: 4, seq: seq})
			b := mustRead(t, message(t, ev, structured, 2, 41))
			if b.Hub != "c1" || b.Type != work.BundleType || b.Version.Incarnation != 0 || b.Version.Generation != 0 {
				t.Errorf("bundle of hub %q, type %q, version %v; want c1, %s, 0.0", b.Hub, b.Type, b.Version, work.BundleType)
			}
			if !b.EventTime.Equal(baseTime) {
				t.Errorf("event time %v, want the event's %v", b.EventTime, baseTime)
			}
			s := statusOf(t, b)
			if s.Source != "maestro" || s.ResourceID != "6f1c5c6e-uid" || s.Cluster != "c1" || s.Agent != "c1-work-agent" ||
				s.ResourceVersion != 4 || s.Deleted || s.Type != work.UpdateRequest || s.ID != ev.ID() {
				t.Errorf("status %+v", s.Key())
				t.Errorf("  source %q, id %q, cluster %q, agent %q, rv %d, deleted %v, type %q, event id %q",
					s.Source, s.ResourceID, s.Cluster, s.Agent, s.ResourceVersion, s.Deleted, s.Type, s.ID)
			}
			if got := work.SequenceID(baseTime, 3); seq != got {
				t.Fatalf("SequenceID is not deterministic: %s, %s", seq, got)
			}
			if s.StatusHash != "9f86d081884c7d659a2feaa0c55ad015a3bf4f1b2b0b822cd15d6c15b0f00a08" {
				t.Errorf("status hash %q", s.StatusHash)
			}
			if !strings.Contains(string(s.Metadata), `"generation":4`) {
				t.Errorf("metadata %s, want the work's ObjectMeta", s.Metadata)
			}
			if !jsonEq(s.Status, ev.Data()) {
				t.Errorf("status %s, want the event's data %s", s.Status, ev.Data())
			}
			if s.Topic != "agentevents" || s.Partition != 2 || s.Offset != 41 {
				t.Errorf("origin %s/%d/%d, want agentevents/2/41", s.Topic, s.Partition, s.Offset)
			}
		})
	}
}

// TestFamilyResourceVersionForms checks the forms resourceversion takes:
// a CloudEvents Integer as EventBuilder sets it (int64 → int32), the
// decimal string every binary transport makes of it, and a JSON number in
// structured mode; Maestro reads it with cloudevents types.ToInteger
// (cmd/maestro/server/grpc_broker.go decodeResourceStatus), which takes
// all of them.
func TestFamilyResourceVersionForms(t *testing.T) {
	seq := work.SequenceID(baseTime, 1)
	for _, tc := range []struct {
		name       string
		v          any
		structured bool
		want       int64
	}{
		{"Integer, binary", int64(7), false, 7},
		{"Integer, structured", int32(7), true, 7},
		{"string, binary", "12", false, 12},
		{"string, structured", "12", true, 12},
		{"int32 max", int64(math.MaxInt32), false, math.MaxInt32},
	} {
		t.Run(tc.name, func(t *testing.T) {
			ev := statusEvent(t, agentStatus{cluster: "c1", source: "s", resourceID: "r", generation: 1, seq: seq,
				ext: map[string]any{work.ExtResourceVersion: tc.v}})
			if s := statusOf(t, mustRead(t, message(t, ev, tc.structured, 0, 1))); s.ResourceVersion != tc.want {
				t.Errorf("resource version %d, want %d", s.ResourceVersion, tc.want)
			}
		})
	}
}

// TestFamilyDeletes: a delete is any status event whose conditions hold
// Deleted=True (Maestro's handleStatusUpdate, cmd/maestro/server/
// event_server.go: meta.IsStatusConditionTrue(…, common.ResourceDeleted));
// the older status.delete_request is one by its type and may come without
// a sequence id, which then fences every status of its generation.
func TestFamilyDeletes(t *testing.T) {
	seq := work.SequenceID(baseTime, 9)
	tests := []struct {
		name    string
		s       agentStatus
		deleted bool
		seq     int64
	}{
		{"update with Deleted=True", agentStatus{seq: seq, conditions: deleted}, true, -1},
		{"update with Deleted=False", agentStatus{seq: seq, conditions: []map[string]any{{"type": "Deleted", "status": "False"}}}, false, -1},
		{"resync response with Deleted=True", agentStatus{typ: work.ResyncResponse, seq: seq, conditions: deleted}, true, -1},
		{"delete_request without a sequence id", agentStatus{typ: work.DeleteRequest, data: ptr("")}, true, math.MaxInt64},
		{"Deleted=True without a sequence id", agentStatus{conditions: deleted}, true, math.MaxInt64},
	}
	for _, tc := range tests {
		t.Run(tc.name, func(t *testing.T) {
			tc.s.cluster, tc.s.source, tc.s.resourceID, tc.s.generation = "c1", "s", "r", 2
			for _, structured := range []bool{false, true} {
				s := statusOf(t, mustRead(t, message(t, statusEvent(t, tc.s), structured, 0, 1)))
				if s.Deleted != tc.deleted {
					t.Errorf("structured %v: deleted %v, want %v", structured, s.Deleted, tc.deleted)
				}
				if tc.seq > 0 && s.SequenceID != tc.seq {
					t.Errorf("structured %v: sequence id %d, want %d", structured, s.SequenceID, tc.seq)
				}
			}
		})
	}
}

// TestFamilySkips: what is not a status is counted and skipped, never a
// dead letter: specs (a source's traffic on a shared topic), status resync
// requests (ours and other sources', sdk-go generic/clients/
// sourceclient.go Resync) and heartbeats (types.HeartbeatCloudEventsType).
func TestFamilySkips(t *testing.T) {
	for _, typ := range []string{
		work.TypePrefix + "spec.create_request", work.TypePrefix + "spec.update_request",
		work.TypePrefix + "spec.delete_request", work.TypePrefix + "spec.resync_request",
		work.TypePrefix + "spec.resync_response", work.ResyncRequest, work.HeartbeatType,
	} {
		t.Run(typ, func(t *testing.T) {
			ev := event.New()
			ev.SetID("1")
			ev.SetSource("maestro")
			ev.SetType(typ)
			ev.SetExtension(work.ExtClusterName, "c1")
			ev.SetExtension(work.ExtOriginalSource, "")
			if err := ev.SetData(event.ApplicationJSON, map[string]any{"statusHashes": []any{}}); err != nil {
				t.Fatal(err)
			}
			_, rej := read(t, message(t, ev, false, 0, 1))
			if rej == nil || !rej.Skipped || rej.Reason != "" {
				t.Errorf("%+v, want skipped without a reason", rej)
			}
		})
	}
}

// TestFamilyRejects: bad input is one dead letter with its reason.
func TestFamilyRejects(t *testing.T) {
	seq := work.SequenceID(baseTime, 1)
	otherNode := "1790000000000000000" // bits 12…21 are not node 1
	tests := []struct {
		name string
		s    agentStatus
		want deadletter.Reason
	}{
		{"no resourceid", agentStatus{seq: seq, ext: map[string]any{work.ExtResourceID: nil}}, deadletter.MissingAttribute},
		{"no clustername", agentStatus{seq: seq, ext: map[string]any{work.ExtClusterName: nil}}, deadletter.MissingAttribute},
		{"empty clustername", agentStatus{seq: seq, ext: map[string]any{work.ExtClusterName: ""}}, deadletter.MissingAttribute},
		{"no originalsource", agentStatus{seq: seq, ext: map[string]any{work.ExtOriginalSource: nil}}, deadletter.MissingAttribute},
		{"no resourceversion", agentStatus{seq: seq, ext: map[string]any{work.ExtResourceVersion: nil}}, deadletter.MissingAttribute},
		{"no sequenceid on an update", agentStatus{}, deadletter.MissingAttribute},
		{"resourceversion not a number", agentStatus{seq: seq, ext: map[string]any{work.ExtResourceVersion: "v3"}}, deadletter.MalformedVersion},
		{"resourceversion negative", agentStatus{seq: seq, ext: map[string]any{work.ExtResourceVersion: "-1"}}, deadletter.MalformedVersion},
		{"resourceversion beyond int32", agentStatus{seq: seq, ext: map[string]any{work.ExtResourceVersion: "4294967296"}}, deadletter.MalformedVersion},
		{"sequenceid not decimal", agentStatus{seq: "1a2b"}, deadletter.MalformedVersion},
		{"sequenceid of another snowflake node", agentStatus{seq: otherNode}, deadletter.MalformedVersion},
		{"statushash not sha256 hex", agentStatus{seq: seq, ext: map[string]any{work.ExtStatusHash: "abc"}}, deadletter.BadPayload},
		{"metadata not JSON", agentStatus{seq: seq, ext: map[string]any{work.ExtMetadata: "{name: x"}}, deadletter.BadPayload},
		{"NUL in the metadata", agentStatus{seq: seq, ext: map[string]any{work.ExtMetadata: `{"name":"a\u0000"}`}}, deadletter.BadPayload},
		{"data not an object", agentStatus{seq: seq, data: ptr(`[1,2]`)}, deadletter.BadPayload},
		{"data null", agentStatus{seq: seq, data: ptr(`null`)}, deadletter.BadPayload},
		{"conditions not a list", agentStatus{seq: seq, data: ptr(`{"conditions":{"type":"Applied"}}`)}, deadletter.BadPayload},
		{"a condition without a type", agentStatus{seq: seq, data: ptr(`{"conditions":[{"status":"True"}]}`)}, deadletter.BadPayload},
		{"resourceStatus not a list", agentStatus{seq: seq, data: ptr(`{"conditions":[],"resourceStatus":"x"}`)}, deadletter.BadPayload},
		{"NUL in the status", agentStatus{seq: seq, data: ptr(`{"conditions":[],"x":"a\u0000b"}`)}, deadletter.BadPayload},
		{"truncated data", agentStatus{seq: seq, data: ptr(`{"conditions":[`)}, deadletter.BadPayload},
		{"an unknown status action", agentStatus{typ: work.TypePrefix + "status.patch_request", seq: seq}, deadletter.UnknownType},
	}
	for _, tc := range tests {
		t.Run(tc.name, func(t *testing.T) {
			tc.s.cluster, tc.s.source, tc.s.resourceID, tc.s.generation = "c1", "s", "r", 2
			for _, structured := range []bool{false, true} {
				b, rej := read(t, message(t, statusEvent(t, tc.s), structured, 0, 1))
				if rej == nil {
					t.Fatalf("structured %v: read as %+v, want a %s dead letter", structured, b, tc.want)
				}
				if rej.Skipped || rej.Reason != tc.want {
					t.Errorf("structured %v: %v (skipped %v), want %s", structured, rej, rej.Skipped, tc.want)
				}
				if !strings.Contains(rej.Error(), "work: ") {
					t.Errorf("structured %v: %v does not name the family", structured, rej)
				}
			}
		})
	}
}

// Fuzz the family with arbitrary data: it rejects or reads, never panics,
// and what it reads decodes.
func FuzzFamilyData(f *testing.F) {
	for _, s := range []string{`{"conditions":[]}`, `{"conditions":[{"type":"Deleted","status":"True"}]}`, `[]`, `{`, ``, `{"resourceStatus":[{}]}`} {
		f.Add(s)
	}
	seq := work.SequenceID(baseTime, 1)
	f.Fuzz(func(t *testing.T, data string) {
		ev := statusEvent(t, agentStatus{cluster: "c1", source: "s", resourceID: "r", generation: 1, seq: seq, data: &data})
		b, rej := read(t, message(t, ev, false, 0, 1))
		if rej != nil {
			return
		}
		if err := registry(t).DecodeBundle(b); err != nil {
			t.Fatalf("read %q but cannot decode it: %v", data, err)
		}
	})
}

// TestRawIsTheEventsData: a work.status bundle's Raw is the event's data
// exactly as it came, and the decoder reads the event's attributes from
// the bundle beside it (bundle.Bundle.Attrs). Raw used to carry them in a
// JSON line before the data, because the decoder was handed the bytes
// alone: what a dead letter kept as the event's data was not the event's.
func TestRawIsTheEventsData(t *testing.T) {
	seq := work.SequenceID(baseTime, 4)
	msg := message(t, statusEvent(t, agentStatus{cluster: "c1", source: "maestro", resourceID: "r1", generation: 2, seq: seq}), false, 0, 5)
	b, rej := read(t, msg)
	if rej != nil {
		t.Fatal(rej)
	}
	if string(b.Raw) != string(msg.Value) || b.Size != len(msg.Value) {
		t.Errorf("Raw (size %d) %q\nwant the event's data %q", b.Size, b.Raw, msg.Value)
	}
	// The same bundle with another status's data decodes as this
	// resource's status: the attributes are not in the data.
	other := `{"conditions":[{"type":"Applied","status":"False"}],"resourceStatus":[]}`
	c := *b
	c.Raw = []byte(other)
	if err := registry(t).DecodeBundle(&c); err != nil {
		t.Fatalf("decode with another status's data: %v", err)
	}
	s := statusOf(t, &c)
	if s.Cluster != "c1" || s.Source != "maestro" || s.ResourceID != "r1" || s.ResourceVersion != 2 ||
		strconv.FormatInt(s.SequenceID, 10) != seq || s.Type != work.UpdateRequest || string(s.Status) != other {
		t.Errorf("status %+v with data %s; want resource r1 of maestro, cluster c1, 2/%s, the other data", *s, s.Status, seq)
	}
	// The data without the attributes is no status: a bad_payload.
	err := registry(t).DecodeBundle(&bundle.Bundle{Hub: "c1", Type: work.BundleType, Raw: msg.Value})
	var reasoned deadletter.Reasoned
	if !errors.As(err, &reasoned) || reasoned.DeadLetterReason() != deadletter.BadPayload {
		t.Errorf("a bundle without its attributes: %v, want a bad_payload", err)
	}
}
