package transport_test

import (
	"context"
	"encoding/json"
	"fmt"
	"sync"
	"testing"
	"time"

	"github.com/confluentinc/confluent-kafka-go/v2/kafka"

	"github.com/stbridge/stb/pkg/bundle"
	"github.com/stbridge/stb/pkg/committer"
	"github.com/stbridge/stb/pkg/deadletter"
	"github.com/stbridge/stb/pkg/transport"
)

// panicType makes the test decoder panic when the reader asks whether it
// knows the type, as a decoder with a bug would.
const panicType = "panicky"

// objects is the payload shape shared by the test bundle types.
type objects struct {
	Objects []json.RawMessage `json:"objects"`
}

func decodeObjects(data []byte) (any, error) {
	var o objects
	if err := json.Unmarshal(data, &o); err != nil {
		return nil, err
	}
	return &o, nil
}

// testDecoders knows three bundle types, enough to tell known from
// unknown, and a delta from the types that name no base.
func testDecoders() testDecoder {
	return testDecoder{transport.Decoders{"heartbeat": decodeObjects, "managedclusters": decodeObjects, "compliancedelta": decodeObjects}}
}

// testDecoder is a Decoder and DependencyChecker:
// compliancedelta applies only on the version it names.
type testDecoder struct{ transport.Decoders }

func (testDecoder) NeedsDependency(typ string) bool { return typ == "compliancedelta" }

func (d testDecoder) Known(typ string) bool {
	if typ == panicType {
		panic("the test decoder's bug")
	}
	return d.Decoders.Known(typ)
}

// testSink records inserted bundles; when release is set it releases each
// one at once, as if written. delay makes each insert that slow.
type testSink struct {
	release bool
	delay   time.Duration
	mu      sync.Mutex
	bundles []*bundle.Bundle
}

func (s *testSink) Insert(b *bundle.Bundle) {
	time.Sleep(s.delay)
	s.mu.Lock()
	s.bundles = append(s.bundles, b)
	s.mu.Unlock()
	if s.release {
		b.Release()
	}
}

func (s *testSink) snapshot() []*bundle.Bundle {
	s.mu.Lock()
	defer s.mu.Unlock()
	return append([]*bundle.Bundle(nil), s.bundles...)
}

// testRejects records rejected letters and stores them at once (releases
// them).
type testRejects struct {
	mu      sync.Mutex
	rejects []deadletter.Letter
}

func (r *testRejects) Add(l deadletter.Letter, release func()) {
	r.mu.Lock()
	r.rejects = append(r.rejects, l)
	r.mu.Unlock()
	release()
}

func (r *testRejects) snapshot() []deadletter.Letter {
	r.mu.Lock()
	defer r.mu.Unlock()
	return append([]deadletter.Letter(nil), r.rejects...)
}

// memOffsets serves stored positions from memory; the Postgres store is
// covered by the end-to-end tests.
type memOffsets struct {
	positions map[string]committer.Position
	err       error
}

func (m *memOffsets) Claim(_ context.Context, topic string, partition int32) (transport.StoredPosition, bool, error) {
	if m.err != nil {
		return transport.StoredPosition{}, false, m.err
	}
	p, ok := m.positions[committer.RowName(topic, partition)]
	return transport.StoredPosition{Offset: p.Offset, ClusterID: p.ClusterID}, ok, nil
}

// positions adapts the committer to the reader's Positions, as the bridge
// does.
type positions struct{ *committer.Committer }

func (p positions) Assign(topic string, partition int32, start int64) transport.Partition {
	return p.Committer.Assign(topic, partition, start)
}

// memStore keeps the positions the committer saves and counts the saves.
type memStore struct {
	mu    sync.Mutex
	saved map[string]committer.Position
	saves int
}

func (s *memStore) Save(_ context.Context, ps []committer.Position) error {
	s.mu.Lock()
	defer s.mu.Unlock()
	if s.saved == nil {
		s.saved = map[string]committer.Position{}
	}
	for _, p := range ps {
		s.saved[committer.RowName(p.Topic, p.Partition)] = p
	}
	s.saves++
	return nil
}

// Claim serves the saved positions, so that readers sharing a memStore
// start where another one committed, as bridges sharing a database do.
func (s *memStore) Claim(_ context.Context, topic string, partition int32) (transport.StoredPosition, bool, error) {
	p, ok := s.get(topic, partition)
	return transport.StoredPosition{Offset: p.Offset, ClusterID: p.ClusterID}, ok, nil
}

func (s *memStore) count() int {
	s.mu.Lock()
	defer s.mu.Unlock()
	return s.saves
}

func (s *memStore) get(topic string, partition int32) (committer.Position, bool) {
	s.mu.Lock()
	defer s.mu.Unlock()
	p, ok := s.saved[committer.RowName(topic, partition)]
	return p, ok
}

// waitFor polls cond until it holds or the timeout passes.
func waitFor(t *testing.T, timeout time.Duration, what string, cond func() bool) {
	t.Helper()
	deadline := time.Now().Add(timeout)
	for !cond() {
		if time.Now().After(deadline) {
			t.Fatalf("timed out after %v waiting for %s", timeout, what)
		}
		time.Sleep(10 * time.Millisecond)
	}
}

// header returns the value of a message header.
func header(msg *kafka.Message, key string) (string, bool) {
	for _, h := range msg.Headers {
		if h.Key == key {
			return string(h.Value), true
		}
	}
	return "", false
}

// setHeader replaces or adds a header.
func setHeader(msg *kafka.Message, key, value string) {
	for i, h := range msg.Headers {
		if h.Key == key {
			msg.Headers[i].Value = []byte(value)
			return
		}
	}
	msg.Headers = append(msg.Headers, kafka.Header{Key: key, Value: []byte(value)})
}

// delHeader removes a header.
func delHeader(msg *kafka.Message, key string) {
	for i, h := range msg.Headers {
		if h.Key == key {
			msg.Headers = append(msg.Headers[:i], msg.Headers[i+1:]...)
			return
		}
	}
}

// mustEncode encodes env or fails the test.
func mustEncode(t testing.TB, env transport.Envelope) *kafka.Message {
	t.Helper()
	msg, err := transport.Encode(env, transport.DefaultTypePrefix)
	if err != nil {
		t.Fatalf("encode %+v: %v", env, err)
	}
	return msg
}

// jsonOfSize returns a valid objects payload of exactly n bytes (n >= 32).
func jsonOfSize(n int) []byte {
	const head, tail = `{"objects":[],"pad":"`, `"}`
	pad := n - len(head) - len(tail)
	if pad < 0 {
		panic(fmt.Sprintf("jsonOfSize(%d) too small", n))
	}
	b := make([]byte, 0, n)
	b = append(b, head...)
	for range pad {
		b = append(b, 'x')
	}
	return append(b, tail...)
}

// lookup returns the committer's tracker of a partition, if assigned.
func lookup(c *committer.Committer, topic string, partition int32) (*committer.Partition, bool) {
	for _, p := range c.Partitions() {
		if p.Topic == topic && p.Partition == partition {
			return p, true
		}
	}
	return nil, false
}
