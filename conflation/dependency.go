package conflation

import "github.com/stbridge/stb/pkg/bundle"

// Dependency is where a bundle stands against the type it depends on: the
// rule of its type applied to the version of that type last processed
// (written to the database). A unit applies it to decide what is ready;
// a replay of a dead letter applies it to what the database holds, so
// that both follow one rule.
type Dependency uint8

const (
	// DependencyMet: the bundle may be written.
	DependencyMet Dependency = iota
	// DependencyWaiting: the version it needs is not processed yet, or
	// nothing of the type it depends on is.
	DependencyWaiting
	// DependencyPassed: it applies on exactly one version (a delta on its
	// base), and a newer one was processed: it can never be written.
	DependencyPassed
)

// CheckDependency applies rule to a bundle that names want as the version
// of its dependency, processed being the version of the dependency last
// processed (hasProcessed false when none was).
func CheckDependency(rule bundle.Rule, processed bundle.Version, hasProcessed bool, want bundle.Version) Dependency {
	if rule == bundle.NoDependency {
		return DependencyMet
	}
	if !hasProcessed {
		return DependencyWaiting
	}
	switch rule {
	case bundle.AfterProcessed:
		return DependencyMet
	case bundle.AtLeast:
		if processed.Compare(want) >= 0 {
			return DependencyMet
		}
	case bundle.Exactly:
		switch c := processed.Compare(want); {
		case c == 0:
			return DependencyMet
		case c > 0:
			return DependencyPassed
		}
	}
	return DependencyWaiting
}
