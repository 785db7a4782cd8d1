package bench

import (
	"context"
	"testing"
	"time"

	"github.com/stbridge/stb/dbsyncers"
	"github.com/stbridge/stb/pkg/sim"
	"github.com/stbridge/stb/pkg/transport"
)

// TestProducedAheadCarryTheTimeSent: a message built ahead decodes, as the
// bridge decodes it, to the bundle the simulation made, with the time it
// was stamped with when sent rather than when it was built.
func TestProducedAheadCarryTheTimeSent(t *testing.T) {
	var built encoded
	cfg := sim.Config{Hubs: 3, Clusters: 2, Generations: 2, Topic: "status", Seed: 7}
	exp, err := sim.Run(context.Background(), cfg, &built, nil)
	if err != nil {
		t.Fatal(err)
	}
	if len(built.msgs) != exp.Messages || exp.Messages == 0 {
		t.Fatalf("built %d messages, the simulation sent %d", len(built.msgs), exp.Messages)
	}
	reg := dbsyncers.Default()
	d := transport.Decoders{}
	for _, ti := range reg.Types() {
		s, _ := reg.Lookup(ti.Name)
		d[ti.Name] = s.Decode
	}
	rules := transport.Rules{TypePrefix: transport.DefaultTypePrefix, VerifySource: true, MaxBundleBytes: transport.MinMaxBundleBytes, Decoder: d}
	sent := time.Now().Add(time.Hour).Round(time.Microsecond)
	for i, msg := range built.msgs {
		stampTime(msg, sent)
		topic := "status"
		msg.TopicPartition.Topic, msg.TopicPartition.Partition, msg.TopicPartition.Offset = &topic, 0, 0
		b, rej := transport.Decode(msg, rules, time.Now())
		if rej != nil {
			t.Fatalf("message %d rejected: %s: %v", i, rej.Reason, rej.Err)
		}
		if !b.EventTime.Equal(sent) {
			t.Fatalf("message %d (%s of %s): event time %v, want the time it was sent, %v", i, b.Type, b.Hub, b.EventTime, sent)
		}
	}
}
