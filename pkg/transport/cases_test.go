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
// message that must become a bundle. badData marks a bundle whose data
// is JSON but does not decode: the reader takes it raw, as it decodes no
// payload, and it is dead-lettered bad_payload when a worker takes it
// (dispatcher, test/faults_poison_test.go), unless a newer one replaced it
// first. Data that is not JSON at all is a reject (checkSyntax).
type decodeCase struct {
	name    string
	reason  deadletter.Reason
	build   func(t testing.TB, topic, hub string) *kafka.Message
	badData bool
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
	return decodeCase{name: "extversion " + v, reason: deadletter.MalformedVersion,
		build: fromMessage(func(m *kafka.Message) { setHeader(m, "ce_extversion", v) })}
}

// decodeCases are shared by the Decode table test, the fuzz seeds and the
// reader's end-to-end test over Kafka. The reader test configures
// MaxBundleBytes to MinMaxBundleBytes, as does testRules.
func decodeCases() []decodeCase {
	return []decodeCase{
		{name: "heartbeat", build: fromEnvelope(nil)},
		{name: "managedclusters with dependency", build: fromEnvelope(func(e *transport.Envelope) {
			e.Type = "managedclusters"
			e.Dependency = &bundle.Version{Incarnation: 3, Generation: 1}
			e.Data = []byte(`{"objects":[{"metadata":{"name":"c1"}}]}`)
		})},
		{name: "no time", build: fromMessage(func(m *kafka.Message) { delHeader(m, "ce_time") })},
		{name: "delta naming its base", build: fromEnvelope(func(e *transport.Envelope) {
			e.Type = "compliancedelta"
			e.Dependency = &bundle.Version{Incarnation: 3, Generation: 5}
		})},
		{name: "data at the size limit", build: fromEnvelope(func(e *transport.Envelope) {
			e.Data = jsonOfSize(transport.MinMaxBundleBytes)
		})},

		{name: "not a cloudevent", reason: deadletter.NotCloudEvent, build: func(_ testing.TB, topic, hub string) *kafka.Message {
			return &kafka.Message{
				TopicPartition: kafka.TopicPartition{Topic: &topic, Partition: kafka.PartitionAny},
				Key:            []byte(hub),
				Value:          []byte("hello, not an event"),
			}
		}},
		{name: "specversion 0.3", reason: deadletter.NotCloudEvent, build: fromMessage(func(m *kafka.Message) { setHeader(m, "ce_specversion", "0.3") })},
		{name: "specversion 2.0", reason: deadletter.NotCloudEvent, build: fromMessage(func(m *kafka.Message) { setHeader(m, "ce_specversion", "2.0") })},
		{name: "unparsable time", reason: deadletter.NotCloudEvent, build: fromMessage(func(m *kafka.Message) { setHeader(m, "ce_time", "yesterday") })},
		{name: "invalid extension name", reason: deadletter.NotCloudEvent, build: fromMessage(func(m *kafka.Message) { setHeader(m, "ce_bad-name", "x") })},

		{name: "missing id", reason: deadletter.MissingAttribute, build: fromMessage(func(m *kafka.Message) { delHeader(m, "ce_id") })},
		{name: "missing source", reason: deadletter.MissingAttribute, build: fromMessage(func(m *kafka.Message) { delHeader(m, "ce_source") })},
		{name: "missing type", reason: deadletter.MissingAttribute, build: fromMessage(func(m *kafka.Message) { delHeader(m, "ce_type") })},
		{name: "missing extversion", reason: deadletter.MissingAttribute, build: fromMessage(func(m *kafka.Message) { delHeader(m, "ce_extversion") })},
		// It would wait --dependency-timeout for a base that cannot come,
		// pinning its partition's offset.
		{name: "delta without extdependencyversion", reason: deadletter.MissingAttribute, build: fromEnvelope(func(e *transport.Envelope) { e.Type = "compliancedelta" })},

		{name: "unknown type", reason: deadletter.UnknownType, build: fromEnvelope(func(e *transport.Envelope) { e.Type = "nosuchtype" })},
		{name: "foreign type prefix", reason: deadletter.UnknownType, build: fromMessage(func(m *kafka.Message) { setHeader(m, "ce_type", "com.example.heartbeat") })},
		{name: "type with trailing white space", reason: deadletter.UnknownType, build: fromMessage(func(m *kafka.Message) { setHeader(m, "ce_type", transport.DefaultTypePrefix+"heartbeat ") })},
		{name: "type with leading white space", reason: deadletter.UnknownType, build: fromMessage(func(m *kafka.Message) { setHeader(m, "ce_type", " "+transport.DefaultTypePrefix+"heartbeat") })},
		{name: "bare type prefix", reason: deadletter.UnknownType, build: fromMessage(func(m *kafka.Message) { setHeader(m, "ce_type", transport.DefaultTypePrefix) })},

		badVersion("a.b"),
		badVersion("-1.2"),
		badVersion("1"),
		badVersion("18446744073709551616.0"), // incarnation overflows uint64
		badVersion("1.18446744073709551616"), // generation overflows uint64
		badVersion("1.2.3"),
		badVersion(""),
		badVersion(" 1.2"),
		badVersion("+1.2"),
		{name: "malformed dependency", reason: deadletter.MalformedVersion, build: fromMessage(func(m *kafka.Message) { setHeader(m, "ce_extdependencyversion", "x") })},

		{name: "too large", reason: deadletter.TooLarge, build: fromEnvelope(func(e *transport.Envelope) {
			e.Data = jsonOfSize(transport.MinMaxBundleBytes + 1)
		})},

		{name: "source is not the key", reason: deadletter.SourceMismatch, build: fromMessage(func(m *kafka.Message) { setHeader(m, "ce_source", string(m.Key)+"-impostor") })},
		{name: "no key", reason: deadletter.SourceMismatch, build: fromMessage(func(m *kafka.Message) { m.Key = nil })},

		{name: "hub name with a control character", reason: deadletter.InvalidHub, build: fromMessage(func(m *kafka.Message) {
			m.Key = append(m.Key, '\a')
			setHeader(m, "ce_source", string(m.Key))
		})},
		{name: "hub name not UTF-8", reason: deadletter.InvalidHub, build: fromMessage(func(m *kafka.Message) {
			m.Key = append(m.Key, 0xff, 0xfe)
			setHeader(m, "ce_source", string(m.Key))
		})},
		{name: "hub name too long", reason: deadletter.InvalidHub, build: fromMessage(func(m *kafka.Message) {
			m.Key = []byte(strings.Repeat("h", transport.MaxHubNameBytes+1))
			setHeader(m, "ce_source", string(m.Key))
		})},

		// Not JSON at all: found by a scan when read, so that it is
		// dead-lettered even when a newer bundle would replace it before
		// a worker decoded it (issue 34, item 10).
		{name: "payload not json", reason: deadletter.BadPayload, build: fromEnvelope(func(e *transport.Envelope) { e.Data = []byte("{not json") })},
		{name: "payload truncated", reason: deadletter.BadPayload, build: fromEnvelope(func(e *transport.Envelope) { e.Data = []byte(`{"objects":[{"metadata":`) })},
		{name: "payload of the wrong shape", build: fromEnvelope(func(e *transport.Envelope) { e.Data = []byte(`{"objects":{}}`) }), badData: true},
		{name: "no data", build: fromEnvelope(func(e *transport.Envelope) { e.Data = nil }), badData: true},
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
