package transport

import (
	"context"

	"github.com/confluentinc/confluent-kafka-go/v2/kafka"
)

// The hand-off between the poll loop and the decoding goroutine (Reader's
// decodeQ): the poll loop collects what Poll returns without waiting and
// hands it on in batches, so that a backlog costs one channel send and one
// wake-up per batch, not per message.

// polled is a message the poll loop registered with its partition, on its
// way to the decoding goroutine.
type polled struct {
	msg *kafka.Message
	p   Partition
	tc  *topicCounters
	// held is what the message counts for backpressure until it is
	// decoded: what its bundle will count (heldBytes); a chunk held by
	// the chunk assembler counts it there until its event is whole or
	// given up (chunkAssembler.held).
	held int
}

// handoffBatch is the most messages the poll loop hands on at once, and
// decodeQueueBatches the most batches between the poll loop and the
// decoding goroutine: 256 messages in all, enough to ride out a slow
// message, few enough that their bytes stay small next to
// --max-buffered-bytes.
const (
	handoffBatch       = 64
	decodeQueueBatches = 4
)

// handOff sends the batch to the decoding goroutine and starts a new one.
// It runs on the poll loop (and in the rebalance callback, which runs
// inside Poll). When ctx ends first the batch is dropped: its messages
// stay read and not done, so the committed position stays before them
// and a restart reads them again.
func (r *Reader) handOff(ctx context.Context) {
	if len(r.batch) == 0 {
		return
	}
	r.send(ctx)
}

// send is handOff of the batch even when it is empty: an empty batch
// only wakes the decoding goroutine (tickChunks).
func (r *Reader) send(ctx context.Context) {
	r.pending.Add(1)
	select {
	case r.decodeQ <- r.batch:
		if len(r.batch) > 0 {
			r.metrics.handoffs.Inc()
		}
	case <-ctx.Done():
		r.queuedBytes.Add(-batchBytes(r.batch))
		r.pending.Done()
		clear(r.batch)
		r.batch = r.batch[:0]
		return
	}
	select {
	case b := <-r.free:
		r.batch = b
	default:
		r.batch = make([]polled, 0, handoffBatch)
	}
}

func batchBytes(batch []polled) (n int64) {
	for _, it := range batch {
		n += int64(it.held)
	}
	return n
}

// decodeLoop decodes the queued messages in the order they were polled
// (so each partition's bundles reach the sink in offset order) until the
// queue is closed. After each batch it gives up the chunked events that
// are not whole in time (expireChunks), before the batch counts as
// handed on: a revocation, which waits for that, never meets it.
func (r *Reader) decodeLoop(ctx context.Context) {
	for batch := range r.decodeQ {
		for _, it := range batch {
			r.decode(ctx, it)
			// Now counted where it went, if anywhere: in a bundle, or
			// in the chunk assembler (chunkBytes).
			r.queuedBytes.Add(-int64(it.held))
		}
		r.expireChunks()
		r.pending.Done()
		clear(batch) // the messages are the bundles' now
		select {
		case r.free <- batch[:0]:
		default:
		}
	}
}
