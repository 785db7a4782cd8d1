package transport

import (
	"context"
	"fmt"
	"slices"
	"strings"
	"sync"
	"testing"
	"testing/synctest"
	"time"

	"github.com/confluentinc/confluent-kafka-go/v2/kafka"
	"github.com/prometheus/client_golang/prometheus"
	"go.uber.org/zap"

	"github.com/stbridge/stb/pkg/bundle"
	"github.com/stbridge/stb/pkg/deadletter"
)

// Chunked global-hub events that never become whole are given up: in
// time (--chunk-timeout) and in bytes (counted in --max-buffered-bytes),
// each once, its partition's position moving on (issue 34, item 2). The
// tests drive the reader's hand-off and decoding goroutine as its poll
// loop does, without Kafka, in a synctest bubble: its clock moves only
// when everything in it waits.

// trackedPartition is a Partition that keeps what the committer keeps:
// the offsets read and not done, and the position a commit would store.
type trackedPartition struct {
	mu   sync.Mutex
	read []int64
	done map[int64]bool
	next int64
}

func newTrackedPartition() *trackedPartition { return &trackedPartition{done: map[int64]bool{}} }

func (p *trackedPartition) Read(o int64) {
	p.mu.Lock()
	defer p.mu.Unlock()
	p.read = append(p.read, o)
	p.next = max(p.next, o+1)
}

func (p *trackedPartition) Done(o bundle.Origin) {
	p.mu.Lock()
	defer p.mu.Unlock()
	p.done[o.Offset] = true
}

// position is the lowest offset read and not done, else the next one.
func (p *trackedPartition) position() int64 {
	p.mu.Lock()
	defer p.mu.Unlock()
	for _, o := range p.read {
		if !p.done[o] {
			return o
		}
	}
	return p.next
}

func (p *trackedPartition) Committed() int64       { return -1 }
func (p *trackedPartition) SetHighWatermark(int64) {}
func (p *trackedPartition) Idle() <-chan struct{}  { return nil }

// letters records dead letters and stores them at once.
type letters struct {
	mu  sync.Mutex
	all []deadletter.Letter
}

func (l *letters) Add(letter deadletter.Letter, release func()) {
	l.mu.Lock()
	l.all = append(l.all, letter)
	l.mu.Unlock()
	release()
}

func (l *letters) snapshot() []deadletter.Letter {
	l.mu.Lock()
	defer l.mu.Unlock()
	return slices.Clone(l.all)
}

// bundles records the bundles handed on and releases them, as if written.
type bundles struct {
	mu  sync.Mutex
	all []*bundle.Bundle
}

func (s *bundles) Insert(b *bundle.Bundle) {
	s.mu.Lock()
	s.all = append(s.all, b)
	s.mu.Unlock()
	b.Release()
}

func (s *bundles) count() int {
	s.mu.Lock()
	defer s.mu.Unlock()
	return len(s.all)
}

// pollHarness is a reader of the global-hub profile without its consumer:
// the test is its poll loop, the decoding goroutine runs as in Run.
type pollHarness struct {
	t       *testing.T
	r       *Reader
	ctx     context.Context
	p       *trackedPartition
	letters *letters
	sink    *bundles
	decoded chan struct{}
}

const ghTestTopic = "gh-status"

func newPollHarness(t *testing.T, edit func(*Config)) *pollHarness {
	t.Helper()
	cfg := DefaultConfig()
	cfg.Brokers, cfg.Topics = "127.0.0.1:1", []string{ghTestTopic}
	if edit != nil {
		edit(&cfg)
	}
	cfg = cfg.withDefaults()
	if err := cfg.Validate(); err != nil {
		t.Fatal(err)
	}
	m, err := newMetrics(prometheus.NewRegistry())
	if err != nil {
		t.Fatal(err)
	}
	h := &pollHarness{t: t, ctx: context.Background(), p: newTrackedPartition(), letters: &letters{}, sink: &bundles{}, decoded: make(chan struct{})}
	h.r = newReader(cfg, Deps{Decoder: Decoders{}, Sink: h.sink, Rejects: h.letters, Families: []Family{NewGlobalHub()}}, zap.NewNop(), m, cfg.TopicLabels())
	h.r.parts[partitionKey{ghTestTopic, 0}] = h.p
	h.r.decodeQ = make(chan []polled, decodeQueueBatches)
	h.r.free = make(chan []polled, decodeQueueBatches+1)
	h.r.batch = make([]polled, 0, handoffBatch)
	go func() {
		defer close(h.decoded)
		h.r.decodeLoop(h.ctx)
	}()
	return h
}

// poll is what the poll loop does with msgs read in one go, then with a
// poll that finds nothing, now: it hands them on, and lets the decoding
// goroutine look for events not whole in time. It returns once the
// decoding goroutine is done with everything.
func (h *pollHarness) poll(msgs ...*kafka.Message) {
	for _, m := range msgs {
		h.r.handle(h.ctx, m)
	}
	h.r.handOff(h.ctx)
	h.r.tickChunks(h.ctx, time.Now())
	synctest.Wait()
}

// stop ends the decoding goroutine, as Run does.
func (h *pollHarness) stop() {
	close(h.r.decodeQ)
	<-h.decoded
}

// ghMessage is a whole global-hub event of hub on partition 0 at offset.
func ghMessage(t *testing.T, hub, typ, version string, offset int64) *kafka.Message {
	t.Helper()
	m, err := EncodeGlobalHub(GlobalHubEvent{Topic: ghTestTopic, Hub: hub, Type: typ, Version: version, Data: []byte(`[]`)})
	if err != nil {
		t.Fatal(err)
	}
	m.TopicPartition.Partition, m.TopicPartition.Offset = 0, kafka.Offset(offset)
	return m
}

// TestChunkTimeout is the reproduction: a first chunk of an event
// of 1,000 bytes at offset 385, then 20 valid heartbeats of the same hub
// on the same partition, and nothing more of the event. The heartbeats are
// handed on, and the partition's position stays at the chunk, for
// --chunk-timeout (2 minutes by default) and no longer: then the chunk is
// dead-lettered chunk_timeout, once, and the position moves past the
// heartbeats. It used to stay at 385 for as long as the agent sent no
// other compliance event, with no dead letter.
func TestChunkTimeout(t *testing.T) {
	synctest.Test(t, func(t *testing.T) {
		h := newPollHarness(t, nil)
		defer h.stop()
		data := []byte(`[{"policyId":"p1","compliantClusters":["` + strings.Repeat("a", 1000-44) + `"]}]`)
		if len(data) != 1000 {
			t.Fatalf("the event's data is %d bytes", len(data))
		}
		first := chunked(t, "hub1", "ev-1", data, 100, 0, 385)[0]
		msgs := []*kafka.Message{first}
		for i := range 20 {
			msgs = append(msgs, ghMessage(t, "hub1", "managedhub.heartbeat", fmt.Sprintf("%d.0", i+1), int64(386+i)))
		}
		h.poll(msgs...)
		if n := h.sink.count(); n != 20 {
			t.Fatalf("%d heartbeats handed on, want 20", n)
		}
		if pos := h.p.position(); pos != 385 {
			t.Fatalf("position %d while the event is being assembled, want 385", pos)
		}
		if held := h.r.bufferedBytes(); held < int64(len(first.Value)) {
			t.Errorf("the reader counts %d bytes buffered with a chunk of %d held: the chunk is not counted for --max-buffered-bytes", held, len(first.Value))
		}

		// A poll finding nothing, now and then, as the poll loop makes
		// them, until a second before the timeout: the chunk is held.
		start := time.Now()
		for time.Since(start) < DefaultChunkTimeout-time.Second {
			time.Sleep(time.Second)
			h.poll()
		}
		if l := h.letters.snapshot(); len(l) != 0 || h.p.position() != 385 {
			t.Fatalf("%v after the event's first chunk was read: %d dead letters, position %d; want none yet, 385", time.Since(start), len(l), h.p.position())
		}
		// Past the timeout it is given up.
		for time.Since(start) < 2*DefaultChunkTimeout {
			time.Sleep(time.Second)
			h.poll()
		}
		got := h.letters.snapshot()
		if len(got) != 1 || got[0].Reason != deadletter.ChunkTimeout || got[0].Origin.Offset != 385 {
			t.Fatalf("dead letters %v after %v, want the chunk at 385 once, as %s", reasonsAt(got), time.Since(start), deadletter.ChunkTimeout)
		}
		if got[0].Hub != "hub1" || got[0].Type != bundle.GlobalHubPrefix+"policy.localcompliance" || !strings.Contains(got[0].Err.Error(), "--chunk-timeout") {
			t.Errorf("letter of hub %q type %q: %v", got[0].Hub, got[0].Type, got[0].Err)
		}
		if pos := h.p.position(); pos != 406 {
			t.Errorf("position %d after the event was given up, want 406, past the heartbeats", pos)
		}
		if held := h.r.chunkBytes(); held != 0 {
			t.Errorf("%d bytes of chunks still counted", held)
		}
	})
}

// TestChunkTimeoutAfterPause: the age of an event counts from its first
// chunk; the next chunks coming in time complete it, and an event cut off
// by a pause longer than the timeout is given up while nothing is read
// (the poll loop goes on polling paused partitions).
func TestChunkTimeoutAfterPause(t *testing.T) {
	synctest.Test(t, func(t *testing.T) {
		h := newPollHarness(t, func(c *Config) { c.ChunkTimeout = 10 * time.Second })
		defer h.stop()
		data := []byte(`[{"policyId":"p1","compliantClusters":["` + strings.Repeat("a", 300) + `"]}]`)
		whole := chunked(t, "hub1", "ev-whole", data, 100, 0, 0)
		cut := chunked(t, "hub2", "ev-cut", data, 100, 0, 10)
		h.poll(whole[0], cut[0])
		time.Sleep(9 * time.Second)
		h.poll(whole[1:]...)
		if n := h.sink.count(); n != 1 {
			t.Fatalf("%d events handed on, want hub1's, whole in time", n)
		}
		for range 3 {
			time.Sleep(time.Second)
			h.poll()
		}
		got := h.letters.snapshot()
		if len(got) != 1 || got[0].Reason != deadletter.ChunkTimeout || got[0].Origin.Offset != 10 {
			t.Fatalf("dead letters %v, want hub2's first chunk at 10 as %s", reasonsAt(got), deadletter.ChunkTimeout)
		}
		// The rest of the event comes late: each chunk is decoded alone, a
		// bad payload, and the event is not lettered again.
		h.poll(cut[1:]...)
		got = h.letters.snapshot()
		if n := len(got); n != len(cut) {
			t.Fatalf("%d dead letters, want %d: the event's, then its late chunks", n, len(cut))
		}
		for _, l := range got[1:] {
			if l.Reason != deadletter.BadPayload {
				t.Errorf("a late chunk at %d dead-lettered %s, want %s", l.Origin.Offset, l.Reason, deadletter.BadPayload)
			}
		}
		if pos := h.p.position(); pos != int64(10+len(cut)) {
			t.Errorf("position %d, want %d", pos, 10+len(cut))
		}
	})
}

// TestChunkBytesBounded: the chunks held count for --max-buffered-bytes,
// and never hold more than three quarters of it, the oldest event given
// up first: reading resumes below 80 %, so chunks above that would keep
// it paused with nothing to complete them.
func TestChunkBytesBounded(t *testing.T) {
	synctest.Test(t, func(t *testing.T) {
		data := []byte(`[{"policyId":"p1","compliantClusters":["` + strings.Repeat("a", 2000) + `"]}]`)
		var firsts []*kafka.Message
		for i := range 4 {
			firsts = append(firsts, chunked(t, fmt.Sprintf("hub%d", i), fmt.Sprintf("ev-%d", i), data, 1000, 0, int64(10*i))[0])
		}
		per := int64(heldBytes(firsts[0], len(firsts[0].Value)))
		// Room for three first chunks in three quarters of the budget.
		budget := (3*per + per/2) * 4 / 3
		h := newPollHarness(t, func(c *Config) { c.MaxBufferedBytes = budget })
		defer h.stop()
		for i, m := range firsts[:3] {
			h.poll(m)
			if got, want := h.r.bufferedBytes(), int64(i+1)*per; got != want {
				t.Fatalf("%d chunks held: %d bytes buffered, want %d", i+1, got, want)
			}
			time.Sleep(time.Second) // the first is the oldest
		}
		if l := h.letters.snapshot(); len(l) != 0 {
			t.Fatalf("dead letters %v with three chunks held within the budget", reasonsAt(l))
		}
		h.poll(firsts[3])
		got := h.letters.snapshot()
		if len(got) != 1 || got[0].Reason != deadletter.ChunkTimeout || got[0].Origin.Offset != 0 {
			t.Fatalf("dead letters %v, want the oldest event's first chunk, at 0, as %s", reasonsAt(got), deadletter.ChunkTimeout)
		}
		if held, limit := h.r.chunkBytes(), h.r.cfg.maxChunkBytes(); held > limit || held != 3*per {
			t.Errorf("%d bytes of chunks held, want 3 chunks' %d, within %d", held, 3*per, limit)
		}
		if pos := h.p.position(); pos != 10 {
			t.Errorf("position %d, want 10, the oldest event still held", pos)
		}
	})
}

// TestChunkRejectPanics: a panic while dead-lettering an event given up
// (here the dead-letter queue's) is recovered for that event alone: it is
// dead-lettered decode_panic, the message being read is handled as usual.
func TestChunkRejectPanics(t *testing.T) {
	synctest.Test(t, func(t *testing.T) {
		h := newPollHarness(t, nil)
		defer h.stop()
		panics := 1
		h.r.deps.Rejects = rejectsFunc(func(l deadletter.Letter, release func()) {
			if panics > 0 {
				panics--
				panic("the dead-letter queue's bug")
			}
			h.letters.Add(l, release)
		})
		data := []byte(`[{"policyId":"p1","compliantClusters":["` + strings.Repeat("a", 300) + `"]}]`)
		old := chunked(t, "hub1", "ev-old", data, 100, 0, 0)
		next := chunked(t, "hub1", "ev-next", []byte(`[]`), 100, 0, 2)
		h.poll(old[0], old[1], next[0])
		got := h.letters.snapshot()
		if len(got) != 1 || got[0].Reason != deadletter.DecodePanic || got[0].Origin.Offset != 0 {
			t.Fatalf("dead letters %v, want the given-up event at 0 as %s", reasonsAt(got), deadletter.DecodePanic)
		}
		if n := h.sink.count(); n != 1 {
			t.Errorf("%d events handed on, want the next one", n)
		}
		if pos := h.p.position(); pos != 3 {
			t.Errorf("position %d, want 3", pos)
		}
	})
}

type rejectsFunc func(l deadletter.Letter, release func())

func (f rejectsFunc) Add(l deadletter.Letter, release func()) { f(l, release) }

func reasonsAt(ls []deadletter.Letter) []string {
	var out []string
	for _, l := range ls {
		out = append(out, fmt.Sprintf("%s@%d", l.Reason, l.Origin.Offset))
	}
	return out
}
