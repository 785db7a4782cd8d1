package transport_test

import (
	"bytes"
	"errors"
	"fmt"
	"runtime"
	"slices"
	"strconv"
	"testing"
	"time"

	"github.com/confluentinc/confluent-kafka-go/v2/kafka"

	"github.com/stbridge/stb/pkg/bundle"
	"github.com/stbridge/stb/pkg/deadletter"
	"github.com/stbridge/stb/pkg/transport"
)

var brokerTime = time.Date(2026, 1, 2, 3, 4, 9, 0, time.UTC)

// consumed makes m look like a message a consumer returned.
func consumed(m *kafka.Message, partition int32, offset int64) *kafka.Message {
	m.TopicPartition.Partition = partition
	m.TopicPartition.Offset = kafka.Offset(offset)
	m.Timestamp = brokerTime
	return m
}

func TestDecode(t *testing.T) {
	received := time.Date(2026, 1, 2, 3, 5, 0, 0, time.UTC)
	for i, tc := range decodeCases() {
		t.Run(tc.name, func(t *testing.T) {
			hub := "hub-" + strconv.Itoa(i)
			msg := consumed(tc.build(t, "status", hub), 2, int64(100+i))
			wantOrigin := bundle.Origin{Topic: "status", Partition: 2, Offset: int64(100 + i)}

			b, rej := transport.Decode(msg, testRules(), received)

			if tc.reason == "" {
				if rej != nil {
					t.Fatalf("rejected (%s): %v", rej.Reason, rej.Err)
				}
				checkBundle(t, b, msg, hub, wantOrigin, received)
				// Its data is decoded when it is written, and refused
				// then if it is bad.
				if _, err := testDecoders().Decode(b); (err != nil) != tc.badData {
					t.Errorf("data decodes with error %v; want an error: %v", err, tc.badData)
				}
				return
			}
			if b != nil || rej == nil {
				t.Fatalf("got bundle %+v, reject %v; want reject %s", b, rej, tc.reason)
			}
			if rej.Reason != tc.reason {
				t.Fatalf("reason %q (%v), want %q", rej.Reason, rej.Err, tc.reason)
			}
			if rej.Err == nil {
				t.Error("reject without an error")
			}
			if rej.Origin != wantOrigin {
				t.Errorf("origin %+v, want %+v", rej.Origin, wantOrigin)
			}
			if !bytes.Equal(rej.Key, msg.Key) || !bytes.Equal(rej.Data, msg.Value) {
				t.Error("reject does not carry the raw key and data")
			}
			if len(rej.Headers) != len(msg.Headers) {
				t.Errorf("reject has %d headers, message %d", len(rej.Headers), len(msg.Headers))
			}
			if tc.reason == deadletter.MalformedVersion {
				if !errors.Is(rej, bundle.ErrMalformedVersion) && !errors.Is(rej.Err, bundle.ErrMalformedVersion) {
					t.Errorf("malformed version reject does not wrap bundle.ErrMalformedVersion: %v", rej.Err)
				}
				if rej.Hub != hub {
					t.Errorf("reject hub %q, want %q", rej.Hub, hub)
				}
			}
		})
	}
}

func checkBundle(t *testing.T, b *bundle.Bundle, msg *kafka.Message, hub string, origin bundle.Origin, received time.Time) {
	t.Helper()
	if b == nil {
		t.Fatal("no bundle")
	}
	if b.Hub != hub || b.Origin != origin || !b.ReceivedAt.Equal(received) {
		t.Errorf("bundle hub %q origin %+v received %v; want %q %+v %v", b.Hub, b.Origin, b.ReceivedAt, hub, origin, received)
	}
	if !testDecoders().Known(b.Type) {
		t.Errorf("type %q is not a short known type", b.Type)
	}
	if want := (bundle.Version{Incarnation: 3, Generation: 7}); b.Version != want {
		t.Errorf("version %v, want %v", b.Version, want)
	}
	if b.Size != len(msg.Value) {
		t.Errorf("size %d, want %d", b.Size, len(msg.Value))
	}
	if b.Payload != nil || !bytes.Equal(b.Raw, msg.Value) {
		t.Errorf("payload %T, data %q; want the data raw, %q, and no payload: the reader decodes none", b.Payload, b.Raw, msg.Value)
	}
	_, hasTime := header(msg, "ce_time")
	switch {
	case hasTime && !b.EventTime.Equal(eventTime):
		t.Errorf("event time %v, want %v", b.EventTime, eventTime)
	case !hasTime && !b.EventTime.Equal(brokerTime):
		t.Errorf("event time %v, want the broker timestamp %v when ce_time is absent", b.EventTime, brokerTime)
	}
	dep, hasDep := header(msg, "ce_extdependencyversion")
	if b.HasDependency != hasDep || (hasDep && b.Dependency.String() != dep) {
		t.Errorf("dependency %v (has %v), header %q (has %v)", b.Dependency, b.HasDependency, dep, hasDep)
	}
}

// TestDecodeGuards covers messages no consumer returns but on which the
// binding would panic.
func TestDecodeGuards(t *testing.T) {
	topic := "status"
	valid := func() *kafka.Message { return consumed(mustEncode(t, validEnvelope(topic, "hub")), 0, 1) }
	for name, msg := range map[string]*kafka.Message{
		"nil message":        nil,
		"nil topic":          func() *kafka.Message { m := valid(); m.TopicPartition.Topic = nil; return m }(),
		"negative partition": func() *kafka.Message { m := valid(); m.TopicPartition.Partition = -1; return m }(),
		"negative offset":    func() *kafka.Message { m := valid(); m.TopicPartition.Offset = kafka.OffsetEnd; return m }(),
	} {
		t.Run(name, func(t *testing.T) {
			b, rej := transport.Decode(msg, testRules(), time.Now())
			if b != nil || rej == nil || rej.Reason != deadletter.NotCloudEvent {
				t.Fatalf("got %+v, %+v; want a %s reject", b, rej, deadletter.NotCloudEvent)
			}
		})
	}
}

func TestDecodeWithoutSourceCheck(t *testing.T) {
	rules := testRules()
	rules.VerifySource = false
	msg := consumed(mustEncode(t, validEnvelope("status", "hub-a")), 0, 0)
	msg.Key = []byte("somebody-else")
	if b, rej := transport.Decode(msg, rules, time.Now()); rej != nil || b.Hub != "hub-a" {
		t.Fatalf("got %+v, %v; want a bundle of hub-a", b, rej)
	}
}

// FuzzDecode feeds arbitrary messages to Decode: it must never panic and
// must return exactly one of a bundle and a reject, and a bundle must obey
// the rules.
func FuzzDecode(f *testing.F) {
	for i, tc := range decodeCases() {
		m := consumed(tc.build(f, "status", "hub-"+strconv.Itoa(i)), 0, int64(i))
		f.Add(m.Key, m.Value, packHeaders(m.Headers), int32(0), int64(i))
	}
	f.Add([]byte(nil), []byte(nil), []byte(nil), int32(-1), int64(-5))

	rules := testRules()
	f.Fuzz(func(t *testing.T, key, value, headers []byte, partition int32, offset int64) {
		topic := "status"
		msg := &kafka.Message{
			TopicPartition: kafka.TopicPartition{Topic: &topic, Partition: partition, Offset: kafka.Offset(offset)},
			Key:            key,
			Value:          value,
			Headers:        unpackHeaders(headers),
		}
		b, rej := transport.Decode(msg, rules, time.Now())
		if (b == nil) == (rej == nil) {
			t.Fatalf("bundle %v and reject %v: want exactly one", b, rej)
		}
		if rej != nil {
			if rej.Reason == "" || rej.Err == nil {
				t.Fatalf("reject without reason or error: %+v", rej)
			}
			return
		}
		if b.Hub != string(key) || b.Hub == "" {
			t.Fatalf("bundle hub %q, key %q", b.Hub, key)
		}
		if !testDecoders().Known(b.Type) || b.Size > rules.MaxBundleBytes || b.Size != len(b.Raw) || b.Payload != nil {
			t.Fatalf("bundle breaks the rules: %+v", b)
		}
		if b.Origin.Partition != partition || b.Origin.Offset != offset {
			t.Fatalf("origin %+v, want partition %d offset %d", b.Origin, partition, offset)
		}
	})
}

// packHeaders flattens headers as key NUL value NUL … for the fuzzer.
func packHeaders(hs []kafka.Header) []byte {
	var b []byte
	for _, h := range hs {
		b = append(b, h.Key...)
		b = append(b, 0)
		b = append(b, h.Value...)
		b = append(b, 0)
	}
	return b
}

func unpackHeaders(b []byte) []kafka.Header {
	parts := bytes.Split(b, []byte{0})
	var hs []kafka.Header
	for i := 0; i+1 < len(parts); i += 2 {
		hs = append(hs, kafka.Header{Key: string(parts[i]), Value: parts[i+1]})
	}
	return hs
}

// BenchmarkDecode decodes a heartbeat (a payload that costs next to
// nothing, so the envelope is what is measured) the three ways: Decode
// (attrsWriter reading the headers), attrsWriter fed by the binding's own
// ReadBinary, and the binding's whole event.Event.
func BenchmarkDecode(b *testing.B) {
	msg := consumed(mustEncode(b, validEnvelope("status", "hub-1")), 0, 1)
	rules := testRules()
	now := time.Now()
	for _, way := range []struct {
		name   string
		decode func(*kafka.Message, transport.Rules, time.Time) (*bundle.Bundle, *transport.Reject)
	}{
		{"attrs", transport.Decode},
		{"binding-reader", transport.DecodeThroughBindingReader},
		{"event", transport.DecodeThroughEvent},
	} {
		b.Run(way.name, func(b *testing.B) {
			b.ReportAllocs()
			for b.Loop() {
				if _, rej := way.decode(msg, rules, now); rej != nil {
					b.Fatal(rej)
				}
			}
		})
	}
}

// countingDecoder counts the payloads it decodes.
type countingDecoder struct {
	testDecoder
	decoded *int
}

func (d countingDecoder) Decode(b *bundle.Bundle) (any, error) {
	*d.decoded++
	return d.testDecoder.Decode(b)
}

// TestDecodeLeavesDataRaw: the reader checks what the fence and the
// conflation need and decodes no payload of STB's profile, good or bad:
// most bundles are replaced before they are written, and their decoding
// was the largest part of the reader's work (issue 22).
func TestDecodeLeavesDataRaw(t *testing.T) {
	decoded := 0
	rules := testRules()
	rules.Decoder = countingDecoder{testDecoders(), &decoded}
	bundles := 0
	for i, tc := range decodeCases() {
		msg := consumed(tc.build(t, "status", "hub-"+strconv.Itoa(i)), 0, int64(i))
		if b, _ := transport.Decode(msg, rules, time.Now()); b != nil {
			bundles++
		}
	}
	if bundles == 0 || decoded != 0 {
		t.Fatalf("%d payloads decoded reading %d bundles, want none", decoded, bundles)
	}
}

// TestDecodeHubIdentity: the hub is the source as the sender wrote it.
// The CloudEvents library parses source as a URI reference and gives it
// back percent-encoded: a hub named "a b" was refused as source_mismatch
// against its own key, and with --verify-source=false "a b" and "a%20b"
// were stored as one hub, sharing rows and versions.
func TestDecodeHubIdentity(t *testing.T) {
	for _, verify := range []bool{true, false} {
		rules := testRules()
		rules.VerifySource = verify
		got := map[string]bool{}
		for i, hub := range []string{"a b", "a%20b", "hub/ü", "a?b#c"} {
			env := validEnvelope("status", hub)
			b, rej := transport.Decode(consumed(mustEncode(t, env), 0, int64(i)), rules, time.Now())
			if rej != nil {
				t.Fatalf("verify-source %v, hub %q: rejected (%s): %v", verify, hub, rej.Reason, rej.Err)
			}
			if b.Hub != hub {
				t.Fatalf("verify-source %v: hub %q decoded as %q", verify, hub, b.Hub)
			}
			got[b.Hub] = true
		}
		if len(got) != 4 {
			t.Fatalf("verify-source %v: four hubs decoded as %d: %v", verify, len(got), got)
		}
	}
	// Both go out with the source "a%20b"; their keys tell them apart.
	for _, hub := range []string{"a b", "a%20b"} {
		m := mustEncode(t, validEnvelope("status", hub))
		if src, _ := header(m, "ce_source"); src != "a%20b" {
			t.Fatalf("hub %q sent with source %q; the test assumes the library's encoding", hub, src)
		}
	}
	// A key that is neither form of the source is another hub's.
	m := mustEncode(t, validEnvelope("status", "a b"))
	m.Key = []byte("a+b")
	if _, rej := transport.Decode(consumed(m, 0, 9), testRules(), time.Now()); rej == nil || rej.Reason != deadletter.SourceMismatch {
		t.Fatalf("source \"a b\" under key \"a+b\": reject %+v, want source_mismatch", rej)
	}
}

// TestDecodeKeepsNothingBetweenMessages: Decode reuses the attributes'
// writer from one message to the next (issue 22, item 2: three allocations
// per message fewer); nothing of one message may reach the next: a
// dependency, an id, a source.
func TestDecodeKeepsNothingBetweenMessages(t *testing.T) {
	rules := testRules()
	with := validEnvelope("status", "hub-a")
	with.Type = "compliancedelta"
	with.Dependency = &bundle.Version{Incarnation: 3, Generation: 5}
	without := validEnvelope("status", "hub-b")
	noID := consumed(mustEncode(t, validEnvelope("status", "hub-c")), 0, 2)
	delHeader(noID, "ce_id")
	for range 3 {
		b, rej := transport.Decode(consumed(mustEncode(t, with), 0, 0), rules, time.Now())
		if rej != nil || !b.HasDependency || b.Dependency != *with.Dependency || b.Hub != "hub-a" {
			t.Fatalf("with a dependency: %+v, %v", b, rej)
		}
		b, rej = transport.Decode(consumed(mustEncode(t, without), 0, 1), rules, time.Now())
		if rej != nil || b.HasDependency || b.Hub != "hub-b" || b.Type != "heartbeat" {
			t.Fatalf("after a message with a dependency, one without: %+v, %v", b, rej)
		}
		if _, rej = transport.Decode(noID, rules, time.Now()); rej == nil || rej.Reason != deadletter.MissingAttribute {
			t.Fatalf("a message without an id after one with: %v, want %s", rej, deadletter.MissingAttribute)
		}
	}
}

// TestHeldBytesCountWhatABundleKeeps: a bundle's Held, what
// --max-buffered-bytes counts, is about what the bundle really keeps alive
// once its message is dropped (data, key, headers, the bundle's own
// structures), within a quarter either way, where its data alone is about
// half of it on 1 KiB messages (issue 22: the 10,000-hub catch-up held
// 261 MiB of data and 330 MiB beside it, uncounted).
func TestHeldBytesCountWhatABundleKeeps(t *testing.T) {
	rules := testRules()
	const n = 4000
	data := jsonOfSize(1024)
	bundles := make([]*bundle.Bundle, 0, n)
	runtime.GC()
	var before, after runtime.MemStats
	runtime.ReadMemStats(&before)
	for i := range n {
		env := validEnvelope("status", fmt.Sprintf("hub-%04d", i))
		env.ID = fmt.Sprintf("0b1c2d3e-4f50-6172-8394-a5b6c7d8%04d", i)
		env.Data = slices.Clone(data) // its own copy, as the client makes it
		b, rej := transport.Decode(consumed(mustEncode(t, env), 0, int64(i)), rules, time.Now())
		if rej != nil {
			t.Fatal(rej)
		}
		bundles = append(bundles, b)
	}
	runtime.GC()
	runtime.ReadMemStats(&after)
	live := int64(after.HeapAlloc) - int64(before.HeapAlloc)
	var held, size int64
	for _, b := range bundles {
		held, size = held+int64(b.Held), size+int64(b.Size)
	}
	runtime.KeepAlive(bundles)
	if r := float64(held) / float64(live); r < 0.75 || r > 1.25 {
		t.Errorf("%d bundles held %d bytes by their Held, %d live on the heap (%.2f×); their data is %d bytes", n, held, live, r, size)
	}
	t.Logf("%d bundles: Held %d bytes, live heap %d, data %d", n, held, live, size)
}
