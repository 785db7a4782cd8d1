package demo

import (
	"context"
	"strings"
	"testing"

	"github.com/stbridge/stb/pkg/sim"
	simwork "github.com/stbridge/stb/pkg/sim/work"
)

// The work demo, small and in-process, ends verified and says so.
func TestWorkDemoEndsVerified(t *testing.T) {
	base, out := demoConfig(t, sim.Config{})
	res, err := RunWork(context.Background(), WorkConfig{
		Sim: simwork.Config{Clusters: 3, Resources: 8, Rounds: 4, Seed: 3, Structured: true}, Timeout: base.Timeout,
		DatabaseURL: base.DatabaseURL, DatabaseName: base.DatabaseName, Partitions: 2, Out: out, Logger: base.Logger,
	})
	if err != nil {
		t.Fatalf("RunWork: %v\n%s", err, out)
	}
	if !res.OK() || !strings.Contains(out.String(), "verified: ok") {
		t.Fatalf("not verified:\n%s", out)
	}
}
