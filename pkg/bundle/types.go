package bundle

// GlobalHubPrefix precedes the name of every bundle type of the global-hub
// wire profile: the type of the multicluster global-hub agent's CloudEvent
// after transport.GlobalHubEventTypePrefix, behind this, as in
// "globalhub.managedcluster", so that those types can never meet STB's own
// in a conflation unit or in stb.bundle_versions. The transport names
// the bundles it decodes so, dbsyncers registers its syncers under such
// names, and the simulator publishes under them.
const GlobalHubPrefix = "globalhub."

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
	// TakesEqual says a bundle at the version already seen or written is
	// taken and written again, not dropped as stale: only an older one is.
	// The global-hub agent sends one version on several events (the
	// frames of a resync, the events of one interval in single send mode),
	// and its manager applies every one of them.
	TakesEqual bool
	// HoldsReplaced says a bundle replaced before it was written keeps
	// its message held (Bundle.Supersede) until the bundle that replaced
	// it is released, so the stored offset never passes a message of the
	// type newer than what is written: after a restart the type is read
	// again from its oldest unwritten message. The global-hub profile
	// numbers the agent's runs by reading their first events, and a run
	// start replaced before it was written must be read again, or the
	// runs after it are counted from another point than the types on
	// other partitions.
	HoldsReplaced bool
}

// Stale reports whether a bundle at version v is stale against the
// newest version seen or written, newest: older, or equal unless the type
// takes equal versions.
func (t TypeInfo) Stale(v, newest Version) bool {
	if t.TakesEqual {
		return v.Compare(newest) < 0
	}
	return !v.Newer(newest)
}
