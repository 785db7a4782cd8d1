package cne

import (
	"bytes"
	"encoding/json"
	"errors"
	"fmt"
	"strconv"
	"strings"
	"time"

	"github.com/stbridge/stb/pkg/bundle"
	"github.com/stbridge/stb/pkg/jsonscan"
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
// not decoded: Raw is the data after a line of the event's attributes and
// Kafka position (encodeRaw), which the syncer's decoder reads when the
// bundle is about to be written or merged. Held bundles so cost what
// memory accounting counts (Size, the length of Raw): decoded values take
// four to five times the data's bytes.
func (Family) Bundle(ev *transport.Event) (*bundle.Bundle, error) {
	ctx := Context{Type: ev.Type(), ID: ev.ID(), Source: ev.Source(), Time: ev.Time(), Origin: ev.Origin}
	data := ev.Data()
	_, node, err := Parse(ctx, data)
	if err != nil {
		if node != "" {
			// The dead letter is filed under the node, where its page
			// shows it, rather than under the event's source.
			return &bundle.Bundle{Hub: node}, err
		}
		return nil, err
	}
	raw, err := encodeRaw(ctx, data)
	if err != nil {
		return nil, errPayload(err)
	}
	return &bundle.Bundle{Hub: node, Type: BundleType, Raw: raw, EventTime: ev.Time()}, nil
}

// EventOf returns the event a cne.event bundle was read from, rebuilt from
// its Raw (dispatcher.EventLetters): the attributes the header line holds
// as a binary-mode Kafka message's headers, and the data after it, as it
// came. A worker's dead letter of the bundle so stores the event, which a
// replay reads through Family.Bundle as the reader did. (Bundle used to
// sniff its data for a header line instead, in binary mode only: a letter
// of an event read in structured mode kept no attributes at all.) ok is
// false for another type or bytes that are not encodeRaw's.
func (Family) EventOf(b *bundle.Bundle) (headers map[string]string, data []byte, ok bool) {
	if b == nil || b.Type != BundleType {
		return nil, nil, false
	}
	ctx, data, err := decodeRaw(b.Raw)
	if err != nil || ctx.Type == "" {
		return nil, nil, false
	}
	headers = map[string]string{
		"ce_specversion": "1.0",
		"ce_type":        ctx.Type,
		"ce_id":          ctx.ID,
		"ce_source":      ctx.Source,
		"ce_time":        ctx.Time.Format(time.RFC3339Nano),
	}
	if len(data) > 0 {
		headers["content-type"] = "application/json"
	}
	return headers, data, true
}

// header is the line before the data in a bundle's Raw: what a value
// needs of its event besides the data.
type header struct {
	Type      string `json:"type"`
	ID        string `json:"id"`
	Source    string `json:"source"`
	TimeNS    int64  `json:"timeNs"`
	Topic     string `json:"topic"`
	Partition int32  `json:"partition"`
	Offset    int64  `json:"offset"`
}

// encodeRaw returns the header of ctx, a newline and data. JSON escapes
// every newline inside a string, so the first newline ends the header.
func encodeRaw(ctx Context, data []byte) ([]byte, error) {
	h, err := json.Marshal(header{Type: ctx.Type, ID: ctx.ID, Source: ctx.Source, TimeNS: ctx.Time.UnixNano(),
		Topic: ctx.Origin.Topic, Partition: ctx.Origin.Partition, Offset: ctx.Origin.Offset})
	if err != nil {
		return nil, err
	}
	raw := make([]byte, 0, len(h)+1+len(data))
	return append(append(append(raw, h...), '\n'), data...), nil
}

// decodeRaw splits what encodeRaw made. The header is read with jsonscan:
// encoding/json took half of a decode's time on it.
func decodeRaw(raw []byte) (Context, []byte, error) {
	line, data, ok := bytes.Cut(raw, []byte{'\n'})
	if !ok {
		return Context{}, nil, errors.New("no header line: not a bundle the cne family made")
	}
	var ctx Context
	var ns int64
	d := jsonscan.NewDecoder(line)
	err := d.Object(func(name []byte) error {
		var err error
		str := func(dst *string) { *dst, _, err = d.String() }
		num := func(bits int) (n int64) {
			var raw []byte
			if raw, err = d.Raw(); err == nil {
				n, err = strconv.ParseInt(string(raw), 10, bits)
			}
			return n
		}
		switch string(name) {
		case "type":
			str(&ctx.Type)
		case "id":
			str(&ctx.ID)
		case "source":
			str(&ctx.Source)
		case "topic":
			str(&ctx.Origin.Topic)
		case "timeNs":
			ns = num(64)
		case "partition":
			ctx.Origin.Partition = int32(num(32))
		case "offset":
			ctx.Origin.Offset = num(64)
		}
		return err
	})
	if err == nil {
		err = d.Done()
	}
	if err != nil {
		return Context{}, nil, fmt.Errorf("header line: %w", err)
	}
	ctx.Time = time.Unix(0, ns).UTC()
	return ctx, data, nil
}
