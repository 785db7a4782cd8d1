package test

import (
	"maps"
	"testing"
	"time"

	"github.com/stbridge/stb/pkg/sim"
)

// TestGlobalHubAgentSharedTopicBacklog: the same agents on the one shared
// topic gh-status of four partitions, keyed by event type, so one hub's
// types spread over the partitions and a complete compliance can be read
// before its base, or long after it; read as a backlog by a bridge
// started after the publishing, stopped after its first commit and started
// again, so that each partition resumes at an offset of its own. It failed
// in about one run in three (9 of 12 hubs' compliance wrong) while a
// complete compliance run was linked to the compliance's newest run read
// rather than its own agent run's; with the restart, every time (8 hubs)
// while a replaced run start could let the stored offset pass it, and
// every time (one managed cluster) while a late copy of an earlier run's
// start frame read after the restart passed for a restart of the agent.
func TestGlobalHubAgentSharedTopicBacklog(t *testing.T) {
	e := newEnv(t, 1)
	e.createTopic(sim.GlobalHubSharedTopic, 4)
	exp := e.simulate("gh-shared", append(ghSimArgs("12", "30", "62"), "--topic", sim.GlobalHubSharedTopic)...)
	e.checkGHRun(exp)
	if n := e.partitionsWritten(sim.GlobalHubSharedTopic); n < 2 {
		t.Fatalf("the agents' types went to %d partition(s) of %s", n, sim.GlobalHubSharedTopic)
	}
	b := e.startBridge(append(ghSharedTopic, "--db-pool-size", "2")...)
	e.waitFirstCommit(time.Minute)
	b.stop(30 * time.Second)
	b2 := e.startBridge(ghSharedTopic...)
	e.waitVerified(exp, 3*time.Minute)
	e.waitPositionsAtEnd(time.Minute)
	b2.stop(30 * time.Second)
	e.noDeadLetters()
}

// waitPositionsAtEnd waits until the positions stored for the shared
// topic are the end of each of its partitions that holds records: nothing
// is held any more. A complete compliance read after its base had moved on
// used to wait for --dependency-timeout (5 minutes, then a
// dependency_timeout dead letter) with the state already verified.
func (e *env) waitPositionsAtEnd(timeout time.Duration) {
	e.t.Helper()
	ends := e.highWatermarksOf(sim.GlobalHubSharedTopic)
	maps.DeleteFunc(ends, func(_ int32, end int64) bool { return end == 0 })
	e.waitOffsets(ends, timeout)
}

// partitionsWritten returns the number of partitions of topic that hold
// records.
func (e *env) partitionsWritten(topic string) int {
	e.t.Helper()
	n := 0
	for _, end := range e.highWatermarksOf(topic) {
		if end > 0 {
			n++
		}
	}
	return n
}
