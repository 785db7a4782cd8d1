package dbsyncers

import (
	"fmt"

	"github.com/stbridge/stb/pkg/bundle"
)

// Bundle types of the global-hub profile: the CloudEvents types the
// multicluster global-hub agent sends, without
// transport.GlobalHubEventTypePrefix, behind bundle.GlobalHubPrefix so
// that they can never meet STB's own types in a conflation unit or in
// stb.bundle_versions. The transport's global-hub profile names its
// bundles so (pkg/transport/globalhub.go).
const (
	GHHeartbeat               = bundle.GlobalHubPrefix + "managedhub.heartbeat"
	GHHubInfo                 = bundle.GlobalHubPrefix + "managedhub.info"
	GHManagedCluster          = bundle.GlobalHubPrefix + "managedcluster"
	GHLocalCompliance         = bundle.GlobalHubPrefix + "policy.localcompliance"
	GHLocalCompleteCompliance = bundle.GlobalHubPrefix + "policy.localcompletecompliance"
	GHRootPolicyEvent         = bundle.GlobalHubPrefix + "event.localrootpolicy"
	GHReplicatedPolicyEvent   = bundle.GlobalHubPrefix + "event.localreplicatedpolicy"
	GHManagedClusterEvent     = bundle.GlobalHubPrefix + "event.managedcluster"
	GHLocalSpec               = bundle.GlobalHubPrefix + "policy.localspec"
	GHAlertCounts             = bundle.GlobalHubPrefix + "security.alertcounts"
	GHMigration               = bundle.GlobalHubPrefix + "managedclustermigration"
)

// GlobalHub returns the syncers of the global-hub profile in priority
// order, the order the agent's own manager serves them in
// (manager/pkg/status/conflator/conflation_priority.go): heartbeat, hub
// info, managed clusters, cluster events, local policies, compliance,
// complete compliance, policy events, alert counts, migrations.
//
// Every one takes equal versions (bundle.TypeInfo.TakesEqual): the agent
// sends the frames of a resync, and in single send mode the events of one
// interval, with one extversion, and its manager applies them all. And
// every one holds the messages of bundles replaced before they were
// written (bundle.TypeInfo.HoldsReplaced): the profile counts the agent's
// runs as it reads them (pkg/transport.GlobalHub), so after a restart each
// type must be read again from its oldest unwritten message.
func GlobalHub() []Syncer {
	syncers := []Syncer{
		GlobalHubHeartbeat(),
		GlobalHubInfo(),
		GlobalHubManagedCluster(),
		GlobalHubManagedClusterEvent(),
		GlobalHubLocalSpec(),
		GlobalHubLocalCompliance(),
		GlobalHubLocalCompleteCompliance(),
		GlobalHubRootPolicyEvent(),
		GlobalHubReplicatedPolicyEvent(),
		GlobalHubAlertCounts(),
		GlobalHubMigration(),
	}
	for i := range syncers {
		syncers[i].TakesEqual = true
		syncers[i].HoldsReplaced = true
	}
	return syncers
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
