package conflation

import (
	"context"
	"sync"
)

// ReadyQueue is a FIFO of units that have a bundle ready. A unit is on it at
// most once (Unit.queued guarantees that), so its length is bounded by the
// number of hubs and Push never blocks.
type ReadyQueue struct {
	mu    sync.Mutex
	items []*Unit
	head  int
	// wake has capacity one: a Push leaves a token so that a Pop that found
	// the queue empty and is about to wait does not miss it.
	wake chan struct{}
}

// NewReadyQueue returns an empty queue.
func NewReadyQueue() *ReadyQueue {
	return &ReadyQueue{wake: make(chan struct{}, 1)}
}

// Push appends u.
func (q *ReadyQueue) Push(u *Unit) {
	q.mu.Lock()
	q.items = append(q.items, u)
	q.mu.Unlock()
	select {
	case q.wake <- struct{}{}:
	default:
	}
}

// Pop removes and returns the oldest unit, blocking until one is there or
// ctx ends.
func (q *ReadyQueue) Pop(ctx context.Context) (*Unit, error) {
	for {
		// A cancelled ctx wins over a non-empty queue: stopping means no
		// new pops, even with a backlog waiting.
		if err := ctx.Err(); err != nil {
			return nil, err
		}
		if u := q.tryPop(); u != nil {
			return u, nil
		}
		select {
		case <-q.wake:
		case <-ctx.Done():
			return nil, ctx.Err()
		}
	}
}

// TryPop removes and returns the oldest unit, or nil when the queue is
// empty; it never blocks.
func (q *ReadyQueue) TryPop() *Unit { return q.tryPop() }

func (q *ReadyQueue) tryPop() *Unit {
	q.mu.Lock()
	defer q.mu.Unlock()
	if q.head == len(q.items) {
		return nil
	}
	u := q.items[q.head]
	q.items[q.head] = nil
	q.head++
	if q.head == len(q.items) {
		q.items, q.head = q.items[:0], 0
	} else if q.head > 64 && q.head > len(q.items)/2 {
		n := copy(q.items, q.items[q.head:])
		clear(q.items[n:])
		q.items, q.head = q.items[:n], 0
	}
	if q.head < len(q.items) {
		// More remain: pass the wake-up on to another waiting popper.
		select {
		case q.wake <- struct{}{}:
		default:
		}
	}
	return u
}

// Len returns the number of queued units.
func (q *ReadyQueue) Len() int {
	q.mu.Lock()
	defer q.mu.Unlock()
	return len(q.items) - q.head
}
