package dbsyncers

import "fmt"

// Bundle types of the global-hub profile: the CloudEvents types the
// multicluster global-hub agent sends, without the prefix
// "io.open-cluster-management.operator.multiclusterglobalhubs.", behind
// GlobalHubTypePrefix so that they can never meet STB's own types in a
// conflation unit or in status.bundle_versions. The transport's global-hub
// profile names its bundles so (pkg/transport/globalhub.go).
const (
	GlobalHubTypePrefix = "globalhub."

	GHHeartbeat               = GlobalHubTypePrefix + "managedhub.heartbeat"
	GHHubInfo                 = GlobalHubTypePrefix + "managedhub.info"
	GHManagedCluster          = GlobalHubTypePrefix + "managedcluster"
	GHLocalCompliance         = GlobalHubTypePrefix + "policy.localcompliance"
	GHLocalCompleteCompliance = GlobalHubTypePrefix + "policy.localcompletecompliance"
	GHRootPolicyEvent         = GlobalHubTypePrefix + "event.localrootpolicy"
	GHReplicatedPolicyEvent   = GlobalHubTypePrefix + "event.localreplicatedpolicy"
	GHManagedClusterEvent     = GlobalHubTypePrefix + "event.managedcluster"
)

// GlobalHub returns the syncers of the global-hub profile in priority
// order, the order the agent's own manager serves them in: heartbeat,
// hub info, managed clusters, cluster events, compliance, complete
// compliance, policy events.
func GlobalHub() []Syncer {
	return []Syncer{
		GlobalHubHeartbeat(),
		GlobalHubInfo(),
		GlobalHubManagedCluster(),
		GlobalHubManagedClusterEvent(),
		GlobalHubLocalCompliance(),
		GlobalHubLocalCompleteCompliance(),
		GlobalHubRootPolicyEvent(),
		GlobalHubReplicatedPolicyEvent(),
	}
}

// ForProfiles returns the registry of the wire profiles asked for: STB's
// own types, the global-hub agent's, or both (STB's first). At least one
// must be asked for.
func ForProfiles(stb, globalHub bool) (*Registry, error) {
	var syncers []Syncer
	if stb {
		for _, s := range Default().order {
			syncers = append(syncers, *s)
		}
	}
	if globalHub {
		syncers = append(syncers, GlobalHub()...)
	}
	if len(syncers) == 0 {
		return nil, fmt.Errorf("no wire profile: want stb, globalhub or both")
	}
	return NewRegistry(syncers...)
}

// AllTypeNames returns the name of every bundle type of every wire
// profile: what a hub delete leaves a tombstone for, whichever profiles
// the bridges run.
func AllTypeNames() []string {
	var names []string
	for _, s := range Default().order {
		names = append(names, s.Name)
	}
	for _, s := range GlobalHub() {
		names = append(names, s.Name)
	}
	return names
}
