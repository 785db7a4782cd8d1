package test

import (
	"fmt"
	"testing"
	"time"
)

// 100 hubs with policies, compliance and deltas publishing while the
// bridge is stopped with SIGTERM and restarted twice; verify passes at the
// end (managed clusters, compliance rows and events), and sampling
// stb.bundle_versions through the whole run shows no row decreasing.
func TestPoliciesWithRestarts(t *testing.T) {
	e := newEnv(t, 4)
	w := e.watchVersions(100 * time.Millisecond)
	sim := e.simulateAsync("policies", "--hubs", "100", "--clusters", "15", "--generations", "40", "--rate", "1500", "--seed", "21")
	partitions := e.highWatermarks() // the topic's partitions; their ends move while the simulation runs
	// reached says whether every partition's stored offset is past after
	// and at least at upTo; once the simulation has finished, a partition
	// whose stored offset is at its end has nothing left to move to and
	// counts as reached.
	reached := func(after, upTo map[int32]int64) bool {
		cur := e.offsets()
		var ends map[int32]int64
		for p := range partitions {
			if cur[p] > after[p] && cur[p] >= upTo[p] {
				continue
			}
			if sim.running() {
				return false
			}
			if ends == nil {
				ends = e.highWatermarks()
			}
			if cur[p] < ends[p] {
				return false
			}
		}
		return true
	}
	var stored map[int32]int64
	for i := 0; i < 2; i++ {
		// Each bridge is stopped once it has done work of its own that the
		// next one must resume from, while the simulation goes on
		// publishing: first it commits on every partition past where it
		// started; then, from what had been published by then, it reads,
		// writes (or conflates) and commits up to that end on every
		// partition. A loaded machine only makes this take longer; it used
		// to be a 2 s sleep, after which a slow bridge might not have read
		// anything.
		from := stored
		b := e.startBridge()
		e.waitFor(fmt.Sprintf("bridge %d to commit past %v on every partition", i+1, from), 3*time.Minute, func() bool {
			return reached(from, nil)
		})
		published := e.highWatermarks()
		e.waitFor(fmt.Sprintf("bridge %d to commit up to %v on every partition", i+1, published), 3*time.Minute, func() bool {
			return reached(from, published)
		})
		publishing := sim.running()
		b.stop(30 * time.Second)
		stored = e.offsets()
		t.Logf("restart %d: stored offsets %v, past the ends %v it waited for (the simulation still publishing: %v)",
			i+1, stored, published, publishing)
	}
	b := e.startBridge()
	exp := sim.wait(t, 3*time.Minute)
	e.waitVerified(exp, 3*time.Minute)
	w.finish(t)
	b.stop(30 * time.Second)
}
