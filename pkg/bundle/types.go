package bundle

// Rule says when a bundle type's dependency is satisfied.
type Rule uint8

const (
	// NoDependency: always ready.
	NoDependency Rule = iota
	// AfterProcessed: ready once the DependsOn type has been processed for
	// the hub at least once (an implicit dependency; restored versions count).
	AfterProcessed
	// AtLeast: ready once DependsOn has been processed at a version at least
	// the bundle's Dependency.
	AtLeast
	// Exactly: ready once DependsOn has been processed at exactly the
	// bundle's Dependency; older bases make the bundle stale.
	Exactly
)

// TypeInfo describes a bundle type to the conflation units: how it is
// conflated and what it waits for. Units serve types in the order the
// registry lists them.
type TypeInfo struct {
	Name      string
	Kind      Kind
	DependsOn string
	Rule      Rule
}
