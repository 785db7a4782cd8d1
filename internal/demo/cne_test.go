package demo

import (
	"context"
	"strings"
	"testing"

	"github.com/stbridge/stb/internal/profiles/cne"
	"github.com/stbridge/stb/pkg/sim"
)

// `stb demo --agent cne`, small and in-process: it ends verified, shows a
// node's rows, and says so.
func TestDemoCNEEndsVerified(t *testing.T) {
	cfg, out := demoConfig(t, sim.Config{Hubs: 4, Generations: 30, Seed: 9, Agent: "cne"})
	ok, err := RunAgent(context.Background(), cfg, cne.Demo)
	if err != nil {
		t.Fatalf("RunAgent: %v\n%s", err, out)
	}
	if !ok || !strings.Contains(out.String(), "verified: ok") || !strings.Contains(out.String(), "stb.cne_state of node node-000") {
		t.Fatalf("not verified:\n%s", out)
	}
}
