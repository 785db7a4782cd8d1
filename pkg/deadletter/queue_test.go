package deadletter

import (
	"context"
	"sync/atomic"
	"testing"
	"time"

	"go.uber.org/zap"
	"go.uber.org/zap/zapcore"
	"go.uber.org/zap/zaptest/observer"

	"github.com/stbridge/stb/pkg/backoff"
	"github.com/stbridge/stb/pkg/db/dbtest"
)

// TestQueueReleasesOnlyWhatIsStored: Add never blocks, even while the
// database refuses the letters (here: the table is locked, then renamed
// away); nothing is released until its letter is stored; once the
// database is back everything is stored once, in batches, and released.
func TestQueueReleasesOnlyWhatIsStored(t *testing.T) {
	pool, _ := dbtest.New(t)
	ctx := context.Background()
	if _, err := pool.Exec(ctx, `ALTER TABLE stb.dead_letters RENAME TO dead_letters_away`); err != nil {
		t.Fatal(err)
	}
	cfg := DefaultQueueConfig()
	cfg.MaxBatch, cfg.Backoff = 7, backoff.Exponential{Min: 10 * time.Millisecond, Max: 50 * time.Millisecond}
	core, logs := observer.New(zapcore.WarnLevel)
	q, err := NewQueue(cfg, NewWriter(pool), zap.New(core))
	if err != nil {
		t.Fatal(err)
	}
	runCtx, stop := context.WithCancel(ctx)
	done := make(chan error, 1)
	go func() { done <- q.Run(runCtx) }()

	var released atomic.Int64
	start := time.Now()
	for i := range 50 {
		q.Add(letterAt(int64(i)), func() { released.Add(1) })
	}
	if took := time.Since(start); took > time.Second {
		t.Fatalf("adding 50 letters with the table gone took %v", took)
	}
	// Several failed attempts, each logged once it failed: none may
	// release a letter.
	failed := func() int { return logs.FilterMessage("dead letters not stored yet; retrying").Len() }
	deadline := time.Now().Add(10 * time.Second)
	for failed() < 3 {
		if time.Now().After(deadline) {
			t.Fatalf("%d failed attempts logged after 10s, want 3", failed())
		}
		time.Sleep(time.Millisecond)
	}
	if n := released.Load(); n != 0 {
		t.Fatalf("%d letters released while none could be stored", n)
	}
	if q.Len() != 50 || q.Bytes() <= 0 {
		t.Fatalf("queue holds %d letters, %d bytes; want 50 and their size", q.Len(), q.Bytes())
	}

	if _, err := pool.Exec(ctx, `ALTER TABLE stb.dead_letters_away RENAME TO dead_letters`); err != nil {
		t.Fatal(err)
	}
	deadline = time.Now().Add(10 * time.Second)
	for released.Load() < 50 {
		if time.Now().After(deadline) {
			t.Fatalf("only %d of 50 released after the database came back", released.Load())
		}
		time.Sleep(10 * time.Millisecond)
	}
	stop()
	if err := <-done; err != nil {
		t.Fatal(err)
	}
	if rows, distinct := countLetters(t, pool); rows != 50 || distinct != 50 {
		t.Fatalf("%d rows for %d messages, want 50", rows, distinct)
	}
	if q.Len() != 0 || q.Bytes() != 0 || q.Stored() != 50 {
		t.Fatalf("after storing: %d queued, %d bytes, %d stored", q.Len(), q.Bytes(), q.Stored())
	}
}

// TestQueueFlush stores what is queued without Run, as the shutdown does.
func TestQueueFlush(t *testing.T) {
	pool, _ := dbtest.New(t)
	cfg := DefaultQueueConfig()
	cfg.MaxBatch = 3
	q, err := NewQueue(cfg, NewWriter(pool), nil)
	if err != nil {
		t.Fatal(err)
	}
	var released atomic.Int64
	for i := range 10 {
		q.Add(letterAt(int64(i)), func() { released.Add(1) })
	}
	if err := q.Flush(context.Background()); err != nil {
		t.Fatal(err)
	}
	if released.Load() != 10 || q.Len() != 0 {
		t.Fatalf("flush released %d, left %d; want 10 and 0", released.Load(), q.Len())
	}
}

// TestQueueStoreHasADeadline: a database that hangs (here a lock another
// transaction holds on the table: the INSERT waits for it for ever) fails
// a batch after StoreTimeout, to be retried, instead of holding the
// queue's goroutine and, at shutdown, Flush until the database answers.
// Once the lock is gone the letters are stored.
func TestQueueStoreHasADeadline(t *testing.T) {
	pool, _ := dbtest.New(t)
	ctx := context.Background()
	blocker, err := pool.Begin(ctx)
	if err != nil {
		t.Fatal(err)
	}
	if _, err := blocker.Exec(ctx, `LOCK TABLE stb.dead_letters IN ACCESS EXCLUSIVE MODE`); err != nil {
		t.Fatal(err)
	}
	cfg := DefaultQueueConfig()
	cfg.StoreTimeout = 200 * time.Millisecond
	q, err := NewQueue(cfg, NewWriter(pool), zap.NewNop())
	if err != nil {
		t.Fatal(err)
	}
	var released atomic.Int64
	q.Add(letterAt(1), func() { released.Add(1) })
	start := time.Now()
	err = q.Flush(ctx)
	if took := time.Since(start); err == nil || took > 5*time.Second {
		t.Fatalf("Flush against a locked table returned %v after %v, want an error after about %v", err, took, cfg.StoreTimeout)
	}
	if released.Load() != 0 || q.Len() != 1 {
		t.Fatalf("a letter not stored was released (%d) or dropped (%d queued)", released.Load(), q.Len())
	}
	if err := blocker.Rollback(ctx); err != nil {
		t.Fatal(err)
	}
	if err := q.Flush(ctx); err != nil || released.Load() != 1 {
		t.Fatalf("after the lock: Flush %v, %d released, want stored", err, released.Load())
	}
}
