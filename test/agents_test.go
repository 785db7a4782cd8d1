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
	e.waitFirstCommit(time.Minute)
	b.stop(30 * time.Second)
	b2 := e.startBridge()
	e.waitVerified(exp, 2*time.Minute)
	b2.stop(30 * time.Second)
}

// ghSimArgs simulate global-hub agents doing everything the real one does
// and everything that goes wrong around it: restarts with the clock set
// back, resyncs in several frames (small frames) at the start and every
// five rounds, frames of changes lost (repaired only by the next resync),
// data above a small limit in chunks, every other hub sending its events
// one by one, infos without a clusterId, local policies, alert counts,
// migrations, clustergroupupgrade events, duplicates and late copies (of
// the last rounds and of the run before's first events).
