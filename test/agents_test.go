package test

import (
	"context"
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

// TestGlobalHubAgent: hubs that send what the multicluster global-hub
// agent sends — its event types under its own prefix, keyed by event type,
// each hub on its own topic, versions "<generation>.<value>" that start
// again at 0 when the agent restarts, generic managedcluster bundles, the
// pending compliance state, complete compliance that leaves out what
// complies, late copies of earlier events — read through the globalhub
// profile, with a bridge restart half way that replays from the stored
// offsets. The database must end with every hub's state and no dead
// letter: a late copy is stale, not bad.
func TestGlobalHubAgent(t *testing.T) {
	e := newEnv(t, 1) // one partition per hub topic, as the agent's order needs
	exp := e.simulate("gh", "--agent", "globalhub", "--hubs", "20", "--clusters", "6", "--generations", "15",
		"--restart-probability", "0.15", "--seed", "61")
	if n := e.messages(exp); n == 0 {
		t.Fatal("nothing published")
	}
	topics := []string{"--kafka-topics", `^gh-status\..*`, "--profiles", "globalhub"}
	b := e.startBridge(append(topics, "--db-pool-size", "2")...)
	e.waitFirstCommit(time.Minute)
	b.stop(30 * time.Second)
	b2 := e.startBridge(topics...)
	e.waitVerified(exp, 2*time.Minute)
	b2.stop(30 * time.Second)
	var dead int
	if err := e.pool.QueryRow(context.Background(), `SELECT count(*) FROM status.dead_letters`).Scan(&dead); err != nil {
		t.Fatal(err)
	}
	if dead != 0 {
		t.Errorf("%d dead letters, want none", dead)
	}
}
