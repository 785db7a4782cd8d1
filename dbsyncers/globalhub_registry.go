package dbsyncers

import (
	"fmt"

	"github.com/stbridge/stb/pkg/bundle"
	"github.com/stbridge/stb/pkg/bundle/globalhub"
)

// Bundle types of the global-hub profile, as the profile's type table
// defines them (pkg/bundle/globalhub): the CloudEvents types the
// multicluster global-hub agent sends, without its event type prefix,
// behind bundle.GlobalHubPrefix, so that they can never meet STB's own
// types in a conflation unit or in stb.bundle_versions.
const (
	GHHeartbeat               = globalhub.Heartbeat
	GHHubInfo                 = globalhub.HubInfo
	GHManagedCluster          = globalhub.ManagedCluster
	GHLocalCompliance         = globalhub.LocalCompliance
	GHLocalCompleteCompliance = globalhub.LocalCompleteCompliance
	GHRootPolicyEvent         = globalhub.RootPolicyEvent
	GHReplicatedPolicyEvent   = globalhub.ReplicatedPolicyEvent
	GHManagedClusterEvent     = globalhub.ManagedClusterEvent
	GHLocalSpec               = globalhub.LocalSpec
	GHAlertCounts             = globalhub.AlertCounts
	GHMigration               = globalhub.Migration
)

// ghSyncers are the syncers of the global-hub profile's types.
var ghSyncers = map[string]func() Syncer{
	GHHeartbeat:               GlobalHubHeartbeat,
	GHHubInfo:                 GlobalHubInfo,
	GHManagedCluster:          GlobalHubManagedCluster,
	GHManagedClusterEvent:     GlobalHubManagedClusterEvent,
	GHLocalSpec:               GlobalHubLocalSpec,
	GHLocalCompliance:         GlobalHubLocalCompliance,
	GHLocalCompleteCompliance: GlobalHubLocalCompleteCompliance,
	GHRootPolicyEvent:         GlobalHubRootPolicyEvent,
	GHReplicatedPolicyEvent:   GlobalHubReplicatedPolicyEvent,
	GHAlertCounts:             GlobalHubAlertCounts,
	GHMigration:               GlobalHubMigration,
}

// GlobalHub returns the syncers of the global-hub profile in the type
// table's order (globalhub.Types), the priority order the agent's own
// manager serves them in (manager/pkg/status/conflator/
// conflation_priority.go), with the table's dependency: heartbeat, hub
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
//
// It panics if a type of the table has no syncer here: a programming
// error the tests catch.
func GlobalHub() []Syncer {
	table := globalhub.Types()
	syncers := make([]Syncer, len(table))
	for i, t := range table {
		newSyncer, ok := ghSyncers[t.Name]
		if !ok {
			panic(fmt.Sprintf("dbsyncers: global-hub type %q has no syncer", t.Name))
		}
		syncers[i] = newSyncer()
		if t.DependsOn != "" {
			syncers[i].DependsOn, syncers[i].Rule = t.DependsOn, bundle.Exactly
		}
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
