package cne

import (
	"strings"

	"github.com/stbridge/stb/pkg/bundle"
	"github.com/stbridge/stb/pkg/transport"
)

// BundleType is the bundle type of every event of the family: one slot
// per node in a conflation unit, and one row per node in
// status.bundle_versions.
const BundleType = "cne.event"

// TypePrefix starts the CloudEvents type of every event of the model:
// O-RAN's event.sync.… (PTP, SyncE, GNSS, OS clock), the seed's
// event.synchronization-state-change, event.redfish.… hardware events.
// The family owns them all and stores any type under it, known or not.
const TypePrefix = "event."

// Known CloudEvents types, from redhat-cne/sdk-go pkg/event/ptp/types.go:
// the O-RAN v3 names and the v1 names they replaced. They are all stored
// alike; the list is for the simulator, the console and documentation.
const (
	SyncStateChange          = "event.sync.sync-status.synchronization-state-change"
	PtpStateChange           = "event.sync.ptp-status.ptp-state-change"
	OsClockSyncStateChange   = "event.sync.sync-status.os-clock-sync-state-change"
	GnssStateChange          = "event.sync.gnss-status.gnss-state-change"
	PtpClockClassChange      = "event.sync.ptp-status.ptp-clock-class-change"
	SynceStateChange         = "event.sync.synce-status.synce-state-change"
	SynceStateChangeExtended = "event.sync.synce-status.synce-state-change-extended"
	SynceClockQualityChange  = "event.sync.synce-status.synce-clock-quality-change"
	// v1 aliases: the names sdk-go v1 gave SyncE events.
	SynceStateChangeV1        = "event.sync.sync-status.synce-state-change"
	SynceClockQualityChangeV1 = "event.sync.synce-status.sync-clock-quality-change"
	// The seed's (004) example type.
	SeedSyncStateChange = "event.synchronization-state-change"
)

// Resources: the resource part of the addresses of the PTP events
// (sdk-go pkg/event/ptp/resource.go), with v1's name of the clock class.
const (
	ResourceSyncState     = "/sync/sync-status/sync-state"
	ResourceLockState     = "/sync/ptp-status/lock-state"
	ResourceOsClock       = "/sync/sync-status/os-clock-sync-state"
	ResourceGnss          = "/sync/gnss-status/gnss-sync-status"
	ResourceClockClass    = "/sync/ptp-status/clock-class"
	ResourceClockClassV1  = "/sync/ptp-status/ptp-clock-class-change"
	ResourceSynceLock     = "/sync/synce-status/lock-state"
	ResourceSynceQuality  = "/sync/synce-status/clock-quality"
	ResourceSynceExtended = "/sync/synce-status/lock-state-extended"
)

// Profile is the family's profile name (--profiles …,cne).
const Profile = "cne"

// Family maps Cloud Native Events onto cne.event bundles: transport.Family.
type Family struct{}

// NewFamily returns the family; it keeps no state.
func NewFamily() transport.Family { return Family{} }

// Name is the profile's name.
func (Family) Name() string { return Profile }

// Owns reports whether typ is a Cloud Native Events type.
func (Family) Owns(typ string) bool { return strings.HasPrefix(typ, TypePrefix) }

// Bundle reads the event's values (Parse) into a bundle of the node they
// name, decoded: Payload holds the values, Raw the data as sent (what a
// dead letter keeps and memory accounting counts).
func (Family) Bundle(ev *transport.Event) (*bundle.Bundle, error) {
	values, node, err := Parse(Context{
		Type: ev.Type(), ID: ev.ID(), Source: ev.Source(), Time: ev.Time(), Origin: ev.Origin,
	}, ev.Data())
	if err != nil {
		return nil, err
	}
	return &bundle.Bundle{
		Hub: node, Type: BundleType, Raw: ev.Data(),
		Payload: newPayload(values), EventTime: ev.Time(),
	}, nil
}
