//go:build stb_agents

// The shared-topic backlog acceptance test, behind the stb_agents tag
// (`make test-agents`) because it does not pass reliably yet (issue 19 is
// open): when the reader has read the compliance's partition further than
// the complete compliance's, a complete compliance run is linked to the
// compliance's newest run instead of the one it was computed in, every
// later run one off, and 9 of 12 hubs' compliance ends wrong (seen in
// `make test` and in one run of three by hand).

package test

import (
	"testing"
	"time"

	"github.com/stbridge/stb/pkg/sim"
)

// TestGlobalHubAgentSharedTopicBacklog: the same agents on the one shared
// topic gh-status of four partitions, keyed by event type, so one hub's
// types spread over the partitions and a complete compliance can be read
// before its base; read as a backlog by a bridge started after the
// publishing. Not stopped half way: with a restart of the bridge here,
// about one run in three still ends wrong (9 of 12 hubs' compliance, or
// one managed cluster a late copy took back; issue 19 stays open for it).
func TestGlobalHubAgentSharedTopicBacklog(t *testing.T) {
	e := newEnv(t, 1)
	e.createTopic(sim.GlobalHubSharedTopic, 4)
	exp := e.simulate("gh-shared", append(ghSimArgs("12", "30", "62"), "--topic", sim.GlobalHubSharedTopic)...)
	e.checkGHRun(exp)
	if n := e.partitionsWritten(sim.GlobalHubSharedTopic); n < 2 {
		t.Fatalf("the agents' types went to %d partition(s) of %s", n, sim.GlobalHubSharedTopic)
	}
	b2 := e.startBridge(append(ghSharedTopic, "--db-pool-size", "2")...)
	e.waitVerified(exp, 3*time.Minute)
	b2.stop(30 * time.Second)
	e.noDeadLetters()
}
