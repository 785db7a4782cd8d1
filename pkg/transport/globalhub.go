package transport

import (
	"errors"
	"fmt"
	"strconv"
	"strings"
	"time"
	"unicode/utf8"

	"github.com/cloudevents/sdk-go/v2/event"
	"github.com/cloudevents/sdk-go/v2/types"
	"github.com/confluentinc/confluent-kafka-go/v2/kafka"

	"github.com/stbridge/stb/pkg/bundle"
	"github.com/stbridge/stb/pkg/bundle/globalhub"
	"github.com/stbridge/stb/pkg/deadletter"
)

// The global-hub wire profile: what the multicluster global-hub agent
// (stolostron/multicluster-global-hub) sends, read beside STB's own format.
// Its events are told apart by their type prefix; README "Wire format" has
// the mapping of each type onto STB's rules.
const (
	// GlobalHubEventTypePrefix precedes the CloudEvents type of every
	// global-hub event. The bundle type the profile makes of an event is
	// the rest behind bundle.GlobalHubPrefix ("globalhub.managedcluster"),
	// so it never meets STB's own types.
	// It is globalhub.EventTypePrefix, the profile's type table's.
	GlobalHubEventTypePrefix = globalhub.EventTypePrefix
	// GlobalHubTopicPrefix is the prefix of the per-hub status topics
	// ("gh-status.<hub>"); a message read from one must come from its hub.
	// The shared topic is "gh-status", without a hub. It is
	// globalhub.TopicPrefix, the profile's type table's.
	GlobalHubTopicPrefix = globalhub.TopicPrefix

	// ExtChunkSize and ExtChunkOffset mark one chunk of an event whose data
	// the agent split: the whole data's length, and where this chunk ends
	// in it.
	ExtChunkSize   = "extsize"
	ExtChunkOffset = "extoffset"
	// ExtSendMode says whether an event type's data is an array of events
	// ("batch", the default) or one event object ("single").
	ExtSendMode = "sendmode"
	// ExtMigrationID and ExtMigrationStage name the migration and its
	// stage on a managedclustermigration event
	// (pkg/bundle/migration: MigrationId and Stage are carried in these
	// extensions, not in the data).
	ExtMigrationID    = "migrationid"
	ExtMigrationStage = "migrationstage"
	// ExtAuthedHub is the hub the transport derived for the sender
	// (upstream: pkg/transport/identity, ExtensionAuthedHub; its manager
	// sets it from a per-hub status topic, EnrichManagerStatusEvent).
	// When an event has it, not empty, its source must be that hub.
	ExtAuthedHub = "authedhub"
)

// ghType is what the profile knows of one global-hub event type: its
// entry of the type table (globalhub.Type), by the short type after
// GlobalHubEventTypePrefix.
type ghType struct {
	// dependsOn is the short type whose bundle extdependencyversion names,
	// and dependents says another type depends on this one.
	dependsOn  string
	dependents bool
	// events, ticks and screened are globalhub.Type's Events, Ticks and
	// Screened. Every type that is not screened is decoded when it is
	// written (see Decoder).
	events, ticks, screened bool
}

// ghTypes are the global-hub event types the bridge stores, by the type
// after GlobalHubEventTypePrefix, and ghSkipped those the agent is known to
// send that the bridge counts and skips (never dead letters: a healthy
// agent must not page anyone): both made of the one type table,
// globalhub.Types and globalhub.Skipped.
var ghTypes, ghSkipped = ghTable()

func ghTable() (map[string]ghType, map[string]bool) {
	types := map[string]ghType{}
	for _, t := range globalhub.Types() {
		types[t.Event()] = ghType{
			dependsOn: strings.TrimPrefix(t.DependsOn, bundle.GlobalHubPrefix),
			events:    t.Events, ticks: t.Ticks, screened: t.Screened,
		}
	}
	for _, t := range types {
		if t.dependsOn != "" {
			base := types[t.dependsOn]
			base.dependents = true
			types[t.dependsOn] = base
		}
	}
	skipped := map[string]bool{}
	for _, short := range globalhub.Skipped() {
		skipped[short] = true
	}
	return types, skipped
}

// Decode is Decode for a reader with the global-hub profile: a global-hub
// event becomes a bundle of its profile, or is rejected with a reason;
// anything else is left to Decode. Like Decode it is pure but for the
// runs it learns, and never panics on bad input.
//
// The hub is the event's source (the Kafka key is the event type, not the
// hub, so it is not compared); a per-hub topic ("gh-status.<hub>") must be
// the source's, and so must the authedhub extension when the event has
// one, on any topic (upstream's manager: LeafHubForStatusEvent in
// pkg/transport/identity). An event without authedhub is taken by its
// source, as upstream takes it.
func (g *GlobalHub) Decode(msg *kafka.Message, rules Rules, receivedAt time.Time) (*bundle.Bundle, *Reject) {
	return g.decodeWith(readAttrs, msg, rules, receivedAt)
}

func (g *GlobalHub) decodeWith(read attrsReader, msg *kafka.Message, rules Rules, receivedAt time.Time) (*bundle.Bundle, *Reject) {
	if msg == nil || msg.TopicPartition.Topic == nil || msg.TopicPartition.Partition < 0 || msg.TopicPartition.Offset < 0 {
		return decode(read, msg, rules, receivedAt) // its rejects for these
	}
	tp := msg.TopicPartition
	origin := bundle.Origin{Topic: *tp.Topic, Partition: tp.Partition, Offset: int64(tp.Offset)}
	raw := rawAttrsOf(msg)
	ev, err := read(msg, raw)
	if err != nil {
		return nil, newReject(msg, origin, deadletter.NotCloudEvent, err)
	}
	defer ev.release() // what the bundle keeps is copied out of it
	if ev.specVersion != event.CloudEventsVersionV1 || !strings.HasPrefix(ev.typ, GlobalHubEventTypePrefix) {
		// Not a global-hub event (a structured-mode event is only known
		// to be one once parsed): STB's own format.
		return decode(read, msg, rules, receivedAt)
	}
	hub := unescapeSource(ev.source) // the key is the event type
	switch {
	case raw.typeAltered(ev.typ):
		r := newReject(msg, origin, deadletter.UnknownType, fmt.Errorf("type %q is not a global-hub type", raw.typ))
		r.Hub = hub
		return nil, r
	case !ev.hasID():
		r := newReject(msg, origin, deadletter.MissingAttribute, errors.New("no id"))
		r.Hub, r.Type = hub, bundle.GlobalHubPrefix+strings.TrimPrefix(ev.typ, GlobalHubEventTypePrefix)
		return nil, r
	case hub == "":
		r := newReject(msg, origin, deadletter.MissingAttribute, errors.New("no source"))
		r.Type = bundle.GlobalHubPrefix + strings.TrimPrefix(ev.typ, GlobalHubEventTypePrefix)
		return nil, r
	}
	if err := checkHubName(hub); err != nil {
		r := newReject(msg, origin, deadletter.InvalidHub, err)
		r.Hub, r.Type = hub, bundle.GlobalHubPrefix+strings.TrimPrefix(ev.typ, GlobalHubEventTypePrefix)
		return nil, r
	}
	return g.decode(msg, ev, hub, origin, rules, receivedAt)
}

// decode is Decode past the envelope checks.
func (g *GlobalHub) decode(msg *kafka.Message, ev *eventAttrs, hub string, origin bundle.Origin, rules Rules, receivedAt time.Time) (*bundle.Bundle, *Reject) {
	short := strings.TrimPrefix(ev.typ, GlobalHubEventTypePrefix)
	bundleType := bundle.GlobalHubPrefix + short
	var versionText string
	reject := func(reason deadletter.Reason, err error) (*bundle.Bundle, *Reject) {
		r := newReject(msg, origin, reason, err)
		r.Hub, r.Type, r.Version = hub, bundleType, versionText
		return nil, r
	}
	t, known := ghTypes[short]
	if !known {
		if ghSkipped[short] {
			r := newReject(msg, origin, "", fmt.Errorf("global-hub type %q is not stored", short))
			r.Hub, r.Type, r.Skipped = hub, bundleType, true
			return nil, r
		}
		return reject(deadletter.UnknownType, fmt.Errorf("%w: global-hub type %q", bundle.ErrUnknownType, short))
	}
	if topicHub, perHub := strings.CutPrefix(origin.Topic, GlobalHubTopicPrefix); perHub && topicHub != hub {
		return reject(deadletter.SourceMismatch, fmt.Errorf("source %q read from %q, the topic of hub %q", hub, origin.Topic, topicHub))
	}
	if authed, ok := authedHub(ev.authedHub); ok && authed != hub {
		// On a per-hub topic the source is the topic's hub by now: an
		// authedhub of another hub is refused there too.
		return reject(deadletter.SourceMismatch, fmt.Errorf("source %q, but the transport authenticated %s %q", hub, ExtAuthedHub, authed))
	}

	if ev.version == nil {
		return reject(deadletter.MissingAttribute, errors.New("no "+ExtVersion))
	}
	var err error
	if versionText, err = types.ToString(ev.version); err != nil {
		return reject(deadletter.MalformedVersion, fmt.Errorf("%s: %w", ExtVersion, err))
	}
	agentV, err := parseAgentVersion(versionText)
	if err != nil {
		return reject(deadletter.MalformedVersion, fmt.Errorf("%s: %w", ExtVersion, err))
	}
	var agentDep agentVersion
	hasDep := ev.dependency != nil
	if hasDep {
		depText, err := types.ToString(ev.dependency)
		if err == nil {
			agentDep, err = parseAgentVersion(depText)
		}
		if err != nil {
			return reject(deadletter.MalformedVersion, fmt.Errorf("%s: %w", ExtDependencyVersion, err))
		}
	}
	if t.dependsOn != "" && !hasDep {
		// Without it the bundle would wait for a base that cannot come.
		return reject(deadletter.MissingAttribute, fmt.Errorf("no %s: %s depends on %s", ExtDependencyVersion, short, t.dependsOn))
	}

	limit := GlobalHubMaxBundleBytes(rules.MaxBundleBytes)
	data := ev.data
	if size := ev.chunkSize; size != nil {
		// A chunk the reader did not assemble: too large to hold, or cut
		// wrongly (globalhub_chunks.go).
		n, err := types.ToInteger(size)
		if err == nil && int64(n) > int64(limit) {
			return reject(deadletter.TooLarge, fmt.Errorf("chunked event of %d bytes, limit %d", n, limit))
		}
		return reject(deadletter.BadPayload, fmt.Errorf("a chunk (%s %v) of an event that could not be assembled", ExtChunkSize, size))
	}
	if len(data) > limit {
		return reject(deadletter.TooLarge, fmt.Errorf("data is %d bytes, limit %d", len(data), limit))
	}
	if t.events {
		if err := checkSendMode(ev.sendMode, data); err != nil {
			return reject(deadletter.BadPayload, err)
		}
	}

	eventTime := ev.time
	if eventTime.IsZero() {
		eventTime = msg.Timestamp
	}
	b := &bundle.Bundle{Hub: hub, Type: bundleType, Origin: origin, ReceivedAt: receivedAt, EventTime: eventTime}
	m := g.version(hub, short, t, agentV, agentDep, StorableRunID(ev.eventID()), origin)
	b.Version, b.Dependency, b.RunID, b.StartFrame = m.v, m.dep, m.runID, int64(m.startFrame)
	if m.state != nil {
		b.FamilyState = m.state
	}
	b.HasDependency = t.dependsOn != ""
	if !t.screened { // a screened type's data is decoded below
		// After the version is mapped: the event may start a run, whose
		// next events must be of it even if this one is lettered.
		if err := checkSyntax(data); err != nil {
			return reject(deadletter.BadPayload, err)
		}
	}
	if short == "managedclustermigration" {
		if b.Attrs, err = migrationAttrs(ev.migrationID, ev.migrationStage); err != nil {
			return reject(deadletter.BadPayload, err)
		}
	}
	b.Raw, b.Size, b.Message, b.Held = data, len(data), keepMessage(msg), heldBytes(msg, len(data))
	if !t.screened {
		return b, nil
	}
	payload, err := rules.Decoder.Decode(b)
	if err != nil {
		return reject(payloadReason(err), err)
	}
	if ig, ok := payload.(interface{ Ignored() bool }); ok && ig.Ignored() {
		// Valid, and ignored as upstream's manager ignores it (a hub info
		// without clusterId): it must not replace an unwritten one that
		// counts.
		r := newReject(msg, origin, "", fmt.Errorf("%s ignored: %s", bundleType, "the agent's manager ignores it"))
		r.Hub, r.Type, r.Skipped = hub, bundleType, true
		return nil, r
	}
	b.Payload = payload // decoded: the worker does not decode it again
	return b, nil
}

// StorableRunID is the form in which the profile keeps an event's id, in
// memory and in the run_ids of its stored state (jsonb, in
// stb.bundle_versions.family_state; a text[] before): the id as it came
// when PostgreSQL text can hold it, else, for an id with invalid UTF-8 or a
// NUL byte, its Go-quoted ASCII form (strconv.QuoteToASCII), which it can.
// Every bundle of a run carries its first event's id to the fence, so one
// such id made the whole run fail there, SQLSTATE 22021, and nothing of the
// hub's type was written until the agent restarted (issue 34, item 9);
// refusing the event instead would file the run's next events under the
// run before, as stale. The id is only compared with others (a copy has
// the id it had), so any fixed, idempotent form does; the stored state
// holds only ids in this form (EncodeGlobalHubState's callers).
func StorableRunID(id string) string {
	if utf8.ValidString(id) && strings.IndexByte(id, 0) < 0 {
		return id
	}
	return strconv.QuoteToASCII(id)
}

// migrationAttrs returns the migration id and stage extensions of a
// managedclustermigration event, for the bundle's Attrs.
func migrationAttrs(id, stage any) (*globalhub.MigrationAttrs, error) {
	var a globalhub.MigrationAttrs
	for _, kv := range []struct {
		name string
		v    any
		dst  *string
	}{{ExtMigrationID, id, &a.ID}, {ExtMigrationStage, stage, &a.Stage}} {
		if kv.v == nil {
			continue
		}
		text, err := types.ToString(kv.v)
		if err != nil {
			return nil, fmt.Errorf("%s: %w", kv.name, err)
		}
		*kv.dst = text
	}
	return &a, nil
}

// parseAgentVersion parses the agent's "<generation>.<value>"; the
// generation must fit the 32 bits the profile orders it in.
func parseAgentVersion(text string) (agentVersion, error) {
	v, err := bundle.ParseVersion(text)
	if err != nil {
		return agentVersion{}, err
	}
	if v.Incarnation > maxAgentGeneration {
		return agentVersion{}, fmt.Errorf("%w: generation of %q is above %d", bundle.ErrMalformedVersion, text, uint64(maxAgentGeneration))
	}
	return agentVersion{generation: v.Incarnation, value: v.Generation}, nil
}

// authedHub returns the hub an authedhub extension names, and whether it
// names one: as upstream reads it (identity.go, AuthedHub), an empty
// value, or one that is not a string (structured mode), is no authedhub,
// and the source alone names the hub.
func authedHub(ext any) (string, bool) {
	if ext == nil {
		return "", false
	}
	hub, err := types.ToString(ext)
	return hub, err == nil && hub != ""
}

// GlobalHubMaxBundleBytes is the largest event data the global-hub profile
// accepts: the configured limit, but at least what the agent sends whole
// (its producer cuts data above 10 MiB into chunks, which the reader
// assembles up to this limit: pkg/transport/config's MaxSizeToChunk).
func GlobalHubMaxBundleBytes(configured int) int { return max(configured, GlobalHubAgentMaxBytes) }

// GlobalHubAgentMaxBytes is the agent's own limit on one event's data.
const GlobalHubAgentMaxBytes = 10 << 20

// checkSendMode checks that an event type's data has the shape its
// sendmode extension announces: one event object for "single", an array
// for "batch" or no sendmode.
func checkSendMode(mode any, data []byte) error {
	m := "batch"
	if mode != nil {
		s, err := types.ToString(mode)
		if err != nil {
			return fmt.Errorf("%s: %w", ExtSendMode, err)
		}
		m = s
	}
	first := byte(0)
	for _, c := range data {
		if c != ' ' && c != '\t' && c != '\n' && c != '\r' {
			first = c
			break
		}
	}
	switch {
	case m == "single" && first != '{':
		return fmt.Errorf("%s single, but the data is not an event object", ExtSendMode)
	case m == "batch" && first != '[':
		return fmt.Errorf("%s batch, but the data is not an array of events", ExtSendMode)
	case m != "single" && m != "batch":
		return fmt.Errorf("%s %q: want single or batch", ExtSendMode, m)
	}
	return nil
}

// globalHubCandidate reports whether msg may be a global-hub event: its
// binary-mode type says so, or it has none (structured mode, which only
// parsing tells).
func globalHubCandidate(msg *kafka.Message) bool {
	typ, ok := header(msg, headerType)
	return !ok || strings.HasPrefix(typ, GlobalHubEventTypePrefix)
}
