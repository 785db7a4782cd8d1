package sim

import (
	"encoding/json"
	"maps"
	"math"
	"slices"
	"testing"

	"github.com/stbridge/stb/pkg/bundle"
)

// hubTrace follows one hub's messages for TestRunPolicyInvariants.
type hubTrace struct {
	snapshot  map[string]bool            // clusters of the last managedclusters
	placement map[string]map[string]bool // last clusterspolicies: policy → clusters
	lastCP    bundle.Version
	report    *bundle.Version // last compliance sent
	// needReport: a clusterspolicies was the hub's last message, so its
	// next must be the compliance report built on it.
	needReport bool
	events     map[string]bool // event names sent

	// The round being read: whether it is fresh (first or after a
	// restart) and the types sent in it, in order.
	fresh bool
	types []string
}

// endRound checks the round just read.
func (h *hubTrace) endRound(t *testing.T, hub string) {
	t.Helper()
	if h.types == nil {
		return
	}
	// Whatever the round did, the placement names only clusters of the
	// last snapshot.
	for id, clusters := range h.placement {
		for c := range clusters {
			if !h.snapshot[c] {
				t.Errorf("%s: after a round, policy %s is still placed on %s, not in the last snapshot", hub, id, c)
			}
		}
	}
	if h.fresh {
		want := []string{TypeHeartbeat, TypeManagedClusters, TypeClustersPolicies, TypeCompliance}
		if len(h.types) < len(want) || !slices.Equal(h.types[:len(want)], want) || slices.Contains(h.types, TypeComplianceDelta) {
			t.Errorf("%s: a fresh round sent %v, want %v first and no delta", hub, h.types, want)
		}
	}
	h.types = nil
}

type policyObjects struct {
	Objects []struct {
		PolicyID          string   `json:"policyId"`
		Clusters          []string `json:"clusters"`
		RemediationAction string   `json:"remediationAction"`
		ResourceVersion   string   `json:"resourceVersion"`
		NonCompliant      []string `json:"nonCompliantClusters"`
		Unknown           []string `json:"unknownComplianceClusters"`
		Compliant         []string `json:"compliantClusters"`
		ClusterName       string   `json:"clusterName"`
		EventName         string   `json:"eventName"`
	} `json:"objects"`
}

// The policy bundles keep the promises the expected state rests on: a
// placement names only clusters of the snapshot sent before it and follows
// them when they go; a compliance report follows every placement and is
// built on it, listing every policy; deltas name only placed pairs and the
// last report as their base; fresh rounds send the full state first;
// events are about placed pairs and never repeat a name.
func TestRunPolicyInvariants(t *testing.T) {
	cfg := Config{Hubs: 8, Clusters: 12, Generations: 80, Seed: 31,
		RestartProbability: 0.1, ChurnProbability: 0.3, PlacementProbability: 0.2}
	_, rec := run(t, cfg)

	traces := map[string]*hubTrace{}
	var freshRounds, placementsBySelf, removedPlaced int
	for i, m := range rec.msgs {
		h := traces[m.Hub]
		if h == nil {
			h = &hubTrace{events: map[string]bool{}}
			traces[m.Hub] = h
		}
		if h.needReport && m.Type != TypeCompliance {
			t.Fatalf("message %d: %s of %s follows a clusterspolicies, want a compliance report", i, m.Type, m.Hub)
		}
		if m.Type == TypeHeartbeat {
			h.endRound(t, m.Hub)
			h.fresh = h.report == nil || m.Version.Generation == 1
			if h.fresh {
				freshRounds++
			}
		}
		h.types = append(h.types, m.Type)
		var p policyObjects
		if err := json.Unmarshal(m.Data, &p); err != nil {
			t.Fatalf("message %d: %v", i, err)
		}
		switch m.Type {
		case TypeManagedClusters:
			old := h.snapshot
			h.snapshot = map[string]bool{}
			for name := range decodeSnapshot(t, m.Data) {
				h.snapshot[name] = true
			}
			for c := range old {
				if h.snapshot[c] {
					continue
				}
				for _, clusters := range h.placement {
					if clusters[c] {
						removedPlaced++
						break
					}
				}
			}
		case TypeClustersPolicies:
			if m.Dependency != nil {
				t.Errorf("message %d: clusterspolicies names a dependency", i)
			}
			h.placement = map[string]map[string]bool{}
			for _, o := range p.Objects {
				if o.RemediationAction == "" || o.ResourceVersion == "" || o.Clusters == nil {
					t.Errorf("message %d: policy %s without remediation action, resource version or clusters", i, o.PolicyID)
				}
				clusters := map[string]bool{}
				for _, c := range o.Clusters {
					if !h.snapshot[c] {
						t.Errorf("message %d: policy %s placed on %s, not in the snapshot before", i, o.PolicyID, c)
					}
					clusters[c] = true
				}
				h.placement[o.PolicyID] = clusters
			}
			if !h.fresh {
				placementsBySelf++
			}
			h.lastCP, h.needReport = m.Version, true
		case TypeCompliance:
			if m.Dependency == nil || *m.Dependency != h.lastCP {
				t.Errorf("message %d: compliance on %v, the last clusterspolicies is %s", i, m.Dependency, h.lastCP)
			}
			listed := map[string]bool{}
			for _, o := range p.Objects {
				listed[o.PolicyID] = true
				for _, c := range slices.Concat(o.NonCompliant, o.Unknown) {
					if !h.placement[o.PolicyID][c] {
						t.Errorf("message %d: compliance names %s on %s, not placed", i, o.PolicyID, c)
					}
				}
			}
			if !maps.Equal(listed, mapsKeysTrue(h.placement)) {
				t.Errorf("message %d: compliance lists policies %v, placed are %v", i, listed, h.placement)
			}
			v := m.Version
			h.report, h.needReport = &v, false
		case TypeComplianceDelta:
			if h.report == nil || m.Dependency == nil || *m.Dependency != *h.report {
				t.Errorf("message %d: delta on %v, the last report is %v", i, m.Dependency, h.report)
			}
			if m.Dependency != nil && m.Dependency.Incarnation != m.Version.Incarnation {
				t.Errorf("message %d: delta %s on a report of an earlier incarnation %s", i, m.Version, m.Dependency)
			}
			named := map[[2]string]bool{}
			for _, o := range p.Objects {
				for _, c := range slices.Concat(o.Compliant, o.NonCompliant, o.Unknown) {
					k := [2]string{o.PolicyID, c}
					if named[k] {
						t.Errorf("message %d: delta names %v twice", i, k)
					}
					named[k] = true
					if !h.placement[o.PolicyID][c] {
						t.Errorf("message %d: delta names %s on %s, not placed", i, o.PolicyID, c)
					}
				}
			}
			if len(named) == 0 {
				t.Errorf("message %d: empty delta", i)
			}
		case TypePolicyEvents:
			if len(p.Objects) != DefaultEventsPerRound {
				t.Errorf("message %d: %d events, want %d", i, len(p.Objects), DefaultEventsPerRound)
			}
			for _, o := range p.Objects {
				if !h.placement[o.PolicyID][o.ClusterName] {
					t.Errorf("message %d: event about %s on %s, not placed", i, o.PolicyID, o.ClusterName)
				}
				if h.events[o.EventName] {
					t.Errorf("message %d: event name %s sent again", i, o.EventName)
				}
				h.events[o.EventName] = true
			}
		}
	}
	for hub, h := range traces {
		h.endRound(t, hub)
	}
	// The run must have exercised what this test checks.
	if freshRounds <= cfg.Hubs || placementsBySelf == 0 || removedPlaced == 0 {
		t.Errorf("%d fresh rounds, %d placements outside them, %d placed clusters removed; want restarts and both",
			freshRounds, placementsBySelf, removedPlaced)
	}
}

func mapsKeysTrue[V any](m map[string]V) map[string]bool {
	out := make(map[string]bool, len(m))
	for k := range m {
		out[k] = true
	}
	return out
}

func TestRunPolicyOptions(t *testing.T) {
	t.Run("no policies", func(t *testing.T) {
		exp, _ := run(t, Config{Hubs: 3, Clusters: 5, Generations: 10, Policies: -1})
		if want := (map[string]int{TypeHeartbeat: 30, TypeManagedClusters: 30}); !maps.Equal(exp.MessagesByType, want) {
			t.Errorf("MessagesByType %v, want %v", exp.MessagesByType, want)
		}
	})
	t.Run("report every round", func(t *testing.T) {
		exp, _ := run(t, Config{Hubs: 3, Clusters: 5, Generations: 10, ComplianceEvery: 1})
		if exp.MessagesByType[TypeCompliance] != 30 || exp.MessagesByType[TypeComplianceDelta] != 0 {
			t.Errorf("MessagesByType %v, want a report every round and no delta", exp.MessagesByType)
		}
	})
	t.Run("report every 4 rounds", func(t *testing.T) {
		_, rec := run(t, Config{Hubs: 1, Clusters: 5, Generations: 12, ComplianceEvery: 4,
			PlacementProbability: -1, ChurnProbability: -1, RestartProbability: -1})
		var got []string
		for _, m := range rec.msgs {
			if m.Type == TypeCompliance || m.Type == TypeComplianceDelta {
				got = append(got, m.Type[len("compliance"):])
			}
		}
		// Round 1 reports, rounds 2-4 send deltas, round 5 reports...
		want := []string{"", "delta", "delta", "delta", "", "delta", "delta", "delta", "", "delta", "delta", "delta"}
		if !slices.Equal(got, want) {
			t.Errorf("compliance bundles %q, want %q", got, want)
		}
	})
	t.Run("events per round", func(t *testing.T) {
		exp, _ := run(t, Config{Hubs: 2, Clusters: 5, Generations: 10, EventsPerRound: 7, PlacementProbability: -1, ChurnProbability: -1})
		for name, st := range exp.Hubs {
			if st.PolicyEvents() != 70 {
				t.Errorf("hub %s: %d events, want 70", name, st.PolicyEvents())
			}
		}
		none, _ := run(t, Config{Hubs: 2, Clusters: 5, Generations: 10, EventsPerRound: -1})
		if none.MessagesByType[TypePolicyEvents] != 0 || none.PolicyEvents() != 0 {
			t.Errorf("events sent with EventsPerRound -1")
		}
	})
	t.Run("policy count stays near the target", func(t *testing.T) {
		exp, _ := run(t, Config{Hubs: 5, Clusters: 30, Generations: 100, Policies: 20, PlacementProbability: 0.9})
		for name, st := range exp.Hubs {
			// 18..22 policies, each placed on about half of 27..33 clusters.
			if n := len(st.Compliance); n < 18 || n > 22 {
				t.Errorf("hub %s has %d placed policies, want 18..22", name, n)
			}
			if n := st.ComplianceRows(); n < 200 || n > 460 {
				t.Errorf("hub %s has %d compliance rows, want about %d", name, n, 20*30/2)
			}
		}
	})
}

// MessagesPerRound is close to what runs send per hub and round.
func TestMessagesPerRound(t *testing.T) {
	for _, cfg := range []Config{
		{Hubs: 20, Clusters: 20, Generations: 200},
		{Hubs: 20, Clusters: 20, Generations: 200, ChurnProbability: 0.5, PlacementProbability: 0.3, RestartProbability: 0.1},
		{Hubs: 20, Clusters: 3, Generations: 200, Policies: 1, ComplianceEvery: -1},
		{Hubs: 20, Clusters: 0, Generations: 200},
		{Hubs: 20, Clusters: 0, Generations: 200, ComplianceEvery: -1},
		{Hubs: 20, Clusters: 20, Generations: 200, ComplianceEvery: 1, EventsPerRound: -1},
		{Hubs: 20, Clusters: 20, Generations: 200, Policies: -1},
	} {
		exp, _ := run(t, cfg)
		got := float64(exp.Messages) / float64(cfg.Hubs*cfg.Generations)
		want := cfg.MessagesPerRound()
		if math.Abs(got-want)/want > 0.05 {
			t.Errorf("%+v: %.3f messages per hub and round, MessagesPerRound %.3f", cfg, got, want)
		}
	}
	if got := (Config{Policies: -1}).MessagesPerRound(); got != 2 {
		t.Errorf("without policies: %v, want 2", got)
	}
}
