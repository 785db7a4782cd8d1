package sim

import (
	"context"
	"testing"
	"time"
)

// TestLostReportsAndResyncs: with every report that a delta follows lost,
// deltas name bases never published; asked for a resync, each hub sends a
// complete report of its compliance as it is, newer than everything it
// sent, which the expected state then names.
func TestLostReportsAndResyncs(t *testing.T) {
	cfg := Config{Hubs: 4, Clusters: 4, Generations: 12, Seed: 5, LoseProbability: 1}
	asks := make(chan ResyncAsk, 16)
	for i := range cfg.Hubs {
		asks <- ResyncAsk{Hub: cfg.withDefaults().hubName(i), Type: TypeCompliance}
	}
	asks <- ResyncAsk{Hub: "no-such-hub", Type: TypeCompliance}
	asks <- ResyncAsk{Hub: cfg.withDefaults().hubName(0), Type: TypePolicyEvents} // not a complete type
	var rec recorder
	exp, err := RunWithResync(context.Background(), cfg, &rec, nil, asks, 100*time.Millisecond)
	if err != nil {
		t.Fatal(err)
	}
	if exp.Lost == 0 || exp.Resyncs != cfg.Hubs {
		t.Fatalf("%d reports lost, %d resyncs; want some lost and one resync per hub", exp.Lost, exp.Resyncs)
	}
	published := map[string]bool{} // hub/version of every compliance sent
	lastCompliance := map[string]Message{}
	dangling := 0
	for _, m := range rec.msgs {
		switch m.Type {
		case TypeCompliance:
			published[m.Hub+"/"+m.Version.String()] = true
			lastCompliance[m.Hub] = m
		case TypeComplianceDelta:
			if !published[m.Hub+"/"+m.Dependency.String()] {
				dangling++
			}
		}
	}
	if dangling == 0 {
		t.Fatal("no delta names a lost base")
	}
	for hub, st := range exp.Hubs {
		last := lastCompliance[hub]
		if st.Versions[TypeCompliance] != last.Version {
			t.Errorf("%s: expected compliance %v, last one sent %v", hub, st.Versions[TypeCompliance], last.Version)
		}
		var hubLast Message
		for _, m := range rec.msgs {
			if m.Hub == hub {
				hubLast = m
			}
		}
		if hubLast.Type != TypeCompliance || hubLast.Version != last.Version {
			t.Errorf("%s: its last message is %s %v, want the resync's compliance %v", hub, hubLast.Type, hubLast.Version, last.Version)
		}
		if _, ok := st.VersionsAtMost[TypeComplianceDelta]; !ok {
			t.Errorf("%s: deltas before the resync should be uncertain, are %v", hub, st.Versions[TypeComplianceDelta])
		}
	}
	t.Logf("%d messages, %d reports lost, %d dangling deltas, %d resyncs", exp.Messages, exp.Lost, dangling, exp.Resyncs)
}
