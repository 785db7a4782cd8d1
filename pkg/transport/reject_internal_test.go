package transport

import (
	"maps"
	"testing"

	"github.com/confluentinc/confluent-kafka-go/v2/kafka"
)

// What a bundle keeps of its message gives a worker's dead letter the
// same key and headers as the message had.
func TestKeptMessageLetter(t *testing.T) {
	for _, tc := range []struct {
		name string
		msg  kafka.Message
	}{
		{"key and headers", kafka.Message{Key: []byte("hub-1"), Headers: []kafka.Header{
			{Key: "ce_id", Value: []byte("e-1")}, {Key: "ce_type", Value: []byte("io.stb.status.heartbeat")},
			{Key: "ce_extversion", Value: []byte("3.7")}, {Key: "empty", Value: nil}}}},
		{"no key, no headers", kafka.Message{}},
		{"a long value", kafka.Message{Key: []byte("k"), Headers: []kafka.Header{{Key: "x", Value: make([]byte, 300)}}}},
	} {
		t.Run(tc.name, func(t *testing.T) {
			key, headers := keepMessage(&tc.msg).Letter()
			if string(key) != string(tc.msg.Key) || (key == nil) != (len(tc.msg.Key) == 0) {
				t.Errorf("key %q, want %q", key, tc.msg.Key)
			}
			if want := headerMap(tc.msg.Headers); !maps.Equal(headers, want) {
				t.Errorf("headers %v, want %v", headers, want)
			}
		})
	}
}
