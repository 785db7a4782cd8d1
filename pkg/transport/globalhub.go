package transport

import (
	"errors"
	"fmt"
	"slices"
	"strings"
	"sync"
	"time"

	"github.com/cloudevents/sdk-go/v2/event"
	"github.com/cloudevents/sdk-go/v2/types"
	"github.com/confluentinc/confluent-kafka-go/v2/kafka"

	"github.com/stbridge/stb/pkg/bundle"
	"github.com/stbridge/stb/pkg/deadletter"
)

// The global-hub wire profile: what the multicluster global-hub agent
// (stolostron/multicluster-global-hub) sends, read beside STB's own format.
// Its events are told apart by their type prefix; README "Wire format" has
// the mapping of each type onto STB's rules.
const (
	// GlobalHubTypePrefix precedes every global-hub event type.
	GlobalHubTypePrefix = "io.open-cluster-management.operator.multiclusterglobalhubs."
	// GlobalHubBundlePrefix precedes the bundle types the profile makes of
	// them ("globalhub.managedcluster"), so they never meet STB's own types.
	GlobalHubBundlePrefix = "globalhub."
	// GlobalHubTopicPrefix is the prefix of the per-hub status topics
	// ("gh-status.<hub>"); a message read from one must come from its hub.
	// The shared topic is "gh-status", without a hub.
	GlobalHubTopicPrefix = "gh-status."

	// ExtChunkSize and ExtChunkOffset mark one chunk of an event whose data
	// the agent split: the whole data's length, and where this chunk ends
	// in it.
	ExtChunkSize   = "extsize"
	ExtChunkOffset = "extoffset"
	// ExtSendMode says whether an event type's data is an array of events
	// ("batch", the default) or one event object ("single").
	ExtSendMode = "sendmode"
)

// ghType is what the profile knows of one global-hub event type.
type ghType struct {
	// byValue orders the type's bundles by the value part of extversion
	// rather than by its generation (see GlobalHub).
	byValue bool
	// dependsOn is the short type whose bundle extdependencyversion names.
	dependsOn string
	// events: the data is an event object or an array of them (sendmode).
	events bool
}

// ghTypes are the global-hub event types the bridge maps, by the type
// after GlobalHubTypePrefix. Others are unknown_type.
var ghTypes = map[string]ghType{
	"managedhub.heartbeat":           {},
	"managedhub.info":                {},
	"managedcluster":                 {},
	"policy.localcompliance":         {byValue: true},
	"policy.localcompletecompliance": {dependsOn: "policy.localcompliance"},
	"event.localrootpolicy":          {events: true},
	"event.localreplicatedpolicy":    {events: true},
	"event.managedcluster":           {events: true},
}

// GlobalHub is the global-hub profile's state: the agent's runs, per hub
// and type. It is safe for concurrent use.
//
// The agent's extversion is "<generation>.<value>": generation counts the
// events it sent of the type, value the changes it saw; both start again
// at 0 when the agent restarts (generation 0 is the first event of a
// run). STB's versions must only grow, so the profile maps each event to
// bundle.Version{Incarnation: run, Generation: generation} where run is
// the time (Unix nanoseconds) of the generation-0 event that started the
// agent's current run of that type: a restart makes a newer incarnation,
// and a replay or a late copy maps to the same version it had (the time is
// in the event). policy.localcompliance is ordered by its value instead,
// as localcompletecompliance names the compliance it was computed on by
// that value (its generation is the one the agent will send next); the
// agent sends it only when the value grew, so it orders its events as
// well. An event whose time is before its run's start belongs to an older
// run: it maps to incarnation 0, stale.
//
// Runs are learned from the events read and, for a bridge that starts
// past a run's first event, from the versions stored in
// status.bundle_versions (Restore). When neither tells (nothing of the
// type was stored and the run's first event is behind the stored offset:
// it was conflated away), the first event read of the run starts it: its
// later events map to the same incarnation, earlier ones can only be late
// copies. A generation lower than one already read, in an event made
// later, shows a run whose first event was not read: it starts there.
type GlobalHub struct {
	mu   sync.Mutex
	runs map[runKey]*runState
}

type runKey struct{ hub, typ string }

// runState is what the profile knows of one hub's runs of one type.
type runState struct {
	// starts are the known run starts, oldest first, at most maxRuns: a
	// dependent event names its base by value within the run that was
	// current when it was made.
	starts []uint64
	// generation and stamp are those of the newest event read of the
	// current run.
	generation, stamp uint64
}

// maxRuns bounds the run starts kept per hub and type.
const maxRuns = 4

func (r *runState) current() uint64 {
	if len(r.starts) == 0 {
		return 0
	}
	return r.starts[len(r.starts)-1]
}

// start records a run starting at stamp, newer than every known one.
func (r *runState) start(stamp uint64) {
	r.remember(stamp)
	r.generation, r.stamp = 0, stamp
}

// remember adds the start of a run, current or older, to the known ones.
func (r *runState) remember(stamp uint64) {
	i, found := slices.BinarySearch(r.starts, stamp)
	if found {
		return
	}
	r.starts = slices.Insert(r.starts, i, stamp)
	if len(r.starts) > maxRuns {
		r.starts = slices.Delete(r.starts, 0, 1)
	}
}

// NewGlobalHub returns the profile's state, knowing no runs.
func NewGlobalHub() *GlobalHub { return &GlobalHub{runs: map[runKey]*runState{}} }

// state returns the state of k, made empty when new; g.mu is held.
func (g *GlobalHub) state(k runKey) *runState {
	r := g.runs[k]
	if r == nil {
		r = &runState{}
		g.runs[k] = r
	}
	return r
}

// Restore records the version processed for a hub's bundle type, as
// status.bundle_versions holds it: the incarnation of a global-hub type is
// the run its events belong to. Other types are ignored; runs only move
// forward.
func (g *GlobalHub) Restore(hub, bundleType string, v bundle.Version) {
	short, ok := strings.CutPrefix(bundleType, GlobalHubBundlePrefix)
	if !ok || v.Incarnation == 0 {
		return
	}
	g.mu.Lock()
	defer g.mu.Unlock()
	r := g.state(runKey{hub, short})
	if v.Incarnation > r.current() {
		r.start(v.Incarnation)
	}
}

// version maps an event's extversion to the bundle's version.
func (g *GlobalHub) version(hub, short string, t ghType, v bundle.Version, at time.Time) bundle.Version {
	gen, value := v.Incarnation, v.Generation // the agent's "<generation>.<value>"
	ordinal := gen
	if t.byValue {
		ordinal = value
	}
	var stamp uint64
	if ns := at.UnixNano(); !at.IsZero() && ns > 0 {
		stamp = uint64(ns)
	}
	g.mu.Lock()
	defer g.mu.Unlock()
	r := g.state(runKey{hub, short})
	run := r.current()
	switch {
	case stamp == 0:
		// No time to place it by: the current run's, as the agent always
		// sends one.
	case gen == 0 || run == 0:
		if stamp <= run {
			// A late copy of an older run's first event keeps its own,
			// older incarnation and does not move the run back; the run
			// is remembered for the events that depend on it.
			r.remember(stamp)
			return bundle.Version{Incarnation: stamp, Generation: ordinal}
		}
		r.start(stamp)
		run = stamp
	case stamp < run:
		return bundle.Version{Incarnation: 0, Generation: ordinal}
	case stamp > r.stamp && gen < r.generation:
		// Made later with a lower generation: a run whose first event
		// this bridge never read.
		r.start(stamp)
		run = stamp
	}
	if stamp >= r.stamp {
		r.generation, r.stamp = gen, stamp
	}
	return bundle.Version{Incarnation: run, Generation: ordinal}
}

// dependency maps an extdependencyversion, naming an event of type short
// of the hub by its value, to the version that event has: the value in the
// newest run of that type known to have started before the dependent
// event was made (at). When every known run started after it, its base
// belongs to an older run: incarnation 0, older than anything processed,
// so the dependent is dropped as stale rather than applied on a base it
// was not computed on.
func (g *GlobalHub) dependency(hub, short string, v bundle.Version, at time.Time) bundle.Version {
	g.mu.Lock()
	defer g.mu.Unlock()
	r := g.state(runKey{hub, short})
	run := r.current()
	if ns := at.UnixNano(); !at.IsZero() && ns > 0 {
		run = 0
		for i := len(r.starts) - 1; i >= 0; i-- {
			if r.starts[i] <= uint64(ns) {
				run = r.starts[i]
				break
			}
		}
	}
	return bundle.Version{Incarnation: run, Generation: v.Generation}
}

// Decode is Decode for a reader with the global-hub profile: a global-hub
// event becomes a bundle of its profile, or is rejected with a reason;
// anything else is left to Decode. Like Decode it is pure but for the
// runs it learns, and never panics on bad input.
//
// The hub is the event's source (the Kafka key is the event type, not the
// hub, so it is not compared); a per-hub topic ("gh-status.<hub>") must be
// the source's.
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
	if ev.specVersion != event.CloudEventsVersionV1 || !strings.HasPrefix(ev.typ, GlobalHubTypePrefix) {
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
	case ev.id == "":
		r := newReject(msg, origin, deadletter.MissingAttribute, errors.New("no id"))
		r.Hub, r.Type = hub, GlobalHubBundlePrefix+strings.TrimPrefix(ev.typ, GlobalHubTypePrefix)
		return nil, r
	case hub == "":
		r := newReject(msg, origin, deadletter.MissingAttribute, errors.New("no source"))
		r.Type = GlobalHubBundlePrefix + strings.TrimPrefix(ev.typ, GlobalHubTypePrefix)
		return nil, r
	}
	if err := checkHubName(hub); err != nil {
		r := newReject(msg, origin, deadletter.InvalidHub, err)
		r.Hub, r.Type = hub, GlobalHubBundlePrefix+strings.TrimPrefix(ev.typ, GlobalHubTypePrefix)
		return nil, r
	}
	return g.decode(msg, ev, hub, origin, rules, receivedAt)
}

// decode is Decode past the envelope checks.
func (g *GlobalHub) decode(msg *kafka.Message, ev *eventAttrs, hub string, origin bundle.Origin, rules Rules, receivedAt time.Time) (*bundle.Bundle, *Reject) {
	short := strings.TrimPrefix(ev.typ, GlobalHubTypePrefix)
	bundleType := GlobalHubBundlePrefix + short
	var versionText string
	reject := func(reason deadletter.Reason, err error) (*bundle.Bundle, *Reject) {
		r := newReject(msg, origin, reason, err)
		r.Hub, r.Type, r.Version = hub, bundleType, versionText
		return nil, r
	}
	t, known := ghTypes[short]
	if !known {
		return reject(deadletter.UnknownType, fmt.Errorf("%w: global-hub type %q", bundle.ErrUnknownType, short))
	}
	if topicHub, perHub := strings.CutPrefix(origin.Topic, GlobalHubTopicPrefix); perHub && topicHub != hub {
		return reject(deadletter.SourceMismatch, fmt.Errorf("source %q read from %q, the topic of hub %q", hub, origin.Topic, topicHub))
	}

	if ev.version == nil {
		return reject(deadletter.MissingAttribute, errors.New("no "+ExtVersion))
	}
	var err error
	if versionText, err = types.ToString(ev.version); err != nil {
		return reject(deadletter.MalformedVersion, fmt.Errorf("%s: %w", ExtVersion, err))
	}
	agentVersion, err := bundle.ParseVersion(versionText)
	if err != nil {
		return reject(deadletter.MalformedVersion, fmt.Errorf("%s: %w", ExtVersion, err))
	}
	var agentDep bundle.Version
	hasDep := ev.dependency != nil
	if hasDep {
		depText, err := types.ToString(ev.dependency)
		if err == nil {
			agentDep, err = bundle.ParseVersion(depText)
		}
		if err != nil {
			return reject(deadletter.MalformedVersion, fmt.Errorf("%s: %w", ExtDependencyVersion, err))
		}
	}
	if t.dependsOn != "" && !hasDep {
		// Without it the bundle would wait for a base that cannot come.
		return reject(deadletter.MissingAttribute, fmt.Errorf("no %s: %s depends on %s", ExtDependencyVersion, short, t.dependsOn))
	}

	data := ev.data
	if size := ev.chunkSize; size != nil {
		// A chunk the reader did not assemble: too large to hold, or cut
		// wrongly (globalhub_chunks.go).
		n, err := types.ToInteger(size)
		if err == nil && int64(n) > int64(rules.MaxBundleBytes) {
			return reject(deadletter.TooLarge, fmt.Errorf("chunked event of %d bytes, limit %d", n, rules.MaxBundleBytes))
		}
		return reject(deadletter.BadPayload, fmt.Errorf("a chunk (%s %v) of an event that could not be assembled", ExtChunkSize, size))
	}
	if len(data) > rules.MaxBundleBytes {
		return reject(deadletter.TooLarge, fmt.Errorf("data is %d bytes, limit %d", len(data), rules.MaxBundleBytes))
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
	b := &bundle.Bundle{
		Hub: hub, Type: bundleType, Origin: origin, ReceivedAt: receivedAt, EventTime: eventTime,
		Version: g.version(hub, short, t, agentVersion, eventTime),
	}
	if t.dependsOn != "" {
		b.Dependency, b.HasDependency = g.dependency(hub, t.dependsOn, agentDep, eventTime), true
	}
	payload, err := rules.Decoder.Decode(bundleType, data)
	if err != nil {
		return reject(payloadReason(err), err)
	}
	b.Payload, b.Size = payload, len(data)
	return b, nil
}

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

// decodeMessage decodes one message with the profiles the reader has.
func (r *Reader) decodeMessage(msg *kafka.Message) (*bundle.Bundle, *Reject) {
	if gh := r.deps.GlobalHub; gh != nil && globalHubCandidate(msg) {
		return gh.Decode(msg, r.rules, time.Now())
	}
	return Decode(msg, r.rules, time.Now())
}

// globalHubCandidate reports whether msg may be a global-hub event: its
// binary-mode type says so, or it has none (structured mode, which only
// parsing tells).
func globalHubCandidate(msg *kafka.Message) bool {
	typ, ok := header(msg, headerType)
	return !ok || strings.HasPrefix(typ, GlobalHubTypePrefix)
}
