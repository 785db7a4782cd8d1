package cne

import (
	"fmt"
	"strings"
	"time"
	"unsafe"

	"github.com/stbridge/stb/pkg/bundle"
	"github.com/stbridge/stb/pkg/transport"
)

// BundleType is the bundle type of every event of the family: one slot
// per node in a conflation unit, and one row per node in
// stb.bundle_versions.
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

// Bundle checks the event's values (Parse: a bad event is a dead letter
// when read, with its reason) and makes a bundle of the node they name,
// not decoded: Raw is the event's data as it came and Attrs its Context
// (type, id, source, time and Kafka position, which the data alone does
// not hold), which the syncer's decoder reads when the bundle is about to
// be written or merged. Held bundles so cost what memory accounting
// counts (Size, the length of Raw, and Held, which counts the Context
// too): decoded values take four to five times the data's bytes.
func (Family) Bundle(ev *transport.Event) (*bundle.Bundle, error) {
	ctx := &Context{Type: ev.Type(), ID: ev.ID(), Source: ev.Source(), Time: ev.Time(), Origin: ev.Origin}
	data := ev.Data()
	_, node, err := Parse(*ctx, data)
	if err != nil {
		if node != "" {
			// The dead letter is filed under the node, where its page
			// shows it, rather than under the event's source.
			return &bundle.Bundle{Hub: node}, err
		}
		return nil, err
	}
	// Held is what the Context keeps, to which the reader adds the
	// data's, the message's and the bundle's own (transport.Mapper).
	return &bundle.Bundle{Hub: node, Type: BundleType, Raw: data, Attrs: ctx, Held: ctx.heldBytes(), EventTime: ev.Time()}, nil
}

// heldBytes is what ctx keeps in memory beside the bundle it is the Attrs
// of (bundle.Bundle.Held): the struct and its strings' bytes, but the
// topic's, which is the bundle's Origin's. The event's Kafka headers,
// which hold the same values again in binary mode, the reader counts with
// the message.
func (ctx *Context) heldBytes() int {
	return int(unsafe.Sizeof(*ctx)) + len(ctx.Type) + len(ctx.ID) + len(ctx.Source)
}

// contextOf returns the Context Family.Bundle kept in b, or a bad_payload:
// a cne.event bundle some other code built, without it, has values of no
// known type, time or position.
func contextOf(b *bundle.Bundle) (*Context, error) {
	ctx, ok := b.Attrs.(*Context)
	if !ok || ctx == nil {
		return nil, errPayload(fmt.Errorf("cne.event bundle of node %q has attributes %T, want the Context Family.Bundle keeps", b.Hub, b.Attrs))
	}
	return ctx, nil
}

// EventOf returns the event a cne.event bundle was read from, rebuilt from
// its Attrs and Raw (dispatcher.EventLetters): the attributes as a
// binary-mode Kafka message's headers, and the data as it came. A
// worker's dead letter of the bundle so stores the event, which a replay
// reads through Family.Bundle as the reader did, in either mode it was
// read in. ok is false for another type or a bundle without the Context
// Family.Bundle keeps.
func (Family) EventOf(b *bundle.Bundle) (headers map[string]string, data []byte, ok bool) {
	if b == nil || b.Type != BundleType {
		return nil, nil, false
	}
	ctx, err := contextOf(b)
	if err != nil || ctx.Type == "" {
		return nil, nil, false
	}
	data = b.Raw
	headers = map[string]string{
		"ce_specversion": "1.0",
		"ce_type":        ctx.Type,
		"ce_id":          ctx.ID,
		"ce_source":      ctx.Source,
		"ce_time":        ctx.Time.UTC().Format(time.RFC3339Nano),
	}
	if len(data) > 0 {
		headers["content-type"] = "application/json"
	}
	return headers, data, true
}
