// Package globalhub is the multicluster global-hub agent's type table on
// the bridge's side (stolostron/multicluster-global-hub), its one
// definition: the event types the bridge stores, their bundle types, the
// one dependency among them, how the agent sends each, the types it skips,
// and the prefixes of its event types and topics. The transport
// (pkg/transport, which decodes the agent's events) and the writers
// (dbsyncers, which store them) both read it; the simulator (pkg/sim)
// spells the agent's side on its own, as an independent witness.
//
// It imports nothing of Kafka or PostgreSQL.
package globalhub

import "github.com/stbridge/stb/pkg/bundle"

const (
	// EventTypePrefix precedes the CloudEvents type of every global-hub
	// event (upstream: pkg/enum/event_type.go, the enum.EventType values).
	EventTypePrefix = "io.open-cluster-management.operator.multiclusterglobalhubs."
	// TopicPrefix is the prefix of the per-hub status topics
	// ("gh-status.<hub>"); a message read from one must come from its
	// hub. The shared topic is "gh-status", without a hub (upstream:
	// operator/pkg/config, the status topic GetStatusTopic names).
	TopicPrefix = "gh-status."
)

// Bundle types of the profile: the event type after EventTypePrefix,
// behind bundle.GlobalHubPrefix, so that they can never meet STB's own
// types in a conflation unit or in stb.bundle_versions.
const (
	Heartbeat               = bundle.GlobalHubPrefix + "managedhub.heartbeat"
	HubInfo                 = bundle.GlobalHubPrefix + "managedhub.info"
	ManagedCluster          = bundle.GlobalHubPrefix + "managedcluster"
	LocalCompliance         = bundle.GlobalHubPrefix + "policy.localcompliance"
	LocalCompleteCompliance = bundle.GlobalHubPrefix + "policy.localcompletecompliance"
	RootPolicyEvent         = bundle.GlobalHubPrefix + "event.localrootpolicy"
	ReplicatedPolicyEvent   = bundle.GlobalHubPrefix + "event.localreplicatedpolicy"
	ManagedClusterEvent     = bundle.GlobalHubPrefix + "event.managedcluster"
	LocalSpec               = bundle.GlobalHubPrefix + "policy.localspec"
	AlertCounts             = bundle.GlobalHubPrefix + "security.alertcounts"
	Migration               = bundle.GlobalHubPrefix + "managedclustermigration"
)

// Type is what the bridge knows of one global-hub event type.
type Type struct {
	// Name is the bundle type (one of the constants above).
	Name string
	// DependsOn is the bundle type whose version the type's
	// extdependencyversion names, applied on exactly that version; empty
	// for none.
	DependsOn string
	// Events: the data is an event object or an array of them, as its
	// sendmode extension says.
	Events bool
	// Ticks: the generation grows on every send tick, also when nothing
	// is sent (agent/pkg/status/emitters: object and event emitters call
	// Next in every Send), so a run's first event may have any
	// generation. The other types' emitters move the generation only
	// after a send (agent/pkg/status/generic/generic_emitter.go:
	// PostSend), so their runs start at generation 0 and nothing else
	// starts one.
	Ticks bool
	// Screened: some of its events are ignored, as upstream's manager
	// ignores them, and only their decoded data tells which (a hub info
	// without clusterId): decoded when read.
	Screened bool
}

// Event is the type's CloudEvents type after EventTypePrefix.
func (t Type) Event() string { return t.Name[len(bundle.GlobalHubPrefix):] }

// Types are the global-hub event types the bridge stores, in the priority
// order upstream's manager serves them in (manager/pkg/status/conflator/
// conflation_priority.go), each registered by a handler of
// manager/pkg/status/handlers: heartbeat, hub info, managed clusters,
// cluster events, local policies, compliance, complete compliance, policy
// events, alert counts, migrations.
func Types() []Type {
	return []Type{
		{Name: Heartbeat},
		{Name: HubInfo, Screened: true},
		{Name: ManagedCluster, Ticks: true},
		{Name: ManagedClusterEvent, Events: true, Ticks: true},
		{Name: LocalSpec, Ticks: true},
		{Name: LocalCompliance},
		{Name: LocalCompleteCompliance, DependsOn: LocalCompliance},
		{Name: RootPolicyEvent, Events: true, Ticks: true},
		{Name: ReplicatedPolicyEvent, Events: true, Ticks: true},
		{Name: AlertCounts},
		{Name: Migration},
	}
}

// Skipped are the event types (after EventTypePrefix) the agent is known
// to send that the bridge does not store, as upstream's manager registers
// no handler for them: counted and skipped, never dead letters.
func Skipped() []string { return []string{"event.clustergroupupgrade"} }

// MigrationAttrs are what a managedclustermigration event says of its
// migration beside its data: its extensions migrationid and
// migrationstage (upstream: pkg/bundle/migration, which the agent's
// migration syncer sends). The transport keeps them in the bundle's
// Attrs, a *MigrationAttrs; the decoder takes them over the members
// "migrationId" and "stage" of the data, where older agents sent them, as
// upstream's manager reads the extensions first. An empty field was not
// sent.
type MigrationAttrs struct {
	ID, Stage string
}
