package transport

import (
	"context"
	"time"

	"github.com/cloudevents/sdk-go/protocol/kafka_confluent/v2"
	"github.com/confluentinc/confluent-kafka-go/v2/kafka"

	"github.com/stbridge/stb/pkg/bundle"
)

// DecodeThroughEvent is Decode reading every message through the
// binding's event.Event, as Decode did before attrsWriter.
func DecodeThroughEvent(msg *kafka.Message, rules Rules, receivedAt time.Time) (*bundle.Bundle, *Reject) {
	return decode(readEvent, msg, rules, receivedAt)
}

// DecodeThroughEvent is GlobalHub.Decode reading every message through the
// binding's event.Event.
func (g *GlobalHub) DecodeThroughEvent(msg *kafka.Message, rules Rules, receivedAt time.Time) (*bundle.Bundle, *Reject) {
	return g.decodeWith(readEvent, msg, rules, receivedAt)
}

// ReadsPlainBinary reports whether Decode reads msg without the binding's
// event.
func ReadsPlainBinary(msg *kafka.Message) bool { return plainBinaryV1(msg) }

// DecodeThroughBindingReader is Decode with attrsWriter fed by the
// kafka_confluent binding's own ReadBinary (headers copied into its map)
// instead of attrsWriter.read: what the benchmark compares read with.
func DecodeThroughBindingReader(msg *kafka.Message, rules Rules, receivedAt time.Time) (*bundle.Bundle, *Reject) {
	return decode(func(msg *kafka.Message, raw rawAttrs) (*eventAttrs, error) {
		if !plainBinaryV1(msg) {
			return readEvent(msg, raw)
		}
		w := newAttrsWriter()
		if err := kafka_confluent.NewMessage(msg).ReadBinary(context.Background(), w); err != nil {
			return nil, err
		}
		return &w.a, nil
	}, msg, rules, receivedAt)
}
