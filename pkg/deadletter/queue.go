package deadletter

import (
	"context"
	"errors"
	"fmt"
	"sync"
	"sync/atomic"
	"time"

	"go.uber.org/zap"

	"github.com/stbridge/stb/pkg/backoff"
)

// QueueConfig configures a Queue. Start from DefaultQueueConfig.
type QueueConfig struct {
	// MaxBatch is the most letters stored in one statement.
	MaxBatch int
	// Backoff is the wait between attempts while the database refuses a
	// batch.
	Backoff backoff.Exponential
	// StoreTimeout bounds the storing of one batch: a database that hangs
	// fails the attempt, which is retried with Backoff, instead of holding
	// the queue's one goroutine (and, at shutdown, Flush) for ever.
	StoreTimeout time.Duration
}

// DefaultQueueConfig returns the defaults: batches of up to 1,000 letters
// (one statement of a few hundred KiB for small messages), each given 30 s,
// retried from 100 ms up to every 5 s.
func DefaultQueueConfig() QueueConfig {
	return QueueConfig{MaxBatch: 1000, Backoff: backoff.Exponential{Min: 100 * time.Millisecond, Max: 5 * time.Second},
		StoreTimeout: 30 * time.Second}
}

// Validate checks the configuration; it changes nothing.
func (c QueueConfig) Validate() error {
	if c.MaxBatch < 1 {
		return fmt.Errorf("deadletter queue: need MaxBatch ≥ 1, got %d", c.MaxBatch)
	}
	if c.StoreTimeout <= 0 {
		return fmt.Errorf("deadletter queue: need a positive StoreTimeout, got %v", c.StoreTimeout)
	}
	if err := c.Backoff.Validate(); err != nil {
		return fmt.Errorf("deadletter queue: %w", err)
	}
	return nil
}

// Queue holds dead letters until its one goroutine, Run, stores them in
// batches. Add never blocks and does no I/O, so the transport reader,
// which rejects messages on its decoding goroutine, never waits on
// Postgres: during a database outage the letters wait here, counted by
// Bytes (which backpressure adds to what the units hold), and the reader
// keeps polling. A letter's release func runs once it is stored, which is
// when its offset may be committed; letters not stored when the bridge
// stops are read and rejected again after a restart (idempotently: the
// table's key).
type Queue struct {
	cfg    QueueConfig
	w      *Writer
	logger *zap.Logger

	mu      sync.Mutex
	pending []queued
	bytes   atomic.Int64
	wake    chan struct{}

	// flushMu serialises Run's batches and Flush: a batch is taken from the
	// front and removed only once stored.
	flushMu sync.Mutex
	stored  atomic.Int64
}

type queued struct {
	l       Letter
	release func()
	size    int64
}

// NewQueue returns a queue storing through w.
func NewQueue(cfg QueueConfig, w *Writer, logger *zap.Logger) (*Queue, error) {
	if err := cfg.Validate(); err != nil {
		return nil, err
	}
	if w == nil {
		return nil, errors.New("deadletter queue: a Writer is required")
	}
	if logger == nil {
		logger = zap.NewNop()
	}
	return &Queue{cfg: cfg, w: w, logger: logger, wake: make(chan struct{}, 1)}, nil
}

// Add queues l; release, if not nil, runs once l is stored.
func (q *Queue) Add(l Letter, release func()) {
	it := queued{l: l, release: release, size: l.size()}
	q.mu.Lock()
	q.pending = append(q.pending, it)
	q.mu.Unlock()
	q.bytes.Add(it.size)
	select {
	case q.wake <- struct{}{}:
	default:
	}
}

// Len returns the letters waiting to be stored.
func (q *Queue) Len() int {
	q.mu.Lock()
	defer q.mu.Unlock()
	return len(q.pending)
}

// Bytes returns the memory the waiting letters hold.
func (q *Queue) Bytes() int64 { return q.bytes.Load() }

// Stored returns the letters stored so far (new rows and ones the table
// held already).
func (q *Queue) Stored() int64 { return q.stored.Load() }

// Run stores queued letters until ctx ends, retrying with backoff while
// the database refuses them. It returns nil when ctx ends; what is still
// queued then is for Flush.
func (q *Queue) Run(ctx context.Context) error {
	failures := 0 // in a row
	for {
		select {
		case <-ctx.Done():
			return nil
		case <-q.wake:
		}
		for q.Len() > 0 {
			if err := q.storeBatch(ctx); err != nil {
				if ctx.Err() != nil {
					return nil
				}
				failures++
				wait := q.cfg.Backoff.Delay(failures)
				q.logger.Warn("dead letters not stored yet; retrying", zap.Int("queued", q.Len()),
					zap.Duration("retryIn", wait), zap.Error(err))
				select {
				case <-ctx.Done():
					return nil
				case <-time.After(wait):
				}
				continue
			}
			failures = 0
		}
	}
}

// Flush stores everything queued now, one attempt per batch, and returns
// the first error; the shutdown calls it after the reader and the workers
// have stopped, before the final offset commit.
func (q *Queue) Flush(ctx context.Context) error {
	for q.Len() > 0 {
		if err := q.storeBatch(ctx); err != nil {
			return err
		}
	}
	return nil
}

// storeBatch stores the first MaxBatch letters in one statement, then
// removes them and runs their releases.
func (q *Queue) storeBatch(ctx context.Context) error {
	q.flushMu.Lock()
	defer q.flushMu.Unlock()
	q.mu.Lock()
	n := min(len(q.pending), q.cfg.MaxBatch)
	batch := make([]queued, n)
	copy(batch, q.pending[:n])
	q.mu.Unlock()
	if n == 0 {
		return nil
	}
	letters := make([]Letter, n)
	for i := range batch {
		letters[i] = batch[i].l
	}
	wctx, cancel := context.WithTimeout(ctx, q.cfg.StoreTimeout)
	_, err := q.w.Write(wctx, letters...)
	cancel()
	if err != nil {
		return err
	}
	q.mu.Lock()
	rest := copy(q.pending, q.pending[n:])
	clear(q.pending[rest:])
	q.pending = q.pending[:rest]
	q.mu.Unlock()
	var size int64
	for _, it := range batch {
		size += it.size
		if it.release != nil {
			it.release()
		}
	}
	q.bytes.Add(-size)
	q.stored.Add(int64(n))
	return nil
}
