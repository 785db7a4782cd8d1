package work

import (
	"encoding/hex"
	"encoding/json"
	"errors"
	"fmt"
	"math"
	"strconv"
	"strings"

	"github.com/stbridge/stb/dbsyncers"
	"github.com/stbridge/stb/pkg/bundle"
	"github.com/stbridge/stb/pkg/deadletter"
	"github.com/stbridge/stb/pkg/transport"
)

// The event types of the family, as sdk-go's types.CloudEventsType.String
// spells them: <data type>.<subresource>.<action> (pkg/cloudevents/generic/
// types/types.go; the data type is payload.ManifestBundleEventDataType).
const (
	// DataType is the CloudEvents data type of ManifestWork bundles.
	DataType = "io.open-cluster-management.works.v1alpha1.manifestbundles"
	// TypePrefix starts every event type the family owns.
	TypePrefix = DataType + "."

	// UpdateRequest is a work agent's status report of one ManifestWork.
	UpdateRequest = TypePrefix + "status.update_request"
	// ResyncResponse is a status sent again because a source asked.
	ResyncResponse = TypePrefix + "status.resync_response"
	// DeleteRequest is the older agents' report that a work is gone.
	DeleteRequest = TypePrefix + "status.delete_request"
	// ResyncRequest is a source's request for statuses (see Resync): the
	// family's own traffic when sources and agents share a topic, not a
	// status.
	ResyncRequest = TypePrefix + "status.resync_request"

	// HeartbeatType is sdk-go's heartbeat (types.HeartbeatCloudEventsType).
	HeartbeatType = "io.open-cluster-management.cloudevents.heartbeat"
)

// The CloudEvents extensions the family reads (sdk-go types.Extension*).
const (
	ExtResourceID      = "resourceid"
	ExtResourceVersion = "resourceversion"
	ExtClusterName     = "clustername"
	ExtOriginalSource  = "originalsource"
	ExtSequenceID      = "sequenceid"
	ExtStatusHash      = "statushash"
	ExtMetadata        = "metadata"
)

// Name is the profile's name and BundleType the one bundle type it writes.
const (
	Name       = "work"
	BundleType = "work.status"
)

// Family maps the work agents' status events onto work.status bundles,
// one per event, of the event's cluster. It keeps nothing between events.
type Family struct{}

// NewFamily returns the family, for profiles.All.
func NewFamily() transport.Family { return Family{} }

// Name implements transport.Family.
func (Family) Name() string { return Name }

// Owns implements transport.Family: every event of the ManifestWork data
// type (specs and resync requests included, to be skipped rather than read
// as STB's own envelope) and sdk-go's heartbeat.
func (Family) Owns(typ string) bool {
	return strings.HasPrefix(typ, TypePrefix) || typ == HeartbeatType
}

// Bundle implements transport.Family.
func (Family) Bundle(ev *transport.Event) (*bundle.Bundle, error) {
	typ := ev.Type()
	switch typ {
	case UpdateRequest, ResyncResponse, DeleteRequest:
	case HeartbeatType, ResyncRequest:
		return nil, fmt.Errorf("%s: %w", typ, transport.ErrSkip)
	default:
		if strings.HasPrefix(typ, TypePrefix+"spec.") {
			return nil, fmt.Errorf("%s: %w", typ, transport.ErrSkip)
		}
		return nil, &dbsyncers.PermanentError{Reason: deadletter.UnknownType,
			Err: fmt.Errorf("event type %q is no status action of %s", typ, DataType)}
	}
	h, err := headerOf(ev)
	if err != nil {
		b := &bundle.Bundle{Hub: h.Cluster} // names the cluster in the dead letter when known
		return b, err
	}
	data := ev.Data()
	deleted, err := scanStatus(data)
	if err != nil {
		return &bundle.Bundle{Hub: h.Cluster}, &dbsyncers.PermanentError{Reason: deadletter.BadPayload,
			Err: fmt.Errorf("resource %s of %s: data: %w", h.ResourceID, h.Source, err)}
	}
	h.Deleted = deleted || typ == DeleteRequest
	if !h.Deleted && h.SequenceID == 0 {
		return &bundle.Bundle{Hub: h.Cluster}, &dbsyncers.PermanentError{Reason: deadletter.MissingAttribute,
			Err: fmt.Errorf("resource %s of %s: %s is required on a status that is not a delete", h.ResourceID, h.Source, ExtSequenceID)}
	}
	if h.SequenceID == 0 {
		// A delete without a sequence id (the older delete_request) is the
		// last word on its generation: no status of that resourceversion
		// may follow it.
		h.SequenceID = math.MaxInt64
	}
	h.Type, h.ID, h.Agent = typ, ev.ID(), ev.Source()
	if strings.IndexByte(h.ID, 0) >= 0 || strings.IndexByte(h.Agent, 0) >= 0 {
		// PostgreSQL text cannot hold a NUL: refused here, not by the
		// write of the cluster's other statuses.
		return &bundle.Bundle{Hub: h.Cluster}, &dbsyncers.PermanentError{Reason: deadletter.BadPayload,
			Err: errors.New("id or source holds a NUL character")}
	}
	h.Time = ev.Time()
	h.Topic, h.Partition, h.Offset = ev.Origin.Topic, ev.Origin.Partition, ev.Origin.Offset
	// Raw is the data as it came, the attributes beside it (decode,
	// EventOf); Held is what they keep, to which the reader adds the
	// data's, the message's and the bundle's own (transport.Mapper).
	return &bundle.Bundle{Hub: h.Cluster, Type: BundleType, Raw: data, Attrs: &h, Held: h.heldBytes()}, nil
}

// headerOf reads and checks the extensions of a status event.
func headerOf(ev *transport.Event) (header, error) {
	ext := ev.Extensions()
	var h header
	var err error
	if h.Cluster, err = stringExt(ext, ExtClusterName); err != nil {
		return h, err
	}
	if h.ResourceID, err = stringExt(ext, ExtResourceID); err != nil {
		return h, err
	}
	if h.Source, err = stringExt(ext, ExtOriginalSource); err != nil {
		return h, err
	}
	for _, f := range []struct{ name, s string }{{ExtClusterName, h.Cluster}, {ExtResourceID, h.ResourceID}, {ExtOriginalSource, h.Source}} {
		if len(f.s) > dbsyncers.MaxNameBytes || strings.IndexByte(f.s, 0) >= 0 {
			return h, &dbsyncers.PermanentError{Reason: deadletter.BadPayload,
				Err: fmt.Errorf("%s of %d bytes is longer than %d or holds a NUL", f.name, len(f.s), dbsyncers.MaxNameBytes)}
		}
	}
	v, ok := ext[ExtResourceVersion]
	if !ok {
		return h, missing(ExtResourceVersion)
	}
	if h.ResourceVersion, err = resourceVersion(v); err != nil {
		return h, &dbsyncers.PermanentError{Reason: deadletter.MalformedVersion, Err: fmt.Errorf("%s: %w", ExtResourceVersion, err)}
	}
	if v, ok := ext[ExtSequenceID]; ok {
		if h.SequenceID, err = sequenceID(v); err != nil {
			return h, &dbsyncers.PermanentError{Reason: deadletter.MalformedVersion, Err: fmt.Errorf("%s: %w", ExtSequenceID, err)}
		}
	}
	if v, ok := ext[ExtStatusHash]; ok {
		s, isString := v.(string)
		if b, err := hex.DecodeString(s); !isString || err != nil || len(b) != 32 {
			return h, &dbsyncers.PermanentError{Reason: deadletter.BadPayload,
				Err: fmt.Errorf("%s %v is not a sha256 in hex", ExtStatusHash, v)}
		}
		h.StatusHash = strings.ToLower(s)
	}
	if v, ok := ext[ExtMetadata]; ok {
		s, isString := v.(string)
		if !isString || !json.Valid([]byte(s)) || !strings.HasPrefix(strings.TrimSpace(s), "{") {
			return h, &dbsyncers.PermanentError{Reason: deadletter.BadPayload,
				Err: fmt.Errorf("%s is not a JSON object", ExtMetadata)}
		}
		if strings.Contains(s, `\u0000`) {
			return h, &dbsyncers.PermanentError{Reason: deadletter.BadPayload,
				Err: fmt.Errorf(`%s holds "\u0000", which jsonb cannot store`, ExtMetadata)}
		}
		h.Metadata = json.RawMessage(s)
	}
	return h, nil
}

// missing is the error of a required extension that is absent.
func missing(name string) error {
	return &dbsyncers.PermanentError{Reason: deadletter.MissingAttribute, Err: fmt.Errorf("extension %s is missing", name)}
}

// stringExt returns a required, non-empty string extension.
func stringExt(ext map[string]any, name string) (string, error) {
	v, ok := ext[name]
	if !ok {
		return "", missing(name)
	}
	s, isString := v.(string)
	if !isString {
		// CloudEvents keeps a URI or other kinds as their types; sdk-go
		// sends these as strings (types.ToString accepts only strings
		// and URIs).
		s = fmt.Sprint(v)
	}
	if s == "" {
		return "", &dbsyncers.PermanentError{Reason: deadletter.MissingAttribute, Err: fmt.Errorf("extension %s is empty", name)}
	}
	return s, nil
}

// resourceVersion reads resourceversion: a CloudEvents Integer (int32)
// as sdk-go's EventBuilder sets it, which a binary-mode transport carries
// as a decimal string and structured mode as a JSON number. It is the
// work's generation, so never negative.
func resourceVersion(v any) (int64, error) {
	var n int64
	switch v := v.(type) {
	case int32:
		n = int64(v)
	case int64:
		n = v
	case int:
		n = int64(v)
	case float64:
		if v != math.Trunc(v) || math.IsInf(v, 0) || math.IsNaN(v) {
			return 0, fmt.Errorf("%v is not an integer", v)
		}
		n = int64(v)
	case string:
		var err error
		if n, err = strconv.ParseInt(v, 10, 32); err != nil {
			return 0, fmt.Errorf("%q is not a decimal int32", v)
		}
	default:
		return 0, fmt.Errorf("%v (%T) is not an integer", v, v)
	}
	if n < 0 || n > math.MaxInt32 {
		return 0, fmt.Errorf("%d is outside 0…%d", n, math.MaxInt32)
	}
	return n, nil
}

// snowflakeNode is the node of every sequence id the agent codec makes
// (snowflake.NewNode(1) in clients/work/agent/codec/manifestbundle.go):
// Maestro refuses to order ids of different nodes (compareSequenceIDs in
// pkg/services/resource.go).
const snowflakeNode = 1

// sequenceID reads sequenceid: a snowflake id in decimal (bwmarrin/
// snowflake: 41 bits of milliseconds, 10 of node, 12 of step), positive,
// of node 1. Two ids of one node order as integers do.
func sequenceID(v any) (int64, error) {
	s, ok := v.(string)
	if !ok {
		return 0, fmt.Errorf("%v (%T) is not a decimal string", v, v)
	}
	n, err := strconv.ParseInt(s, 10, 64)
	if err != nil || n <= 0 {
		return 0, fmt.Errorf("%q is not a positive decimal int64", s)
	}
	if node := (n >> 12) & 0x3ff; node != snowflakeNode {
		return 0, fmt.Errorf("%q is of snowflake node %d, want %d", s, node, snowflakeNode)
	}
	return n, nil
}
