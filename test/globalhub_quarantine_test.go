//go:build stb_quarantine

package test

import (
	"testing"
	"time"
)

// Quarantine: tests of a known defect, kept out of `make test` so that main
// stays green while it is open, and run with `make test-quarantine`.

// TestGlobalHubAgentRestart is TestGlobalHubAgent with a bridge restart
// half way (after its first commit) that replays from the stored offsets.
//
// Known defect (found 2026-11-26, present at 0f58da3 and after): about one
// run in three alone, and two `make test` runs in three, end with one
// hub's compliance rows in an older state ("policy … is compliant, want
// unknown", "is pending, want non_compliant") or, more rarely, a local
// policy one generation behind ("hub-009: … .metadata.generation is 3,
// want 4"), and never converge. What the global-hub profile restores
// after a restart (pkg/transport/globalhub_runs.go: Restore keeps the
// newest version written of each type, its position and the latest runs'
// first event ids) does not always number the replayed complete compliance
// runs as the first process did; which replayed message goes wrong depends
// on where the first commit falls. Not fixed yet: treating a restored base
// run as unknown to align did not help (six runs, several failed).
func TestGlobalHubAgentRestart(t *testing.T) {
	e := newEnv(t, 1) // auto-created hub topics of one partition
	exp := e.simulate("gh", ghSimArgs("20", "30", "61")...)
	e.checkGHRun(exp)
	b := e.startBridge(append(ghHubTopics, "--db-pool-size", "2")...)
	e.waitFirstCommit(time.Minute)
	b.stop(30 * time.Second)
	b2 := e.startBridge(ghHubTopics...)
	e.waitVerified(exp, 3*time.Minute)
	b2.stop(30 * time.Second)
	e.noDeadLetters()
}
