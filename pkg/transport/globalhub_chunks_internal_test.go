package transport

import (
	"bytes"
	"slices"
	"strings"
	"sync"
	"testing"
	"time"

	"github.com/confluentinc/confluent-kafka-go/v2/kafka"

	"github.com/stbridge/stb/pkg/bundle"
	"github.com/stbridge/stb/pkg/deadletter"
)

// donePartition records the offsets marked done.
type donePartition struct {
	mu   sync.Mutex
	done []int64
}

func (p *donePartition) Done(o bundle.Origin) {
	p.mu.Lock()
	p.done = append(p.done, o.Offset)
	p.mu.Unlock()
}
func (p *donePartition) Read(int64)             {}
func (p *donePartition) Committed() int64       { return -1 }
func (p *donePartition) SetHighWatermark(int64) {}
func (p *donePartition) Idle() <-chan struct{}  { return nil }

// chunked returns the chunks of a localcompliance event of hub, at
// offsets from first on, as the agent's producer cuts them.
func chunked(t *testing.T, hub, id string, data []byte, limit int, partition int32, first int64) []*kafka.Message {
	t.Helper()
	msgs, err := ChunkGlobalHub(GlobalHubEvent{
		Topic: "gh-status", Hub: hub, Type: "policy.localcompliance", ID: id, Version: "2.5", Time: time.Now(), Data: data,
	}, limit)
	if err != nil {
		t.Fatal(err)
	}
	for i, m := range msgs {
		m.TopicPartition.Partition = partition
		m.TopicPartition.Offset = kafka.Offset(first + int64(i))
	}
	return msgs
}

func TestChunkAssembler(t *testing.T) {
	data1 := []byte(`[{"policyId":"p1","compliantClusters":["` + strings.Repeat("a", 100) + `"]}]`)
	data2 := []byte(`[{"policyId":"p2","compliantClusters":["` + strings.Repeat("b", 100) + `"]}]`)
	p := &donePartition{}
	c := newChunkAssembler(NewGlobalHub(), 1<<20)
	var given []string
	incomplete := func(first polled, _ deadletter.Reason, err error) { given = append(given, err.Error()) }

	// Two hubs' chunked events interleaved on the shared topic's
	// partition, as the agent's producers of several hubs make them: the
	// agent's client gives every chunk an id of its own
	// (pkg/transport/producer/generic_producer.go never sets one; sdk-go's
	// defaulter sets a new UUID per send), hub2's here.
	a := chunked(t, "hub1", "ev-1", data1, 50, 0, 10)
	b := chunked(t, "hub2", "", data2, 50, 0, 20)
	if id0, _ := header(b[0], headerID); id0 == "" || len(b) < 2 || func() bool { id1, _ := header(b[1], headerID); return id1 == id0 }() {
		t.Fatal("hub2's chunks do not have ids of their own")
	}
	var order []*kafka.Message
	for i := range max(len(a), len(b)) {
		if i < len(a) {
			order = append(order, a[i])
		}
		if i < len(b) {
			order = append(order, b[i])
		}
	}
	var whole []polled
	for _, m := range order {
		if out, ok := c.add(polled{msg: m, p: p}, incomplete); ok {
			whole = append(whole, out)
		}
	}
	if len(given) != 0 || len(whole) != 2 {
		t.Fatalf("assembled %d, gave up %v", len(whole), given)
	}
	for i, w := range whole {
		want, first := data1, int64(10)
		if i == 1 {
			want, first = data2, 20
		}
		if !bytes.Equal(w.msg.Value, want) || int64(w.msg.TopicPartition.Offset) != first {
			t.Fatalf("event %d: offset %d data %q", i, w.msg.TopicPartition.Offset, w.msg.Value)
		}
		if _, ok := header(w.msg, headerSize); ok {
			t.Fatal("the assembled event still carries extsize")
		}
	}
	// Every chunk but the first of each event was done when held; the
	// first ones stay with the assembled events.
	slices.Sort(p.done)
	var want []int64
	for _, m := range append(a[1:], b[1:]...) {
		want = append(want, int64(m.TopicPartition.Offset))
	}
	slices.Sort(want)
	if !slices.Equal(p.done, want) {
		t.Fatalf("done %v, want %v", p.done, want)
	}

	// Decoded as one message, the assembled event is the agent's event.
	gh := NewGlobalHub()
	rules := Rules{MaxBundleBytes: 1 << 20, Decoder: Decoders{"globalhub.policy.localcompliance": func([]byte) (any, error) { return struct{}{}, nil }}}
	bd, rej := gh.Decode(whole[0].msg, rules, time.Now())
	if rej != nil || bd.Hub != "hub1" || bd.Size != len(data1) || bd.Origin.Offset != 10 {
		t.Fatalf("assembled event decoded to %+v, %+v", bd, rej)
	}
}

// TestChunkAssemblerAuthedHub: a chunk with the source of a hub whose
// event is being assembled, but another authedhub, is not joined to that
// event (which takes its first chunk's headers, so its authedhub would
// never be looked at): decoded alone, it is refused as a message whose
// authedhub is not its source (upstream: pkg/transport/identity/
// identity.go, LeafHubForStatusEvent).
func TestChunkAssemblerAuthedHub(t *testing.T) {
	data := []byte(`[{"policyId":"p1","compliantClusters":["` + strings.Repeat("a", 100) + `"]}]`)
	forgedData := bytes.ReplaceAll(data, []byte("a"), []byte("f"))
	cut := func(data []byte, authed string, first int64) []*kafka.Message {
		msgs, err := ChunkGlobalHub(GlobalHubEvent{
			Topic: "gh-status", Hub: "hub1", Type: "policy.localcompliance", ID: "ev-" + authed, Version: "2.5", Time: time.Now(), Data: data,
			Extensions: map[string]string{ExtAuthedHub: authed},
		}, 50)
		if err != nil {
			t.Fatal(err)
		}
		for i, m := range msgs {
			m.TopicPartition.Partition, m.TopicPartition.Offset = 0, kafka.Offset(first+int64(i))
		}
		return msgs
	}
	own, forged := cut(data, "hub1", 10), cut(forgedData, "hub9", 20)
	c := newChunkAssembler(NewGlobalHub(), 1<<20)
	incomplete := func(first polled, _ deadletter.Reason, err error) {
		t.Fatalf("gave up on %d: %v", first.msg.TopicPartition.Offset, err)
	}
	var out []*kafka.Message
	for _, m := range append([]*kafka.Message{own[0], forged[1]}, own[1:]...) {
		if got, ok := c.add(polled{msg: m, p: &donePartition{}}, incomplete); ok {
			out = append(out, got.msg)
		}
	}
	if len(out) != 2 || out[0] != forged[1] || !bytes.Equal(out[1].Value, data) {
		t.Fatalf("handed on %d messages; want the forged chunk alone, then the event whole", len(out))
	}
	rules := Rules{MaxBundleBytes: 1 << 20, Decoder: Decoders{"globalhub.policy.localcompliance": func([]byte) (any, error) { return struct{}{}, nil }}}
	if b, rej := NewGlobalHub().Decode(out[0], rules, time.Now()); rej == nil || rej.Reason != deadletter.SourceMismatch {
		t.Fatalf("the forged chunk decoded to %+v, %+v; want source_mismatch", b, rej)
	}
	if b, rej := NewGlobalHub().Decode(out[1], rules, time.Now()); rej != nil || b.Hub != "hub1" {
		t.Fatalf("the event decoded to %+v, %+v", b, rej)
	}
}

func TestChunkAssemblerGivesUp(t *testing.T) {
	data := []byte(`[{"policyId":"p1","compliantClusters":["` + strings.Repeat("a", 100) + `"]}]`)
	p := &donePartition{}
	c := newChunkAssembler(NewGlobalHub(), 1<<20)
	var given []int64
	incomplete := func(first polled, _ deadletter.Reason, err error) {
		given = append(given, int64(first.msg.TopicPartition.Offset))
	}

	// The first two chunks of an event, then the hub's next event of the
	// type: the first can never be completed.
	old := chunked(t, "hub1", "ev-old", data, 40, 0, 0)
	for _, m := range old[:2] {
		if _, ok := c.add(polled{msg: m, p: p}, incomplete); ok {
			t.Fatal("an incomplete event was handed on")
		}
	}
	next := chunked(t, "hub1", "ev-new", []byte(`[]`), 40, 0, 5)
	out, ok := c.add(polled{msg: next[0], p: p}, incomplete)
	if !ok || out.msg != next[0] || !slices.Equal(given, []int64{0}) {
		t.Fatalf("next event handed on %v, given up %v", ok, given)
	}

	// A chunk of an event above the limit is not held: decoded alone, it
	// is too large.
	small := newChunkAssembler(NewGlobalHub(), 64)
	big := chunked(t, "hub2", "ev-big", data, 40, 0, 30)
	if out, ok := small.add(polled{msg: big[0], p: p}, incomplete); !ok || out.msg != big[0] {
		t.Fatal("a chunk of an event over the limit was held")
	}

	// A revoked partition's assemblies are dropped, their first chunks done.
	r := &Reader{chunks: []*chunkAssembler{newChunkAssembler(NewGlobalHub(), 1<<20)}}
	held := chunked(t, "hub3", "ev-held", data, 40, 4, 40)
	p2 := &donePartition{}
	if _, ok := r.chunks[0].add(polled{msg: held[0], p: p2}, incomplete); ok {
		t.Fatal("held")
	}
	r.dropChunks("gh-status", 4)
	if len(r.chunks[0].open) != 0 || !slices.Equal(p2.done, []int64{40}) {
		t.Fatalf("after revocation: %d open, done %v", len(r.chunks[0].open), p2.done)
	}
}

// TestChunkAssemblerPassesOthersFree: a message that is no chunk (STB's
// format, or a whole global-hub event with nothing being assembled) goes
// through the assembler without an allocation (issue 22: the header scan
// made three strings of every message), and is handed back as it is.
func TestChunkAssemblerPassesOthersFree(t *testing.T) {
	c := newChunkAssembler(NewGlobalHub(), 1<<20)
	stb, err := Encode(Envelope{Topic: "status", Hub: "hub-a", Type: "heartbeat", ID: "e1", Version: bundle.Version{Incarnation: 1, Generation: 1}, Data: []byte(`{}`)}, DefaultTypePrefix)
	if err != nil {
		t.Fatal(err)
	}
	whole := chunked(t, "hub-b", "e2", []byte(`{"small":true}`), 1<<20, 0, 0)
	if len(whole) != 1 {
		t.Fatalf("a small event was cut in %d chunks", len(whole))
	}
	p := &donePartition{}
	for name, msg := range map[string]*kafka.Message{"an STB message": stb, "a whole global-hub event": whole[0]} {
		it := polled{msg: msg, p: p}
		if allocs := testing.AllocsPerRun(100, func() {
			if got, ok := c.add(it, nil); !ok || got.msg != msg {
				t.Fatalf("%s was not handed back as it is", name)
			}
		}); allocs != 0 {
			t.Errorf("%s: %v allocations in the assembler, want 0", name, allocs)
		}
	}
}
