package transport

import (
	"sync"
	"sync/atomic"

	"github.com/stbridge/stb/pkg/bundle"
)

// FarBehind is how many messages a partition must still hold after a
// message's for Behind to report it: below it, the reader counts as at the
// partition's end, and the conflation units write what they take at once.
// Small enough that the last stretch of a catch-up writes little twice,
// large enough that a live fetch of a few hundred messages never lingers.
const FarBehind = 256

// refreshEvery is how often, in messages of one partition, the reader
// reads the partition's end again while it is far from it, to follow a
// partition that grows during the catch-up.
const refreshEvery = 1024

// ends keeps each assigned partition's high watermark as the reader last
// read it from the client's cache (kafka.Consumer.GetWatermarkOffsets: no
// request to the broker). The poll loop writes it; the decoding goroutine
// and the conflation units read it through Behind.
type ends struct {
	mu sync.RWMutex
	m  map[partitionKey]*partitionEnd
}

type partitionEnd struct {
	high atomic.Int64
	seen int // messages since the last refresh; poll loop only
}

// of returns k's entry, creating it.
func (e *ends) of(k partitionKey) *partitionEnd {
	e.mu.RLock()
	pe := e.m[k]
	e.mu.RUnlock()
	if pe != nil {
		return pe
	}
	e.mu.Lock()
	defer e.mu.Unlock()
	if e.m == nil {
		e.m = map[partitionKey]*partitionEnd{}
	}
	if pe = e.m[k]; pe == nil {
		pe = &partitionEnd{}
		pe.high.Store(-1)
		e.m[k] = pe
	}
	return pe
}

func (e *ends) forget(k partitionKey) {
	e.mu.Lock()
	delete(e.m, k)
	e.mu.Unlock()
}

// observeEnd is called by the poll loop for each message read at offset of
// k: it reads the partition's end again when the message reached the end
// last read (to tell a partition at its end, live, from one that grew) and
// every refreshEvery messages.
func (r *Reader) observeEnd(k partitionKey, offset int64) {
	if r.consumer == nil {
		return // a test's reader without a client: no end to read
	}
	pe := r.ends.of(k)
	pe.seen++
	if offset+1 < pe.high.Load() && pe.seen < refreshEvery {
		return
	}
	pe.seen = 0
	if _, high, err := r.consumer.GetWatermarkOffsets(k.topic, k.partition); err == nil && high >= 0 {
		pe.high.Store(high)
	}
}

// Behind reports whether the partition a bundle was read from still held
// at least FarBehind messages after it when it was read: the reader is
// catching up there, and a newer bundle of the same hub is probably
// already waiting in Kafka (conflation.Config.CatchingUp). end is the
// partition's end as last read: once the reader has read up to it, any
// newer bundle that was waiting then has been read. It is safe to call
// from any goroutine, and not behind for a partition the reader does not
// hold or whose end it has not read yet.
func (r *Reader) Behind(o bundle.Origin) (end int64, behind bool) {
	r.ends.mu.RLock()
	pe := r.ends.m[partitionKey{o.Topic, o.Partition}]
	r.ends.mu.RUnlock()
	if pe == nil {
		return 0, false
	}
	end = pe.high.Load()
	return end, end-(o.Offset+1) >= FarBehind
}
