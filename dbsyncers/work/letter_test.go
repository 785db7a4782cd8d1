package work_test

import (
	"maps"
	"testing"

	"github.com/confluentinc/confluent-kafka-go/v2/kafka"

	"github.com/stbridge/stb/dbsyncers/work"
	"github.com/stbridge/stb/pkg/bundle"
)

// TestEventOfRebuildsTheEvent: a worker's dead letter of a work.status
// bundle kept the bundle's Raw (then a line of the event's attributes,
// then the data) as the event's data, which a replay handed to
// Family.Bundle as data: bad_payload ("invalid character '{' after
// top-level value"). The event rebuilt from the bundle (EventOf: its
// Attrs as binary-mode headers, its Raw as the data) reads back into the
// same bundle, from either mode and for every kind of status, a delete
// without a sequence id included. Raw is now the event's data itself.
func TestEventOfRebuildsTheEvent(t *testing.T) {
	seq := work.SequenceID(baseTime, 9)
	for _, tc := range []struct {
		name string
		s    agentStatus
	}{
		{"update", agentStatus{seq: seq}},
		{"resync response, deleted", agentStatus{typ: work.ResyncResponse, seq: seq, conditions: deleted}},
		{"delete_request without a sequence id or data", agentStatus{typ: work.DeleteRequest, data: ptr("")}},
		{"without hash or metadata", agentStatus{seq: seq, noHash: true, noMeta: true}},
	} {
		for _, structured := range []bool{false, true} {
			t.Run(tc.name+map[bool]string{false: ", binary", true: ", structured"}[structured], func(t *testing.T) {
				tc.s.cluster, tc.s.source, tc.s.resourceID, tc.s.generation = "c1", "s", "r", 2
				msg := message(t, statusEvent(t, tc.s), structured, 3, 17)
				first, rej := read(t, msg)
				if rej != nil {
					t.Fatal(rej)
				}
				headers, data, ok := work.Family{}.EventOf(first)
				if !ok {
					t.Fatal("EventOf: not the family's")
				}
				again, rej := read(t, rebuilt(msg, headers, data))
				if rej != nil {
					t.Fatalf("the rebuilt event is rejected: %v (headers %v)", rej, headers)
				}
				if string(again.Raw) != string(first.Raw) || again.Hub != first.Hub || again.Type != first.Type {
					t.Fatalf("rebuilt: %s %q\n%s\nwant %s %q\n%s", again.Type, again.Hub, again.Raw, first.Type, first.Hub, first.Raw)
				}
				// Handing the Raw itself as the data is what failed; it is
				// the data now, and the attributes read back the same.
				if string(data) != string(first.Raw) {
					t.Errorf("EventOf's data %q is not the bundle's Raw %q", data, first.Raw)
				}
				if h, d, _ := (work.Family{}).EventOf(again); !maps.Equal(h, headers) || string(d) != string(data) {
					t.Errorf("the rebuilt bundle's event: %v %q\nwant %v %q", h, d, headers, data)
				}
			})
		}
	}
	if _, _, ok := (work.Family{}).EventOf(&bundle.Bundle{Type: "heartbeat", Raw: []byte("{}")}); ok {
		t.Error("EventOf took another type's bundle")
	}
	if _, _, ok := (work.Family{}).EventOf(&bundle.Bundle{Type: work.BundleType, Raw: []byte(`{"conditions":[]}`)}); ok {
		t.Error("EventOf took a bundle without the event's attributes")
	}
}

// rebuilt is msg as a replay rebuilds it from a stored letter: headers,
// the key and data, at msg's place.
func rebuilt(msg *kafka.Message, headers map[string]string, data []byte) *kafka.Message {
	out := &kafka.Message{TopicPartition: msg.TopicPartition, Key: msg.Key, Value: data, Timestamp: msg.Timestamp}
	for k, v := range headers {
		out.Headers = append(out.Headers, kafka.Header{Key: k, Value: []byte(v)})
	}
	return out
}
