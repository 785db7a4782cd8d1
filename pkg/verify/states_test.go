package verify

import (
	"slices"
	"testing"

	"github.com/stbridge/stb/dbsyncers"
	"github.com/stbridge/stb/pkg/sim"
)

// The simulator spells the compliance states it expects as strings
// (sim.ComplianceState, kept as JSON in Expected) and the database holds
// what dbsyncers.ComplianceState writes; verify compares the two as text,
// so they must be the same set, pending included.
func TestSimComplianceStatesAreTheWritersOnes(t *testing.T) {
	var simStates, written []string
	for _, s := range []sim.ComplianceState{sim.Compliant, sim.NonCompliant, sim.UnknownCompliance, sim.PendingCompliance} {
		simStates = append(simStates, string(s))
	}
	for _, s := range dbsyncers.AllComplianceStates {
		written = append(written, s.String())
	}
	slices.Sort(simStates)
	slices.Sort(written)
	if !slices.Equal(simStates, written) {
		t.Errorf("sim's compliance states %q, dbsyncers writes %q", simStates, written)
	}
}
