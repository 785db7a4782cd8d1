package sim

import (
	"maps"
	"slices"
	"testing"
)

// rotateConfig is upstream's scale-test shape (Scenario 7 of
// multicluster-global-hub doc/simulation/scenario), small.
func rotateConfig(generations int) Config {
	return Config{Hubs: 3, Clusters: 4, Policies: 2, Generations: generations, Seed: 7, Agent: AgentGlobalHub,
		RestartProbability: -1, ChangeProbability: -1, ChurnProbability: -1, PlacementProbability: -1,
		ComplianceEvery: 1, GlobalHub: GlobalHubConfig{Rotate: true}}
}

// TestGlobalHubRotate: every policy on every cluster of each hub but the
// first, NonCompliant after the first round, all turned to Compliant by
// the second and back by the third; a replicated-policy event per pair
// that changed, two per pair in the first round.
func TestGlobalHubRotate(t *testing.T) {
	for gens, want := range map[int]ComplianceState{1: NonCompliant, 2: Compliant, 3: NonCompliant} {
		exp, _ := runGH(t, rotateConfig(gens))
		names := slices.Sorted(maps.Keys(exp.Hubs))
		if len(names) != 3 {
			t.Fatalf("%d hubs, want 3", len(names))
		}
		for i, hub := range names {
			st := exp.Hubs[hub]
			pairs, events := 0, 0
			for _, byCluster := range st.Compliance {
				for c, s := range byCluster {
					pairs++
					if s != want {
						t.Errorf("%d rounds: %s: %s is %s, want %s", gens, hub, c, s, want)
					}
				}
			}
			for _, byCluster := range st.LocalPolicyEvents {
				for _, names := range byCluster {
					events += len(names)
				}
			}
			wantPairs := 2 * 4
			if i == 0 {
				wantPairs = 0 // upstream's hub1: no replicated policies
			}
			if pairs != wantPairs || events != wantPairs*(gens+1) {
				t.Errorf("%d rounds: %s: %d pairs and %d replicated-policy events, want %d and %d", gens, hub, pairs, events, wantPairs, wantPairs*(gens+1))
			}
		}
	}
}

// TestFromRoundSendsOnlyTheLaterRounds: a run from round 2 sends what a
// full run sends after its first round, and ends in the same state; the
// scale benchmark sends a rotation so, apart from the initial state.
func TestFromRoundSendsOnlyTheLaterRounds(t *testing.T) {
	one, _ := runGH(t, rotateConfig(1))
	full, _ := runGH(t, rotateConfig(2))
	cfg := rotateConfig(2)
	cfg.FromRound = 2
	later, msgs := runGH(t, cfg)
	if later.Messages != full.Messages-one.Messages || len(msgs) == 0 {
		t.Fatalf("from round 2: %d messages, want %d (a full run's %d less the first round's %d)",
			later.Messages, full.Messages-one.Messages, full.Messages, one.Messages)
	}
	for hub, st := range full.Hubs {
		got := later.Hubs[hub]
		if got == nil || !maps.EqualFunc(got.Compliance, st.Compliance, maps.Equal) {
			t.Fatalf("%s: compliance after a run from round 2 differs from a full run's", hub)
		}
	}
}
