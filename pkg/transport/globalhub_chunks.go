package transport

import (
	"cmp"
	"context"
	"fmt"
	"slices"
	"strconv"
	"sync/atomic"
	"time"

	"github.com/confluentinc/confluent-kafka-go/v2/kafka"

	"github.com/stbridge/stb/pkg/bundle"
	"github.com/stbridge/stb/pkg/deadletter"
)

// Chunks of large global-hub events.
//
// The global-hub agent's producer (pkg/transport/producer/
// generic_producer.go) cuts the data of an event above its limit (10 MiB)
// into chunks and sends each as the event with the chunk as data and two
// extensions: extsize, the whole data's length, and extoffset, where the
// chunk ends in it (the sum of the lengths of the chunks so far). The
// client gives every send a new id (sdk-go's defaulters clone the event
// context and set a fresh UUID), so the chunks of one event have ids of
// their own. They are sent one after the other with the same key (the
// event type), so they arrive in order on one partition, and the agent
// sends the next event of that hub and type only after the last chunk;
// the chunks of other events (other hubs, on the shared topic) may come
// between them.
//
// The reader therefore assembles by sender — topic, partition, source,
// authedhub (the hub the transport vouches for, ExtAuthedHub) and type —
// not by id: a chunk that ends where its data ends (extoffset =
// its length) starts an event, and the next ones must follow on. It holds
// a chunk until its event is whole, then decodes the assembled event as
// one message at the offset of its first chunk, with the first chunk's
// id. Only that first offset stays outstanding for the committer: the
// later chunks are done as soon as they are held, since the first one
// already keeps the committed position before all of them, and a restart
// reads them all again. A chunk read again (a producer retry) is dropped.
// Only binary-mode chunks are assembled.
//
// An event the reader cannot assemble is dead-lettered, never waited for
// forever: chunks that do not follow on, an event larger than the
// profile's limit (each of its chunks is then decoded alone and rejected
// as too_large), or an incomplete event followed by another event of the
// same hub and type (bad_payload, all three); and an event not whole
// within --chunk-timeout (Config.ChunkTimeout) of its first chunk, or the
// oldest one while the chunks held exceed three quarters of
// --max-buffered-bytes (chunk_timeout). The chunks held count in the
// bytes backpressure weighs (Reader.bufferedBytes): an agent that stops
// mid-event held its partition's committed position, and up to the
// profile's limit per sender outside --max-buffered-bytes, until that
// sender sent again (issue 34). The bound in bytes is below the 80 % at
// which reading resumes: held chunks alone must never keep reading
// paused, since only reading on can complete them.

// Binary-mode headers of the attributes the assembler reads.
const (
	headerID     = "ce_id"
	headerSource = "ce_source"
	headerType   = "ce_type"
	headerSize   = "ce_" + ExtChunkSize
	headerOffset = "ce_" + ExtChunkOffset
	headerAuthed = "ce_" + ExtAuthedHub
)

// chunkAssembler holds the chunks of the events being assembled. The
// reader's decoding goroutine uses it, and the revocation (dropChunks)
// while that goroutine is idle, after waiting for it; held and count may
// be read from any goroutine (the poll loop's backpressure and
// tickChunks).
type chunkAssembler struct {
	family Assembler
	limit  int
	open   map[senderKey]*assembly
	// held is what the open assemblies' chunks count for backpressure
	// (polled.held of each chunk held), and count how many are open.
	held  atomic.Int64
	count atomic.Int32
}

// senderKey identifies what sends chunked events one at a time. The
// authedhub is part of it: a chunk that another sender than the one the
// transport vouches for sends with the same source is never joined to
// that sender's event (whose first chunk's headers the whole event
// takes), but decoded alone and refused.
type senderKey struct {
	topic                string
	partition            int32
	source, authed, kind string
}

type assembly struct {
	first polled
	last  *kafka.Message
	size  int
	got   int
	parts []chunkPart
	// since is when its first chunk was read (decoded), and held what its
	// chunks count in chunkAssembler.held.
	since time.Time
	held  int64
}

type chunkPart struct {
	start int
	data  []byte
}

// newChunkAssembler assembles the chunked events of family f up to limit
// bytes each.
func newChunkAssembler(f Assembler, limit int) *chunkAssembler {
	return &chunkAssembler{family: f, limit: limit, open: map[senderKey]*assembly{}}
}

// givenUp is the first chunk of an event the assembler gave up on, and
// why: to be dead-lettered.
type givenUp struct {
	first  polled
	reason deadletter.Reason
	err    error
}

// openAssembly adds an assembly and closeAssembly removes one, keeping
// held and count.
func (c *chunkAssembler) openAssembly(key senderKey, a *assembly) {
	c.open[key] = a
	c.count.Add(1)
}

func (c *chunkAssembler) closeAssembly(key senderKey, a *assembly) {
	delete(c.open, key)
	c.count.Add(-1)
	c.held.Add(-a.held)
}

// hold counts a chunk held by a.
func (c *chunkAssembler) hold(a *assembly, it polled) {
	a.held += int64(it.held)
	c.held.Add(int64(it.held))
}

// add takes one polled message. It returns the message to decode and true:
// the message itself when it is no chunk to hold, or the whole event once
// its last chunk is in. It returns false while the event is incomplete.
// incomplete is called for the first chunk of each event given up on,
// with bad_payload, once the assembler's state no longer has it; it must
// not panic (the reader's collects them, rejectGivenUp letters them).
func (c *chunkAssembler) add(it polled, incomplete func(first polled, reason deadletter.Reason, err error)) (polled, bool) {
	msg := it.msg
	if !c.family.MayChunk(msg, len(c.open) > 0) {
		return it, true
	}
	h := chunkHeaders(msg)
	if h.typ == "" || !c.family.Owns(h.typ) || msg.TopicPartition.Topic == nil {
		return it, true
	}
	topic, partition := *msg.TopicPartition.Topic, msg.TopicPartition.Partition
	key := senderKey{topic, partition, h.source, h.authed, h.typ}
	a := c.open[key]
	giveUp := func(err error) {
		c.closeAssembly(key, a)
		incomplete(a.first, deadletter.BadPayload, err)
		a = nil
	}
	if !h.chunked {
		// The agent sends an event only after every chunk of the one
		// before: an open assembly of this sender will never be whole.
		if a != nil {
			giveUp(fmt.Errorf("chunked event %s: %d of %d bytes came before the next event of its hub and type", a.id(), a.got, a.size))
		}
		return it, true
	}
	size, err1 := strconv.Atoi(h.size)
	end, err2 := strconv.Atoi(h.offset)
	start := end - len(msg.Value)
	if err1 != nil || err2 != nil || size <= 0 || size > c.limit || start < 0 || end > size {
		// Decoded alone, it is rejected: too_large above the limit,
		// bad_payload otherwise. An event it belonged to is given up.
		if a != nil {
			giveUp(fmt.Errorf("chunked event %s: a chunk (%s %s, %s %s) does not fit", a.id(), ExtChunkSize, h.size, ExtChunkOffset, h.offset))
		}
		return it, true
	}
	if a != nil && start < a.got && slices.ContainsFunc(a.parts, func(p chunkPart) bool { return p.start == start }) {
		// A chunk read twice: the first copy is held.
		it.p.Done(bundle.Origin{Topic: topic, Partition: partition, Offset: int64(msg.TopicPartition.Offset)})
		return polled{}, false
	}
	if a != nil && (start != a.got || size != a.size) {
		giveUp(fmt.Errorf("chunked event %s: a chunk at byte %d of %d follows %d of %d bytes", a.id(), start, size, a.got, a.size))
	}
	if a == nil {
		if start != 0 {
			// Not the first chunk of an event: decoded alone, a bad
			// payload.
			return it, true
		}
		a = &assembly{first: it, size: size, since: time.Now()}
		c.openAssembly(key, a)
	} else {
		// Held: the first chunk keeps the committed position before it.
		it.p.Done(bundle.Origin{Topic: topic, Partition: partition, Offset: int64(msg.TopicPartition.Offset)})
	}
	c.hold(a, it)
	a.parts = append(a.parts, chunkPart{start, msg.Value})
	a.got += len(msg.Value)
	a.last = msg
	if a.got < a.size {
		return polled{}, false
	}
	c.closeAssembly(key, a)
	data, err := a.assemble()
	if err != nil {
		incomplete(a.first, deadletter.BadPayload, fmt.Errorf("chunked event %s: %w", a.id(), err))
		return polled{}, false
	}
	whole := *a.first.msg
	whole.Value = data
	whole.Headers = slices.DeleteFunc(slices.Clone(whole.Headers), func(h kafka.Header) bool {
		return h.Key == headerSize || h.Key == headerOffset
	})
	return polled{msg: &whole, p: a.first.p, tc: a.first.tc}, true
}

// id is the id of the event's first chunk, which the whole event takes.
func (a *assembly) id() string { return chunkHeaders(a.first.msg).id }

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

// expire gives up, with chunk_timeout, the events whose first chunk was
// read timeout or longer before now, and then, oldest first, events while
// the chunks held exceed maxHeld (0: no bound in bytes).
func (c *chunkAssembler) expire(now time.Time, timeout time.Duration, maxHeld int64, incomplete func(first polled, reason deadletter.Reason, err error)) {
	for key, a := range c.open {
		if age := now.Sub(a.since); age >= timeout {
			c.closeAssembly(key, a)
			incomplete(a.first, deadletter.ChunkTimeout, fmt.Errorf("chunked event %s: %d of %d bytes after %v; the rest did not come within --chunk-timeout (%v)",
				a.id(), a.got, a.size, age.Round(time.Millisecond), timeout))
		}
	}
	for maxHeld > 0 && c.held.Load() > maxHeld && len(c.open) > 0 {
		var oldest *assembly
		var oldestKey senderKey
		for key, a := range c.open {
			if oldest == nil || a.since.Before(oldest.since) {
				oldest, oldestKey = a, key
			}
		}
		held := c.held.Load()
		c.closeAssembly(oldestKey, oldest)
		incomplete(oldest.first, deadletter.ChunkTimeout, fmt.Errorf("chunked event %s: %d of %d bytes given up, the oldest of the events being assembled, whose chunks held %d bytes, more than the %d (three quarters of --max-buffered-bytes) they may hold",
			oldest.id(), oldest.got, oldest.size, held, maxHeld))
	}
}

// chunkTick is how often, at most, the poll loop makes the decoding
// goroutine look for expired events while some are being assembled.
func (c Config) chunkTick() time.Duration { return min(c.ChunkTimeout/4, time.Second) }

// maxChunkBytes is what the events being assembled may hold: three
// quarters of --max-buffered-bytes, below the 80 % at which reading
// resumes after a pause (0: no bound without a budget).
func (c Config) maxChunkBytes() int64 { return c.MaxBufferedBytes / 4 * 3 }

// chunkBytes is what the events being assembled hold, for backpressure.
func (r *Reader) chunkBytes() int64 {
	var n int64
	for _, c := range r.chunks {
		n += c.held.Load()
	}
	return n
}

// assembling reports whether some event is being assembled.
func (r *Reader) assembling() bool {
	for _, c := range r.chunks {
		if c.count.Load() > 0 {
			return true
		}
	}
	return false
}

// tickChunks runs on the poll loop: while events are being assembled, it
// hands the decoding goroutine the batch being collected, empty or not,
// every chunkTick, so that it gives up the events not whole in time even
// when nothing else is read (a quiet partition, every partition paused).
func (r *Reader) tickChunks(ctx context.Context, now time.Time) {
	if !r.assembling() || now.Sub(r.lastChunkTick) < r.cfg.chunkTick() {
		return
	}
	r.lastChunkTick = now
	r.send(ctx)
}

// expireChunks gives up, on the decoding goroutine, the events not whole
// within Config.ChunkTimeout, or beyond what held chunks may hold
// (chunkAssembler.expire), and dead-letters their first chunks.
func (r *Reader) expireChunks() {
	if !r.assembling() {
		return
	}
	// The bound in bytes is on every family's chunks together: each
	// gives up its oldest while the total exceeds it.
	for _, c := range r.chunks {
		limit := r.cfg.maxChunkBytes()
		if limit > 0 {
			limit = max(1, limit-(r.chunkBytes()-c.held.Load()))
		}
		c.expire(time.Now(), r.cfg.ChunkTimeout, limit, r.collect)
	}
	r.rejectGivenUp()
}

// collectGivenUp is chunkAssembler.add's incomplete for the reader: it
// keeps the first chunk to dead-letter once the assembler returns.
func (r *Reader) collectGivenUp(first polled, reason deadletter.Reason, err error) {
	r.givenUp = append(r.givenUp, givenUp{first: first, reason: reason, err: err})
}

// rejectGivenUp dead-letters the first chunks of the events given up,
// each once; a panic doing so is recovered for each alone (panicked).
func (r *Reader) rejectGivenUp() {
	for i := 0; i < len(r.givenUp); i++ {
		g := r.givenUp[i]
		r.givenUp[i] = givenUp{}
		r.rejectHeld(g)
	}
	r.givenUp = r.givenUp[:0]
}

func (r *Reader) rejectHeld(g givenUp) {
	defer func() {
		if v := recover(); v != nil {
			r.panicked(g.first, v)
		}
	}()
	r.rejectIncomplete(g.first, g.reason, g.err)
}

// dropChunks forgets the events being assembled from a revoked partition
// and marks their first chunks done, so that the partition can become
// idle: its final commit, made before, stays before them, and its new
// owner reads them again. The decoding goroutine is idle meanwhile (the
// revocation waited for it).
func (r *Reader) dropChunks(topic string, partition int32) {
	for _, c := range r.chunks {
		for k, a := range c.open {
			if k.topic == topic && k.partition == partition {
				c.closeAssembly(k, a)
				m := a.first.msg
				a.first.p.Done(bundle.Origin{Topic: topic, Partition: partition, Offset: int64(m.TopicPartition.Offset)})
			}
		}
	}
}

// mayChunk reports, without allocating, whether msg needs the assembler:
// a global-hub event that carries a chunk extension, or any global-hub
// event while some assembly is open (it may end its sender's). Every other
// message, most of them, is decoded as it is.
func mayChunk(msg *kafka.Message, open bool) bool {
	var gh, chunk bool
	for _, hd := range msg.Headers {
		switch hd.Key {
		case headerType:
			n := len(GlobalHubEventTypePrefix)
			gh = len(hd.Value) >= n && string(hd.Value[:n]) == GlobalHubEventTypePrefix
		case headerSize, headerOffset:
			chunk = true
		}
	}
	return gh && (chunk || open)
}

type chunkHeaderValues struct {
	id, source, authed, typ, size, offset string
	chunked                               bool
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
		case headerAuthed:
			h.authed = string(hd.Value)
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
// the later chunks were done when they were held. Once its letter is
// stored, the partition's committed position moves past the event.
func (r *Reader) rejectIncomplete(first polled, reason deadletter.Reason, err error) {
	msg := first.msg
	origin := bundle.Origin{Partition: msg.TopicPartition.Partition, Offset: int64(msg.TopicPartition.Offset)}
	if msg.TopicPartition.Topic != nil {
		origin.Topic = *msg.TopicPartition.Topic
	}
	rej := newReject(msg, origin, reason, err)
	h := chunkHeaders(msg)
	rej.Hub = h.source
	for _, c := range r.chunks {
		if c.family.Owns(h.typ) {
			rej.Hub, rej.Type = c.family.ChunkLetter(h.source, h.typ)
			break
		}
	}
	r.reject(first.p, rej, first.tc)
}
