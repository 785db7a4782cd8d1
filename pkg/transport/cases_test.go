package transport_test

import (
	"strings"
	"testing"
	"time"

	"github.com/confluentinc/confluent-kafka-go/v2/kafka"

	"github.com/stbridge/stb/pkg/bundle"
	"github.com/stbridge/stb/pkg/deadletter"
	"github.com/stbridge/stb/pkg/transport"
)

// caseHeader names each test message so that a reject or bundle can be
// matched to its case wherever it ends up. It is not a ce_ header, so the
// binding ignores it.
const caseHeader = "x-test-case"

var eventTime = time.Date(2026, 1, 2, 3, 4, 5, 600, time.UTC)

// validEnvelope is a heartbeat every case starts from.
func validEnvelope(topic, hub string) transport.Envelope {
	return transport.Envelope{
		Topic:   topic,
		Hub:     hub,
		Type:    "heartbeat",
		ID:      hub + "-event",
		Version: bundle.Version{Incarnation: 3, Generation: 7},
		Time:    eventTime,
		Data:    []byte(`{"objects":[]}`),
	}
}

// decodeCase is one message the reader may meet. reason is "" for a
// message that must become a bundle.
type decodeCase struct {
	name   string
	reason deadletter.Reason
	build  func(t testing.TB, topic, hub string) *kafka.Message
}

// fromEnvelope builds a case from a changed valid envelope.
func fromEnvelope(change func(e *transport.Envelope)) func(testing.TB, string, string) *kafka.Message {
	return func(t testing.TB, topic, hub string) *kafka.Message {
		env := validEnvelope(topic, hub)
		if change != nil {
			change(&env)
		}
		return mustEncode(t, env)
	}
}

// fromMessage builds a case from a valid message changed after encoding,
// for what Encode itself refuses to produce.
func fromMessage(change func(m *kafka.Message)) func(testing.TB, string, string) *kafka.Message {
	return func(t testing.TB, topic, hub string) *kafka.Message {
		m := mustEncode(t, validEnvelope(topic, hub))
		change(m)
		return m
	}
}

func badVersion(v string) decodeCase {
	return decodeCase{"extversion " + v, deadletter.MalformedVersion,
		fromMessage(func(m *kafka.Message) { setHeader(m, "ce_extversion", v) })}
}

// decodeCases are shared by the Decode table test, the fuzz seeds and the
// reader's end-to-end test over Kafka. The reader test configures
// MaxBundleBytes to MinMaxBundleBytes, as does testRules.
func decodeCases() []decodeCase {
	return []decodeCase{
		{"heartbeat", "", fromEnvelope(nil)},
		{"managedclusters with dependency", "", fromEnvelope(func(e *transport.Envelope) {
			e.Type = "managedclusters"
			e.Dependency = &bundle.Version{Incarnation: 3, Generation: 1}
			e.Data = []byte(`{"objects":[{"metadata":{"name":"c1"}}]}`)
		})},
		{"no time", "", fromMessage(func(m *kafka.Message) { delHeader(m, "ce_time") })},
		{"delta naming its base", "", fromEnvelope(func(e *transport.Envelope) {
			e.Type = "compliancedelta"
			e.Dependency = &bundle.Version{Incarnation: 3, Generation: 5}
		})},
		{"data at the size limit", "", fromEnvelope(func(e *transport.Envelope) {
			e.Data = jsonOfSize(transport.MinMaxBundleBytes)
		})},

		{"not a cloudevent", deadletter.NotCloudEvent, func(_ testing.TB, topic, hub string) *kafka.Message {
			return &kafka.Message{
				TopicPartition: kafka.TopicPartition{Topic: &topic, Partition: kafka.PartitionAny},
				Key:            []byte(hub),
				Value:          []byte("hello, not an event"),
			}
		}},
		{"specversion 0.3", deadletter.NotCloudEvent,
			fromMessage(func(m *kafka.Message) { setHeader(m, "ce_specversion", "0.3") })},
		{"specversion 2.0", deadletter.NotCloudEvent,
			fromMessage(func(m *kafka.Message) { setHeader(m, "ce_specversion", "2.0") })},
		{"unparsable time", deadletter.NotCloudEvent,
			fromMessage(func(m *kafka.Message) { setHeader(m, "ce_time", "yesterday") })},
		{"invalid extension name", deadletter.NotCloudEvent,
			fromMessage(func(m *kafka.Message) { setHeader(m, "ce_bad-name", "x") })},

		{"missing id", deadletter.MissingAttribute, fromMessage(func(m *kafka.Message) { delHeader(m, "ce_id") })},
		{"missing source", deadletter.MissingAttribute, fromMessage(func(m *kafka.Message) { delHeader(m, "ce_source") })},
		{"missing type", deadletter.MissingAttribute, fromMessage(func(m *kafka.Message) { delHeader(m, "ce_type") })},
		{"missing extversion", deadletter.MissingAttribute, fromMessage(func(m *kafka.Message) { delHeader(m, "ce_extversion") })},
		// It would wait --dependency-timeout for a base that cannot come,
		// pinning its partition's offset.
		{"delta without extdependencyversion", deadletter.MissingAttribute,
			fromEnvelope(func(e *transport.Envelope) { e.Type = "compliancedelta" })},

		{"unknown type", deadletter.UnknownType, fromEnvelope(func(e *transport.Envelope) { e.Type = "nosuchtype" })},
		{"foreign type prefix", deadletter.UnknownType,
			fromMessage(func(m *kafka.Message) { setHeader(m, "ce_type", "com.example.heartbeat") })},
		{"type with trailing white space", deadletter.UnknownType,
			fromMessage(func(m *kafka.Message) { setHeader(m, "ce_type", transport.DefaultTypePrefix+"heartbeat ") })},
		{"type with leading white space", deadletter.UnknownType,
			fromMessage(func(m *kafka.Message) { setHeader(m, "ce_type", " "+transport.DefaultTypePrefix+"heartbeat") })},
		{"bare type prefix", deadletter.UnknownType,
			fromMessage(func(m *kafka.Message) { setHeader(m, "ce_type", transport.DefaultTypePrefix) })},

		badVersion("a.b"),
		badVersion("-1.2"),
		badVersion("1"),
		badVersion("18446744073709551616.0"), // incarnation overflows uint64
		badVersion("1.18446744073709551616"), // generation overflows uint64
		badVersion("1.2.3"),
		badVersion(""),
		badVersion(" 1.2"),
		badVersion("+1.2"),
		{"malformed dependency", deadletter.MalformedVersion,
			fromMessage(func(m *kafka.Message) { setHeader(m, "ce_extdependencyversion", "x") })},

		{"too large", deadletter.TooLarge, fromEnvelope(func(e *transport.Envelope) {
			e.Data = jsonOfSize(transport.MinMaxBundleBytes + 1)
		})},

		{"source is not the key", deadletter.SourceMismatch,
			fromMessage(func(m *kafka.Message) { setHeader(m, "ce_source", string(m.Key)+"-impostor") })},
		{"no key", deadletter.SourceMismatch, fromMessage(func(m *kafka.Message) { m.Key = nil })},

		{"hub name with a control character", deadletter.InvalidHub, fromMessage(func(m *kafka.Message) {
			m.Key = append(m.Key, '\a')
			setHeader(m, "ce_source", string(m.Key))
		})},
		{"hub name not UTF-8", deadletter.InvalidHub, fromMessage(func(m *kafka.Message) {
			m.Key = append(m.Key, 0xff, 0xfe)
			setHeader(m, "ce_source", string(m.Key))
		})},
		{"hub name too long", deadletter.InvalidHub, fromMessage(func(m *kafka.Message) {
			m.Key = []byte(strings.Repeat("h", transport.MaxHubNameBytes+1))
			setHeader(m, "ce_source", string(m.Key))
		})},

		{"payload not json", deadletter.BadPayload, fromEnvelope(func(e *transport.Envelope) { e.Data = []byte("{not json") })},
		{"payload of the wrong shape", deadletter.BadPayload,
			fromEnvelope(func(e *transport.Envelope) { e.Data = []byte(`{"objects":{}}`) })},
		{"no data", deadletter.BadPayload, fromEnvelope(func(e *transport.Envelope) { e.Data = nil })},
	}
}

// testRules are the rules the table and fuzz tests decode with.
func testRules() transport.Rules {
	return transport.Rules{
		TypePrefix:     transport.DefaultTypePrefix,
		VerifySource:   true,
		MaxBundleBytes: transport.MinMaxBundleBytes,
		Decoder:        testDecoders(),
	}
}
