package test

import (
	"testing"
	"time"
)

// TestHubOfHubsAgentOmitsCompliantPolicies: hubs whose agents do what the
// hub-of-hubs leaf-hub status sync does — leave every policy whose
// clusters all comply out of a complete compliance report — restart and
// get replayed, and the database must end with their state. The bridge
// used to keep the rows of an omitted policy as they were (non_compliant
// or unknown from an earlier report): a silent mismatch with no dead
// letter, as an independent producer found for 15 of 30 hubs.
func TestHubOfHubsAgentOmitsCompliantPolicies(t *testing.T) {
	e := newEnv(t, 4)
	exp := e.simulate("hoh", "--agent", "hoh", "--hubs", "30", "--clusters", "6", "--generations", "12",
		"--restart-probability", "0.15", "--seed", "51")
	b := e.startBridge("--db-pool-size", "2")
	// A restart half way replays from the stored offsets.
	deadline := time.Now().Add(time.Minute)
	for len(e.offsets()) == 0 {
		if time.Now().After(deadline) {
			t.Fatal("no offsets committed within a minute")
		}
		time.Sleep(20 * time.Millisecond)
	}
	b.stop(30 * time.Second)
	b2 := e.startBridge()
	e.waitVerified(exp, 2*time.Minute)
	b2.stop(30 * time.Second)
}
