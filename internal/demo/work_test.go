package demo

import (
	"context"
	"strings"
	"testing"

	"github.com/stbridge/stb/internal/profiles/profile"
	"github.com/stbridge/stb/internal/profiles/work"
	"github.com/stbridge/stb/pkg/sim"
	simwork "github.com/stbridge/stb/pkg/sim/work"
)

// The work demo, small and in-process, ends verified and says so.
func TestWorkDemoEndsVerified(t *testing.T) {
	base, out := demoConfig(t, sim.Config{})
	ok, err := RunAgent(context.Background(), base, func(ctx context.Context, run profile.DemoRun) (bool, error) {
		return work.Demo(ctx, run, simwork.Config{Clusters: 3, Resources: 8, Rounds: 4, Seed: 3, Structured: true})
	})
	if err != nil {
		t.Fatalf("RunAgent: %v\n%s", err, out)
	}
	if !ok || !strings.Contains(out.String(), "verified: ok") {
		t.Fatalf("not verified:\n%s", out)
	}
}
