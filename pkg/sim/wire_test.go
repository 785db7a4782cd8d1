package sim

import (
	"errors"
	"maps"
	"testing"
	"time"

	"github.com/confluentinc/confluent-kafka-go/v2/kafka"

	"github.com/stbridge/stb/pkg/bundle"
	"github.com/stbridge/stb/pkg/transport"
)

// headers returns msg's headers as a map; a header twice fails the test.
func headers(t *testing.T, msg *kafka.Message) map[string]string {
	t.Helper()
	h := map[string]string{}
	for _, kv := range msg.Headers {
		if _, dup := h[kv.Key]; dup {
			t.Fatalf("header %s twice", kv.Key)
		}
		h[kv.Key] = string(kv.Value)
	}
	return h
}

// TestEncodersAgreeWithTheBridgesTestEncoders: the simulator spells the
// senders' wire formats itself; what it writes is what the bridge's own
// test encoders (transport.Encode, transport.EncodeGlobalHub) write for the
// same message, header for header, key and value: two spellings of one
// format, each from its definition, checked against each other.
func TestEncodersAgreeWithTheBridgesTestEncoders(t *testing.T) {
	at := time.Date(2026, 3, 4, 5, 6, 7, 8, time.UTC)
	dep := bundle.Version{Incarnation: 2, Generation: 9}
	m := Message{Topic: "status", Hub: "hub-1", Type: "compliance", ID: "id-1", Version: bundle.Version{Incarnation: 2, Generation: 10},
		Dependency: &dep, Time: at, Data: []byte(`{"a":1}`)}

	got, err := EncodeSTB(m, "")
	if err != nil {
		t.Fatal(err)
	}
	want, err := transport.Encode(transport.Envelope(m), transport.DefaultTypePrefix)
	if err != nil {
		t.Fatal(err)
	}
	same := func(name string, got, want *kafka.Message) {
		t.Helper()
		if g, w := headers(t, got), headers(t, want); !maps.Equal(g, w) {
			t.Errorf("%s: headers %v, the bridge's encoder writes %v", name, g, w)
		}
		if string(got.Key) != string(want.Key) || string(got.Value) != string(want.Value) || *got.TopicPartition.Topic != *want.TopicPartition.Topic {
			t.Errorf("%s: key %q value %q topic %s, the bridge's encoder writes %q %q %s", name, got.Key, got.Value, *got.TopicPartition.Topic,
				want.Key, want.Value, *want.TopicPartition.Topic)
		}
	}
	same("STB", got, want)

	gh := GHMessage{Message: Message{Topic: GlobalHubTopicPrefix + "hub-1", Hub: "hub-1", Type: TypeGHMigration, ID: "id-2",
		Version: bundle.Version{Incarnation: 3, Generation: 4}, Time: at, Data: []byte(`[{"x`)},
		SendMode: SendModeSingle, Extensions: map[string]string{ghExtMigrationID: "m-1", ghExtMigrationStage: "Deploying"},
		ChunkSize: 12, ChunkEnd: 4}
	gotGH, err := EncodeGH(gh)
	if err != nil {
		t.Fatal(err)
	}
	wantGH, err := transport.EncodeGlobalHub(transport.GlobalHubEvent{Topic: gh.Topic, Hub: gh.Hub, Type: "managedclustermigration", ID: gh.ID,
		Version: "3.4", SendMode: gh.SendMode, Extensions: gh.Extensions, ChunkSize: 12, ChunkEnd: 4, Time: at, Data: gh.Data})
	if err != nil {
		t.Fatal(err)
	}
	same("global hub", gotGH, wantGH)

	for _, bad := range []GHMessage{
		{Message: Message{Topic: "t", Hub: "h", Type: "managedcluster"}},                           // not under bundle.GlobalHubPrefix
		{Message: Message{Topic: "t", Hub: "h", Type: TypeGHHeartbeat}, ChunkSize: 2, ChunkEnd: 3}, // ends beyond the data's length
	} {
		if _, err := EncodeGH(bad); !errors.Is(err, ErrInvalidMessage) {
			t.Errorf("EncodeGH(%+v) = %v, want ErrInvalidMessage", bad, err)
		}
	}
	if _, err := EncodeSTB(Message{Topic: "t", Type: "heartbeat"}, ""); !errors.Is(err, ErrInvalidMessage) {
		t.Errorf("EncodeSTB without a hub = %v, want ErrInvalidMessage", err)
	}
}
