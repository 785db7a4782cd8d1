package test

import (
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
	for i := 0; i < 2; i++ {
		b := e.startBridge()
		time.Sleep(2 * time.Second)
		b.stop(30 * time.Second)
		t.Logf("restart %d: stored offsets %v", i+1, e.offsets())
	}
	b := e.startBridge()
	exp := sim.wait(t, 3*time.Minute)
	e.waitVerified(exp, 3*time.Minute)
	w.finish(t)
	b.stop(30 * time.Second)
}
