package transport

import (
	"cmp"
	"fmt"
	"slices"
	"strconv"
	"strings"

	"github.com/confluentinc/confluent-kafka-go/v2/kafka"

	"github.com/stbridge/stb/pkg/bundle"
	"github.com/stbridge/stb/pkg/deadletter"
)

// Chunks of large global-hub events.
//
// The global-hub agent's producer cuts the data of an event above its
// message limit into chunks and sends each as the same event (same id,
// same attributes) with two extensions: extsize, the whole data's length,
// and extoffset, where the chunk ends in it (the sum of the lengths of the
// chunks so far). They are sent one after the other with the same key, so
// they arrive in order on one partition, though the chunks of other
// events (other hubs, on the shared topic) may come between them.
//
// The reader holds a chunk until its event is whole, then decodes the
// assembled event as one message at the offset of its first chunk. Only
// that first offset stays outstanding for the committer: the later chunks
// are done as soon as they are held, since the first one already keeps the
// committed position before all of them, and a restart reads them all
// again. Only binary-mode chunks are assembled.
//
// An event the reader cannot assemble is dead-lettered, never waited for
// forever: chunks that do not fit together, an event larger than
// --max-bundle-bytes (each of its chunks is then decoded alone and
// rejected as too_large), or an incomplete event followed by another event
// of the same hub and type, which the agent only sends once it has sent
// every chunk of the one before.

// Binary-mode headers of the attributes the assembler reads.
const (
	headerID     = "ce_id"
	headerSource = "ce_source"
	headerType   = "ce_type"
	headerSize   = "ce_" + ExtChunkSize
	headerOffset = "ce_" + ExtChunkOffset
)

// chunkAssembler holds the chunks of the events being assembled. The
// reader's decoding goroutine uses it, and the revocation (dropChunks)
// while that goroutine is idle, after waiting for it.
type chunkAssembler struct {
	limit int
	open  map[chunkKey]*assembly
}

// chunkKey identifies one chunked event; senderKey what sends them one
// at a time.
type (
	chunkKey struct {
		topic     string
		partition int32
		id        string
	}
	senderKey struct {
		topic        string
		partition    int32
		source, kind string
	}
)

type assembly struct {
	sender senderKey
	first  polled
	last   *kafka.Message
	size   int
	got    int
	parts  []chunkPart
}

type chunkPart struct {
	start int
	data  []byte
}

func newChunkAssembler(limit int) *chunkAssembler {
	return &chunkAssembler{limit: limit, open: map[chunkKey]*assembly{}}
}

// add takes one polled message. It returns the message to decode and true:
// the message itself when it is no chunk to hold, or the whole event once
// its last chunk is in. It returns false while the event is incomplete.
// incomplete is called for the first chunk of each event given up on.
func (c *chunkAssembler) add(it polled, incomplete func(first polled, err error)) (polled, bool) {
	msg := it.msg
	h := chunkHeaders(msg)
	if h.typ == "" || !strings.HasPrefix(h.typ, GlobalHubTypePrefix) || msg.TopicPartition.Topic == nil {
		return it, true
	}
	topic, partition := *msg.TopicPartition.Topic, msg.TopicPartition.Partition
	sender := senderKey{topic, partition, h.source, h.typ}
	key := chunkKey{topic, partition, h.id}
	// The agent sends an event only after every chunk of its previous one
	// of the same type: an open assembly of this sender under another id
	// will never be completed.
	for k, a := range c.open {
		if a.sender == sender && k != key {
			delete(c.open, k)
			incomplete(a.first, fmt.Errorf("chunked event %s: %d of %d bytes came before the next event of its hub and type", k.id, a.got, a.size))
		}
	}
	if !h.chunked {
		return it, true
	}
	size, err1 := strconv.Atoi(h.size)
	end, err2 := strconv.Atoi(h.offset)
	start := end - len(msg.Value)
	if err1 != nil || err2 != nil || size <= 0 || size > c.limit || start < 0 || end > size || h.id == "" {
		// Decoded alone, it is rejected: too_large above the limit,
		// bad_payload otherwise. An event it belonged to is given up.
		if a, ok := c.open[key]; ok {
			delete(c.open, key)
			incomplete(a.first, fmt.Errorf("chunked event %s: a chunk (%s %s, %s %s) does not fit", h.id, ExtChunkSize, h.size, ExtChunkOffset, h.offset))
		}
		return it, true
	}
	a, ok := c.open[key]
	if !ok {
		a = &assembly{sender: sender, first: it, size: size}
		c.open[key] = a
	} else {
		if a.size != size {
			delete(c.open, key)
			incomplete(a.first, fmt.Errorf("chunked event %s: %s changed from %d to %d", h.id, ExtChunkSize, a.size, size))
			return it, true
		}
		// Held: the first chunk keeps the committed position before it.
		it.p.Done(bundle.Origin{Topic: topic, Partition: partition, Offset: int64(msg.TopicPartition.Offset)})
	}
	if !slices.ContainsFunc(a.parts, func(p chunkPart) bool { return p.start == start }) {
		a.parts = append(a.parts, chunkPart{start, msg.Value})
		a.got += len(msg.Value)
	}
	a.last = msg
	if a.got < a.size {
		return polled{}, false
	}
	delete(c.open, key)
	data, err := a.assemble()
	if err != nil {
		incomplete(a.first, fmt.Errorf("chunked event %s: %w", h.id, err))
		return polled{}, false
	}
	whole := *a.last
	whole.TopicPartition = a.first.msg.TopicPartition
	whole.Value = data
	whole.Headers = slices.DeleteFunc(slices.Clone(whole.Headers), func(h kafka.Header) bool {
		return h.Key == headerSize || h.Key == headerOffset
	})
	return polled{msg: &whole, p: a.first.p, tc: a.first.tc}, true
}

// assemble joins the parts in order; they must tile the data exactly.
func (a *assembly) assemble() ([]byte, error) {
	slices.SortFunc(a.parts, func(x, y chunkPart) int { return cmp.Compare(x.start, y.start) })
	data := make([]byte, 0, a.size)
	for _, p := range a.parts {
		if p.start != len(data) {
			return nil, fmt.Errorf("chunks leave a gap or overlap at byte %d", len(data))
		}
		data = append(data, p.data...)
	}
	if len(data) != a.size {
		return nil, fmt.Errorf("chunks hold %d bytes, %s says %d", len(data), ExtChunkSize, a.size)
	}
	return data, nil
}

// dropChunks forgets the events being assembled from a revoked partition
// and marks their first chunks done, so that the partition can become
// idle: its final commit, made before, stays before them, and its new
// owner reads them again. The decoding goroutine is idle meanwhile (the
// revocation waited for it).
func (r *Reader) dropChunks(topic string, partition int32) {
	if r.chunks == nil {
		return
	}
	for k, a := range r.chunks.open {
		if k.topic == topic && k.partition == partition {
			delete(r.chunks.open, k)
			m := a.first.msg
			a.first.p.Done(bundle.Origin{Topic: topic, Partition: partition, Offset: int64(m.TopicPartition.Offset)})
		}
	}
}

type chunkHeaderValues struct {
	id, source, typ, size, offset string
	chunked                       bool
}

func chunkHeaders(msg *kafka.Message) chunkHeaderValues {
	var h chunkHeaderValues
	var hasSize, hasOffset bool
	for _, hd := range msg.Headers {
		switch hd.Key {
		case headerID:
			h.id = string(hd.Value)
		case headerSource:
			h.source = string(hd.Value)
		case headerType:
			h.typ = string(hd.Value)
		case headerSize:
			h.size, hasSize = string(hd.Value), true
		case headerOffset:
			h.offset, hasOffset = string(hd.Value), true
		}
	}
	h.chunked = hasSize && hasOffset
	return h
}

// rejectIncomplete dead-letters the first chunk of an event given up on;
// the later chunks were done when they were held.
func (r *Reader) rejectIncomplete(first polled, err error) {
	msg := first.msg
	origin := bundle.Origin{Partition: msg.TopicPartition.Partition, Offset: int64(msg.TopicPartition.Offset)}
	if msg.TopicPartition.Topic != nil {
		origin.Topic = *msg.TopicPartition.Topic
	}
	rej := newReject(msg, origin, deadletter.BadPayload, err)
	h := chunkHeaders(msg)
	rej.Hub, rej.Type = h.source, GlobalHubBundlePrefix+strings.TrimPrefix(h.typ, GlobalHubTypePrefix)
	r.reject(first.p, rej, first.tc)
}
