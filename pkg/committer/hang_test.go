package committer

import (
	"context"
	"errors"
	"testing"
	"time"

	"go.uber.org/zap"

	"github.com/stbridge/stb/pkg/bundle"
)

// hungStore is a database that stops answering: Save returns only when its
// context ends. Each call reports whether it had a deadline.
type hungStore struct {
	saving chan bool // a Save started; true if its context has a deadline
}

func (s *hungStore) Save(ctx context.Context, _ []Position) error {
	_, bounded := ctx.Deadline()
	s.saving <- bounded
	<-ctx.Done()
	return ctx.Err()
}

// TestRevokeDuringHungCommit is the regression test of issue 21: Run
// saved offsets without a deadline while holding the commit lock, and
// Revoke, which the reader calls from the Kafka rebalance callback, waited
// for that lock without bound, so a database that hung stalled the poll
// loop until the group evicted the member. Every save must have a
// deadline, and Revoke must give up waiting for a commit in progress when
// its own context ends.
func TestRevokeDuringHungCommit(t *testing.T) {
	store := &hungStore{saving: make(chan bool, 4)}
	// An hour: only the caller's context can end the revocation's wait
	// here, so the test measures Revoke's bound, not the save's.
	c, err := New(Config{Interval: 10 * time.Millisecond, Timeout: time.Hour}, Deps{Store: store, Logger: zap.NewNop()})
	if err != nil {
		t.Fatal(err)
	}
	p := c.Assign("status", 0, 0)
	p.Read(0)
	p.Done(bundle.Origin{Offset: 0})

	ctx, cancel := context.WithCancel(context.Background())
	ran := make(chan struct{})
	go func() {
		defer close(ran)
		_ = c.Run(ctx)
	}()
	defer func() {
		cancel()
		<-ran
	}()
	select {
	case bounded := <-store.saving:
		if !bounded {
			t.Error("Run saved offsets without a deadline")
		}
	case <-time.After(10 * time.Second):
		t.Fatal("Run did not commit within 10s")
	}

	// The commit hangs. A revocation must be bounded by its context.
	const revokeTimeout = 100 * time.Millisecond
	revoked := make(chan error, 1)
	go func() {
		rctx, rcancel := context.WithTimeout(context.Background(), revokeTimeout)
		defer rcancel()
		revoked <- c.Revoke(rctx, "status", 0)
	}()
	select {
	case err := <-revoked:
		if !errors.Is(err, ErrCommitBusy) {
			t.Errorf("Revoke during a hung commit: %v, want ErrCommitBusy", err)
		}
	case <-time.After(10 * time.Second):
		t.Fatalf("Revoke with a %v context still waiting 10s after a commit hung", revokeTimeout)
	}
	if tracked(c, "status", 0) {
		t.Error("the revoked partition is still tracked after its final commit failed")
	}
}

// TestCommitTimeout: a save is bounded by Config.Timeout even when the
// caller's context has no deadline, and the failure is what Err reports
// (readiness), until a commit succeeds.
func TestCommitTimeout(t *testing.T) {
	store := &hungStore{saving: make(chan bool, 1)}
	c, err := New(Config{Interval: time.Hour, Timeout: 20 * time.Millisecond}, Deps{Store: store})
	if err != nil {
		t.Fatal(err)
	}
	p := c.Assign("status", 0, 0)
	p.Read(0)
	p.Done(bundle.Origin{Offset: 0})
	err = c.Commit(context.Background())
	if !errors.Is(err, context.DeadlineExceeded) {
		t.Fatalf("Commit on a hung store: %v, want a deadline exceeded", err)
	}
	if !<-store.saving {
		t.Error("the save had no deadline")
	}
	if !errors.Is(c.Err(), context.DeadlineExceeded) {
		t.Errorf("Err() = %v after a timed-out commit", c.Err())
	}
}
