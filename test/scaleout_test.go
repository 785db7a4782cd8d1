package test

import (
	"context"
	"fmt"
	"strings"
	"sync"
	"testing"
	"time"
)

// TestScaleOut runs two bridges in one consumer group over a live stream
// (docs/design.md, Scaling out): the second joins mid-run and takes partitions from the
// first, then the first stops with SIGTERM and hands the rest over. Each
// partition's row in status.transport is claimed by the bridge reading it,
// no stored offset ever goes back, and the second bridge alone ends with
// the hubs' latest state and every partition committed to its end.
func TestScaleOut(t *testing.T) {
	e := newEnv(t, 4)
	live := e.simulateAsync("live", "--hubs", "200", "--clusters", "10", "--generations", "40", "--seed", "41", "--rate", "2500")
	versions := e.watchVersions(50 * time.Millisecond)
	offsets := e.watchOffsets(50 * time.Millisecond)

	a := e.startBridge()
	waitUntil(t, time.Minute, "the first bridge to commit every partition", func() bool { return len(e.offsets()) == 4 })
	if owners := e.transportOwners(); len(owners) != 1 {
		t.Fatalf("with one bridge the rows have owners %v, want one", owners)
	}

	b := e.startBridge()
	waitUntil(t, time.Minute, "the second bridge to claim partitions", func() bool { return len(e.transportOwners()) == 2 })
	t.Logf("both bridges hold partitions: %v", e.transportOwners())
	if !live.running() {
		t.Log("note: the simulation ended before the second bridge took over; the handover is checked on a finished stream")
	}

	a.stop(30 * time.Second)
	exp := live.wait(t, 2*time.Minute)
	e.waitVerified(exp, 2*time.Minute)
	e.waitOffsets(e.highWatermarks(), time.Minute)
	owners := e.transportOwners()
	if len(owners) != 1 {
		t.Errorf("after the first bridge stopped the rows have owners %v, want only the second bridge", owners)
	}
	b.stop(30 * time.Second)
	versions.finish(t)
	offsets.finish(t)
}

// transportOwners returns the owners of the status.transport rows, with
// the partitions each holds.
func (e *env) transportOwners() map[string][]string {
	e.t.Helper()
	rows, err := e.pool.Query(context.Background(), `SELECT owner, name FROM stb.partition_owners ORDER BY name`)
	if err != nil {
		e.t.Fatal(err)
	}
	defer rows.Close()
	owners := map[string][]string{}
	for rows.Next() {
		var owner, name string
		if err := rows.Scan(&owner, &name); err != nil {
			e.t.Fatal(err)
		}
		owners[owner] = append(owners[owner], name)
	}
	if err := rows.Err(); err != nil {
		e.t.Fatal(err)
	}
	return owners
}

// offsetWatch samples the stored offsets and records any that went back.
type offsetWatch struct {
	stop, done chan struct{}
	mu         sync.Mutex
	errs       []string
	samples    int
}

func (e *env) watchOffsets(every time.Duration) *offsetWatch {
	w := &offsetWatch{stop: make(chan struct{}), done: make(chan struct{})}
	go func() {
		defer close(w.done)
		last := map[int32]int64{}
		for {
			cur := e.offsets()
			w.mu.Lock()
			w.samples++
			for p, off := range cur {
				if prev, ok := last[p]; ok && off < prev {
					w.errs = append(w.errs, fmt.Sprintf("partition %d went from %d to %d", p, prev, off))
				}
				last[p] = off
			}
			w.mu.Unlock()
			select {
			case <-w.stop:
				return
			case <-time.After(every):
			}
		}
	}()
	return w
}

func (w *offsetWatch) finish(t *testing.T) {
	t.Helper()
	close(w.stop)
	<-w.done
	w.mu.Lock()
	defer w.mu.Unlock()
	if len(w.errs) > 0 {
		t.Fatalf("stored offsets went back (%d samples): %s", w.samples, strings.Join(w.errs, "; "))
	}
	t.Logf("stored offsets sampled %d times, never went back", w.samples)
}

// waitUntil polls cond every 50 ms until it holds or timeout passes.
func waitUntil(t *testing.T, timeout time.Duration, what string, cond func() bool) {
	t.Helper()
	deadline := time.Now().Add(timeout)
	for !cond() {
		if time.Now().After(deadline) {
			t.Fatalf("timed out after %v waiting for %s", timeout, what)
		}
		time.Sleep(50 * time.Millisecond)
	}
}
