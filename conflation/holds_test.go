package conflation

import (
	"testing"
	"time"

	"github.com/stbridge/stb/pkg/bundle"
)

// TestHoldsReplaced: a type that holds replaced bundles (the global-hub
// profile's, whose runs are counted as they are read) keeps the message
// of the oldest bundle replaced since the last write held until the
// bundle that replaced it is written, so the stored offset stays at it
// and a restart reads the type again from there; the messages in between
// are released at once. A type that does not hold them releases each
// replaced message when it is replaced.
func TestHoldsReplaced(t *testing.T) {
	for _, holds := range []bool{true, false} {
		clock := &fakeClock{now: time.Unix(1_700_000_000, 0)}
		m, err := NewManager(Config{Types: []bundle.TypeInfo{{Name: "compliance", Kind: bundle.Complete, HoldsReplaced: holds}}, Now: clock.Now})
		if err != nil {
			t.Fatal(err)
		}
		done := &doneSet{}
		insert := func(off int64, gen uint64) {
			b := &bundle.Bundle{Hub: "h", Type: "compliance", Version: v(1, gen), Size: 10, Origin: bundle.Origin{Topic: "t", Offset: off}}
			b.Track(done)
			m.Insert(b)
		}
		insert(1, 1)
		insert(2, 2)
		insert(3, 3)
		if got := done.count(2); got != 1 {
			t.Errorf("holds %v: offset 2, replaced, released %d times, want 1", holds, got)
		}
		if want := map[bool]int{true: 0, false: 1}[holds]; done.count(1) != want {
			t.Errorf("holds %v: offset 1, the oldest replaced, released %d times before a write, want %d", holds, done.count(1), want)
		}
		u := m.queue.tryPop()
		j, err := u.Next()
		if err != nil {
			t.Fatal(err)
		}
		m.Report(j, Applied)
		for off := int64(1); off <= 3; off++ {
			if got := done.count(off); got != 1 {
				t.Errorf("holds %v: offset %d released %d times after the write, want 1", holds, off, got)
			}
		}
	}
}
