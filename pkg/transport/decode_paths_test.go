package transport_test

import (
	"reflect"
	"strconv"
	"strings"
	"testing"
	"time"

	"github.com/confluentinc/confluent-kafka-go/v2/kafka"

	"github.com/stbridge/stb/pkg/bundle"
	"github.com/stbridge/stb/pkg/transport"
)

// pathSeeds are messages of every decode case of both profiles, and the
// same messages in the shapes only the binding's whole way reads: a
// header key with capitals, a header repeated, and structured mode.
func pathSeeds(t testing.TB) []*kafka.Message {
	var msgs []*kafka.Message
	for i, tc := range decodeCases() {
		msgs = append(msgs, consumed(tc.build(t, "status", "hub-"+strconv.Itoa(i)), 0, int64(i)))
	}
	for i, c := range ghCases() {
		msgs = append(msgs, consumed(c.build(t, "gh-status.hub1", "hub1"), 0, int64(i)))
	}
	base := consumed(mustEncode(t, validEnvelope("status", "hub-1")), 0, 1)
	variant := func(change func(m *kafka.Message)) {
		m := *base
		m.Headers = append([]kafka.Header(nil), base.Headers...)
		change(&m)
		msgs = append(msgs, &m)
	}
	variant(func(m *kafka.Message) { m.Headers[0].Key = strings.ToUpper(m.Headers[0].Key) })
	variant(func(m *kafka.Message) {
		m.Headers = append(m.Headers, kafka.Header{Key: "CE_EXTVERSION", Value: []byte("9.9")})
	})
	variant(func(m *kafka.Message) {
		m.Headers = append(m.Headers, kafka.Header{Key: "ce_extversion", Value: []byte("9.9")})
	})
	variant(func(m *kafka.Message) {
		m.Headers = append(m.Headers, kafka.Header{Key: "ce_source", Value: []byte("hub-2")})
	})
	variant(func(m *kafka.Message) {
		m.Headers = append(m.Headers, kafka.Header{Key: "content-type", Value: []byte("application/json")},
			kafka.Header{Key: "ce_subject", Value: []byte(" s ")}, kafka.Header{Key: "ce_dataschema", Value: []byte("http://x/%zz")})
	})
	variant(func(m *kafka.Message) {
		m.Headers = append(m.Headers, kafka.Header{Key: "ce_", Value: []byte("x")})
	})
	variant(func(m *kafka.Message) { setHeader(m, "ce_id", " ") })
	variant(func(m *kafka.Message) { setHeader(m, "ce_source", "a b%zz") })
	variant(func(m *kafka.Message) { setHeader(m, "ce_time", "0001-01-01T00:00:00Z") })
	structured := func(value string) {
		variant(func(m *kafka.Message) {
			m.Headers = []kafka.Header{{Key: "content-type", Value: []byte("application/cloudevents+json; charset=utf-8")}}
			m.Value = []byte(value)
		})
	}
	structured(`{"specversion":"1.0","id":"e1","source":"hub-1","type":"io.stb.status.v1.heartbeat","extversion":"2.3","time":"2026-01-02T03:04:05Z","data":{}}`)
	structured(`{"specversion":"1.0","id":"e1","source":"hub-1","type":"io.stb.status.v1.heartbeat","extversion":7,"data":{}}`)
	structured(`{"specversion":"1.0","id":"e1","source":"hub1","type":"io.open-cluster-management.operator.multiclusterglobalhubs.managedhub.heartbeat","extversion":"1.1","data":[]}`)
	structured(`{"specversion":"1.0","id":"e1","source":"hub1","type":"io.open-cluster-management.operator.multiclusterglobalhubs.managedhub.heartbeat","extversion":"1.1","authedhub":"hub2","data":[]}`)
	structured(`{"specversion":"1.0","id":"e1","source":"hub1","type":"io.open-cluster-management.operator.multiclusterglobalhubs.managedhub.heartbeat","extversion":"1.1","authedhub":7,"data":[]}`)
	structured(`{"specversion":"0.3","id":"e1","source":"hub-1","type":"io.stb.status.v1.heartbeat","extversion":"2.3","data":{}}`)
	structured(`not json`)
	return msgs
}

// FuzzDecodePaths: Decode, which reads plain binary-mode messages with
// attrsWriter, decodes every message exactly as the binding's event.Event
// does, for both profiles: the same bundle, or a reject for the same
// reason, hub, type and version; so does attrsWriter fed by the binding's
// own ReadBinary.
func FuzzDecodePaths(f *testing.F) {
	for _, m := range pathSeeds(f) {
		f.Add(*m.TopicPartition.Topic, m.TopicPartition.Partition, int64(m.TopicPartition.Offset), m.Key, m.Value, packHeaders(m.Headers))
	}
	rules := ghRules(f)
	f.Fuzz(func(t *testing.T, topic string, partition int32, offset int64, key, value, headers []byte) {
		msg := &kafka.Message{
			TopicPartition: kafka.TopicPartition{Topic: &topic, Partition: partition, Offset: kafka.Offset(offset)},
			Key:            key, Value: value, Headers: unpackHeaders(headers),
		}
		now := time.Now()
		b1, r1 := transport.Decode(msg, rules, now)
		b2, r2 := transport.DecodeThroughEvent(msg, rules, now)
		samePath(t, "Decode", b1, r1, b2, r2)
		b3, r3 := transport.DecodeThroughBindingReader(msg, rules, now)
		samePath(t, "Decode with the binding's reader", b3, r3, b2, r2)
		b1, r1 = transport.NewGlobalHub().Decode(msg, rules, now)
		b2, r2 = transport.NewGlobalHub().DecodeThroughEvent(msg, rules, now)
		samePath(t, "GlobalHub.Decode", b1, r1, b2, r2)
	})
}

func samePath(t *testing.T, what string, b1 *bundle.Bundle, r1 *transport.Reject, b2 *bundle.Bundle, r2 *transport.Reject) {
	t.Helper()
	switch {
	case (r1 == nil) != (r2 == nil):
		t.Fatalf("%s: bundle %+v reject %+v; through the event: bundle %+v reject %+v", what, b1, r1, b2, r2)
	case r1 != nil:
		if r1.Reason != r2.Reason || r1.Hub != r2.Hub || r1.Type != r2.Type || r1.Version != r2.Version || r1.Origin != r2.Origin {
			t.Fatalf("%s: reject %s (hub %q type %q version %q: %v); through the event %s (hub %q type %q version %q: %v)", what,
				r1.Reason, r1.Hub, r1.Type, r1.Version, r1.Err, r2.Reason, r2.Hub, r2.Type, r2.Version, r2.Err)
		}
	case !reflect.DeepEqual(b1, b2):
		t.Fatalf("%s: bundle %+v; through the event %+v", what, b1, b2)
	}
}

// TestDecodePathsOnSeeds runs the comparison on the seeds in every test
// run, and checks that the seeds take both ways.
func TestDecodePathsOnSeeds(t *testing.T) {
	rules := ghRules(t)
	now := time.Now()
	plain, bundles, rejects := 0, 0, 0
	for _, m := range pathSeeds(t) {
		if transport.ReadsPlainBinary(m) {
			plain++
		}
		b1, r1 := transport.Decode(m, rules, now)
		b2, r2 := transport.DecodeThroughEvent(m, rules, now)
		samePath(t, "Decode", b1, r1, b2, r2)
		if b1 != nil {
			bundles++
		} else {
			rejects++
		}
		b1, r1 = transport.NewGlobalHub().Decode(m, rules, now)
		b2, r2 = transport.NewGlobalHub().DecodeThroughEvent(m, rules, now)
		samePath(t, "GlobalHub.Decode", b1, r1, b2, r2)
	}
	n := len(pathSeeds(t))
	t.Logf("%d seeds: %d read without the event; Decode: %d bundles, %d rejects", n, plain, bundles, rejects)
	if plain == 0 || plain == n || bundles == 0 || rejects == 0 {
		t.Fatalf("the seeds must take both ways and give both outcomes: %d of %d plain, %d bundles, %d rejects", plain, n, bundles, rejects)
	}
}
