package transport_test

import (
	"bytes"
	"strconv"
	"testing"
	"time"

	"github.com/stbridge/stb/pkg/transport"
)

// TestEncodeGlobalHub checks the message the encoder makes as the agent's
// producer does: keyed by the full type, the extensions as headers, chunk
// marks only on a chunk.
func TestEncodeGlobalHub(t *testing.T) {
	at := time.Date(2026, 3, 1, 12, 0, 0, 0, time.UTC)
	m, err := transport.EncodeGlobalHub(transport.GlobalHubEvent{
		Topic: "gh-status", Hub: "hub1", Type: "managedclustermigration", ID: "id-1", Version: "0.1", Time: at,
		Extensions: map[string]string{"migrationid": "m-1", "migrationstage": "Validating", "clustername": "global-hub"},
		Data:       []byte(`{"managedClusters":["c1"]}`),
	})
	if err != nil {
		t.Fatal(err)
	}
	if string(m.Key) != transport.GlobalHubEventTypePrefix+"managedclustermigration" || *m.TopicPartition.Topic != "gh-status" {
		t.Fatalf("key %q, topic %s", m.Key, *m.TopicPartition.Topic)
	}
	for k, want := range map[string]string{
		"ce_id": "id-1", "ce_source": "hub1", "ce_extversion": "0.1", "ce_migrationid": "m-1",
		"ce_migrationstage": "Validating", "ce_clustername": "global-hub",
	} {
		if got, _ := header(m, k); got != want {
			t.Errorf("%s = %q, want %q", k, got, want)
		}
	}
	for _, k := range []string{"ce_extsize", "ce_extoffset", "ce_sendmode", "ce_extdependencyversion"} {
		if v, ok := header(m, k); ok {
			t.Errorf("%s = %q on a whole event without it", k, v)
		}
	}

	chunk, err := transport.EncodeGlobalHub(transport.GlobalHubEvent{
		Topic: "gh-status.hub1", Hub: "hub1", Type: "event.managedcluster", Version: "3.7", SendMode: "batch",
		ChunkSize: 100, ChunkEnd: 60, Data: bytes.Repeat([]byte("x"), 30),
	})
	if err != nil {
		t.Fatal(err)
	}
	size, _ := header(chunk, "ce_extsize")
	end, _ := header(chunk, "ce_extoffset")
	mode, _ := header(chunk, "ce_sendmode")
	if size != "100" || end != "60" || mode != "batch" {
		t.Errorf("chunk headers: extsize %q, extoffset %q, sendmode %q", size, end, mode)
	}
	for _, bad := range []transport.GlobalHubEvent{
		{ChunkSize: 10, ChunkEnd: 20, Data: []byte("x")},  // ends past the whole
		{ChunkSize: 10, ChunkEnd: 2, Data: []byte("xyz")}, // ends before its own length
	} {
		bad.Topic, bad.Hub, bad.Type, bad.Version = "t", "h", "managedcluster", "1.1"
		if _, err := transport.EncodeGlobalHub(bad); err == nil {
			t.Errorf("chunk of %d bytes ending at %d of %d encoded", len(bad.Data), bad.ChunkEnd, bad.ChunkSize)
		}
	}
}

// TestChunkGlobalHubFreshIDs: as the agent's CloudEvents client gives
// every send a new id, chunks of an event without an id have ids of their
// own, and extoffset is where each ends.
func TestChunkGlobalHubFreshIDs(t *testing.T) {
	data := bytes.Repeat([]byte(`{"a":1},`), 30)
	msgs, err := transport.ChunkGlobalHub(transport.GlobalHubEvent{
		Topic: "gh-status", Hub: "hub1", Type: "policy.localcompliance", Version: "2.5", Data: data,
	}, 64)
	if err != nil {
		t.Fatal(err)
	}
	ids := map[string]bool{}
	end := 0
	for i, m := range msgs {
		id, _ := header(m, "ce_id")
		off, _ := header(m, "ce_extoffset")
		size, _ := header(m, "ce_extsize")
		end += len(m.Value)
		if ids[id] || off != strconv.Itoa(end) || size != strconv.Itoa(len(data)) || len(m.Value) > 64 {
			t.Fatalf("chunk %d: id %s (seen %v), extoffset %s, extsize %s, %d bytes", i, id, ids[id], off, size, len(m.Value))
		}
		ids[id] = true
	}
	if end != len(data) || len(msgs) != (len(data)+63)/64 {
		t.Fatalf("%d chunks of %d bytes", len(msgs), end)
	}
}
