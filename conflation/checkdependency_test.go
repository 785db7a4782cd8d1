package conflation

import (
	"testing"

	"github.com/stbridge/stb/pkg/bundle"
)

// TestCheckDependency is the rule a unit and a replay of dead letters
// share, case by case.
func TestCheckDependency(t *testing.T) {
	v := func(g uint64) bundle.Version { return bundle.Version{Incarnation: 1, Generation: g} }
	for _, tc := range []struct {
		name      string
		rule      bundle.Rule
		processed bundle.Version
		has       bool
		want      bundle.Version
		out       Dependency
	}{
		{"no dependency", bundle.NoDependency, bundle.Version{}, false, v(9), DependencyMet},
		{"after processed, nothing processed", bundle.AfterProcessed, bundle.Version{}, false, v(1), DependencyWaiting},
		{"after processed, any version", bundle.AfterProcessed, v(1), true, v(9), DependencyMet},
		{"at least, older", bundle.AtLeast, v(2), true, v(3), DependencyWaiting},
		{"at least, equal", bundle.AtLeast, v(3), true, v(3), DependencyMet},
		{"at least, newer", bundle.AtLeast, v(4), true, v(3), DependencyMet},
		{"at least, nothing processed", bundle.AtLeast, bundle.Version{}, false, v(3), DependencyWaiting},
		{"exactly, older", bundle.Exactly, v(2), true, v(3), DependencyWaiting},
		{"exactly, equal", bundle.Exactly, v(3), true, v(3), DependencyMet},
		{"exactly, newer", bundle.Exactly, v(4), true, v(3), DependencyPassed},
		{"exactly, nothing processed", bundle.Exactly, bundle.Version{}, false, v(3), DependencyWaiting},
		{"exactly, newer incarnation", bundle.Exactly, bundle.Version{Incarnation: 2}, true, v(3), DependencyPassed},
	} {
		t.Run(tc.name, func(t *testing.T) {
			if got := CheckDependency(tc.rule, tc.processed, tc.has, tc.want); got != tc.out {
				t.Fatalf("CheckDependency = %d, want %d", got, tc.out)
			}
		})
	}
}
