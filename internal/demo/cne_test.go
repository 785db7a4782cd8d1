package demo

import (
	"context"
	"strings"
	"testing"

	"github.com/stbridge/stb/pkg/sim"
)

// `stb demo --agent cne`, small and in-process: it ends verified, shows a
// node's rows, and says so.
func TestDemoCNEEndsVerified(t *testing.T) {
	cfg, out := demoConfig(t, sim.Config{Hubs: 4, Generations: 30, Seed: 9, Agent: "cne"})
	res, err := RunCNE(context.Background(), cfg)
	if err != nil {
		t.Fatalf("RunCNE: %v\n%s", err, out)
	}
	if !res.OK() || !strings.Contains(out.String(), "verified: ok") || !strings.Contains(out.String(), "stb.cne_state of node node-000") {
		t.Fatalf("not verified:\n%s", out)
	}
}
