package test

import (
	"context"
	"testing"
	"time"

	"github.com/twmb/franz-go/pkg/kerr"
	"github.com/twmb/franz-go/pkg/kgo"
	"github.com/twmb/franz-go/pkg/kmsg"

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
	e.waitPositionsAtEnd(exp, time.Minute)
	b2.stop(30 * time.Second)
	e.noDeadLetters()
}

// waitPositionsAtEnd waits until the positions stored for the shared
// topic's partitions add up to every message the simulation sent: nothing
// is held any more. A complete compliance read after its base had moved on
// used to wait for --dependency-timeout (5 minutes, then a
// dependency_timeout dead letter) with the state already verified.
func (e *env) waitPositionsAtEnd(expected string, timeout time.Duration) {
	e.t.Helper()
	total := int64(e.messages(expected))
	var sum int64
	deadline := time.Now().Add(timeout)
	for {
		sum = 0
		for _, o := range e.offsets() {
			sum += o
		}
		if sum >= total {
			return
		}
		if time.Now().After(deadline) {
			e.t.Fatalf("stored positions %v add up to %d of %d messages after %v", e.offsets(), sum, total, timeout)
		}
		time.Sleep(200 * time.Millisecond)
	}
}

// partitionsWritten returns the number of partitions of topic that hold
// records.
func (e *env) partitionsWritten(topic string) int {
	e.t.Helper()
	cl, err := kgo.NewClient(kgo.SeedBrokers(e.brokers))
	if err != nil {
		e.t.Fatal(err)
	}
	defer cl.Close()
	ctx, cancel := context.WithTimeout(context.Background(), 30*time.Second)
	defer cancel()
	meta := kmsg.NewPtrMetadataRequest()
	mt := kmsg.NewMetadataRequestTopic()
	mt.Topic = kmsg.StringPtr(topic)
	meta.Topics = append(meta.Topics, mt)
	mresp, err := meta.RequestWith(ctx, cl)
	if err != nil {
		e.t.Fatal(err)
	}
	if len(mresp.Topics) != 1 || mresp.Topics[0].ErrorCode != 0 {
		e.t.Fatalf("metadata of topic %s: %+v", topic, mresp.Topics)
	}
	req := kmsg.NewPtrListOffsetsRequest()
	rt := kmsg.NewListOffsetsRequestTopic()
	rt.Topic = topic
	for _, p := range mresp.Topics[0].Partitions {
		rp := kmsg.NewListOffsetsRequestTopicPartition()
		rp.Partition, rp.Timestamp = p.Partition, -1 // latest
		rt.Partitions = append(rt.Partitions, rp)
	}
	req.Topics = append(req.Topics, rt)
	resp, err := req.RequestWith(ctx, cl)
	if err != nil {
		e.t.Fatal(err)
	}
	n := 0
	for _, t := range resp.Topics {
		for _, p := range t.Partitions {
			if err := kerr.ErrorForCode(p.ErrorCode); err != nil {
				e.t.Fatalf("list offsets of %s/%d: %v", topic, p.Partition, err)
			}
			if p.Offset > 0 {
				n++
			}
		}
	}
	return n
}
