package transport

import (
	"bytes"
	"encoding/json"
	"errors"
	"fmt"
	"hash/maphash"
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
	// ExtMigrationID and ExtMigrationStage name the migration and its
	// stage on a managedclustermigration event
	// (pkg/bundle/migration: MigrationId and Stage are carried in these
	// extensions, not in the data).
	ExtMigrationID    = "migrationid"
	ExtMigrationStage = "migrationstage"
)

// ghType is what the profile knows of one global-hub event type.
type ghType struct {
	// byValue orders the type's bundles by the value part of extversion
	// alone (see GlobalHub).
	byValue bool
	// dependsOn is the short type whose bundle extdependencyversion names.
	dependsOn string
	// events: the data is an event object or an array of them (sendmode).
	events bool
	// ticks: the generation grows on every send tick, also when nothing
	// is sent (agent/pkg/status/emitters: object and event emitters call
	// Next in every Send), so a run's first event may have any generation.
	// The other types' emitters move the generation only after a send
	// (agent/pkg/status/generic/generic_emitter.go: PostSend), so their
	// runs start at generation 0 and nothing else starts one.
	ticks bool
}

// ghTypes are the global-hub event types the bridge stores, by the type
// after GlobalHubTypePrefix (upstream: pkg/enum/event_type.go, and the
// manager's handlers registered in manager/pkg/status/handlers).
var ghTypes = map[string]ghType{
	"managedhub.heartbeat":           {},
	"managedhub.info":                {},
	"managedcluster":                 {ticks: true},
	"policy.localspec":               {ticks: true},
	"policy.localcompliance":         {byValue: true},
	"policy.localcompletecompliance": {dependsOn: "policy.localcompliance"},
	"event.localrootpolicy":          {events: true, ticks: true},
	"event.localreplicatedpolicy":    {events: true, ticks: true},
	"event.managedcluster":           {events: true, ticks: true},
	"security.alertcounts":           {},
	"managedclustermigration":        {},
}

// ghSkipped are the types the agent is known to send that the bridge does
// not store, as upstream's manager registers no handler for them: counted
// and skipped, never dead letters (a healthy agent must not page anyone).
var ghSkipped = map[string]bool{
	"event.clustergroupupgrade": true,
}

// GlobalHub is the global-hub profile's state: the agent's runs, per hub
// and type. It is safe for concurrent use.
//
// The agent's extversion is "<generation>.<value>" per type
// (pkg/bundle/version/version.go): value counts the changes, generation
// the sends (or the send ticks); both start again at 0 when the agent
// restarts, and several events may carry one version (a resync's frames,
// the events of one interval in single send mode). STB's versions must
// only grow and must not depend on any clock, so the profile numbers the
// agent's runs of each type in the order its partition gives them: one
// type is one Kafka key, so all of a hub's events of one type are in one
// partition, in the order the agent sent them. An event starts a new run
// when its version is older than the newest one read of the current run
// and its id was never read: a copy of an earlier event (a producer
// retry, a late copy of an earlier run's first event) has the id it had.
// For the types whose generation moves only after a send (ghType.ticks
// unset), the event must also be of generation 0, as every run of theirs
// starts there: an older copy whose id this process never read (its
// original came before a restart of the bridge) is then stale, not a run.
// A new run is numbered one above the current one, so it is newer than
// every run before it in that partition: the order is total, and no
// sender clock enters it.
//
// An event maps to bundle.Version{Incarnation: run<<32 | generation,
// Generation: value}: run first, then the agent's own order. The types
// ordered by value alone (policy.localcompliance, which
// localcompletecompliance names by value) leave the generation out. A
// localcompletecompliance run is linked to the localcompliance run it was
// computed in (see newRun), so that its extdependencyversion maps to that
// run's localcompliance version.
//
// What the profile learns is also what the database keeps: the version
// (run and agent version), where the event was read, and the ids of the
// latest runs' first events (status.bundle_versions.run_ids), so that a
// bridge that starts again (Restore) tells a replayed event, which it
// reads at or before the stored offset, from a restart of the agent.
type GlobalHub struct {
	mu   sync.Mutex
	runs map[runKey]*runState
}

type runKey struct{ hub, typ string }

// agentVersion is the agent's "<generation>.<value>".
type agentVersion struct{ generation, value uint64 }

// runState is what the profile knows of one hub's runs of one type.
type runState struct {
	// run numbers the current run, from 1; 0 when none is known.
	run uint64
	// latest is the newest version read of the current run.
	latest    agentVersion
	hasLatest bool
	// starts are the first events of the latest runs, oldest first, at
	// most maxRuns. A start restored from the database has no position.
	starts []runStart
	// recent are the ids read last (hashed), oldest first: a copy of
	// one of them is never a new run.
	recent []uint64
	// read is where the newest event of the type was read (or, restored,
	// written): an event read again at or before it, in the same
	// partition, was read before and is mapped as it was then.
	read    bundle.Origin
	hasRead bool

	// link is, for a type that depends on another, the base's run the
	// current run is linked to (see newRun); linkSure says it was derived
	// from the order the base's runs were read in, not guessed from what
	// a restart of the bridge restored.
	link              uint64
	linkSet, linkSure bool
}

type runStart struct {
	id     string
	run    uint64
	at     bundle.Origin
	hasPos bool
	// first is the run's first version, and frames the ids (hashed) of
	// the other events read at it: a resync's frames at a run's start
	// share its version, and a late copy of one of them must be known
	// for a copy long after the ids read last have moved on.
	first  agentVersion
	frames []uint64
}

// maxStartFrames bounds the frames remembered per run start.
const maxStartFrames = 16

const (
	// maxRuns bounds the run starts kept per hub and type (and stored).
	maxRuns = 4
	// maxRecent bounds the ids kept per hub and type for copies, and
	// maxRecentObjects for the object emitters' types, whose resyncs send
	// dozens of frames at one version: a late copy of an earlier run's
	// frame can carry the version the new run is at, and only its id
	// tells it from the new run's frames.
	maxRecent        = 16
	maxRecentObjects = 64
	// maxAgentGeneration is the largest generation the profile can order
	// (it shares the incarnation with the run number).
	maxAgentGeneration = 1<<32 - 1
)

// idHashSeed hashes the event ids the profile remembers.
var idHashSeed = maphash.MakeSeed()

func hashID(id string) uint64 { return maphash.String(idHashSeed, id) }

// less orders two versions of the type: by value alone for byValue types,
// else by generation, then value.
func (t ghType) less(a, b agentVersion) bool {
	if t.byValue || a.generation == b.generation {
		return a.value < b.value
	}
	return a.generation < b.generation
}

// recentLimit is how many ids read last the profile keeps for the type.
func (t ghType) recentLimit() int {
	if t.ticks && !t.events {
		return maxRecentObjects
	}
	return maxRecent
}

// restarts reports whether an event at a, whose id was never read, starts
// a new run after one whose newest event is at latest. An event emitter's
// or object emitter's run (ticks) may start at any generation, and one
// version is sent on several events (resync frames, single events): only
// an older version starts a run. The other emitters send one event per
// version and move the generation after every send, so generation 0 is
// the first event of a run and only that (the old run may have sent just
// "0.4" and the new one's first event be "0.5"); an event of another
// generation whose id was never read is a copy of one this process never
// saw.
func (t ghType) restarts(a, latest agentVersion) bool {
	if t.ticks {
		return t.less(a, latest)
	}
	return a.generation == 0
}

// pack maps an agent version of a run to the bundle's version.
func (t ghType) pack(run uint64, a agentVersion) bundle.Version {
	if t.byValue {
		return bundle.Version{Incarnation: run << 32, Generation: a.value}
	}
	return bundle.Version{Incarnation: run<<32 | a.generation, Generation: a.value}
}

// unpack is pack's inverse.
func (t ghType) unpack(v bundle.Version) (run uint64, a agentVersion) {
	run = v.Incarnation >> 32
	a.value = v.Generation
	if !t.byValue {
		a.generation = v.Incarnation & maxAgentGeneration
	}
	return run, a
}

// samePartition reports whether a and b were read from one partition.
func samePartition(a, b bundle.Origin) bool {
	return a.Topic == b.Topic && a.Partition == b.Partition
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

// Restore records what status.bundle_versions holds of a hub's bundle
// type: its version (run and agent version), where it was read, and the
// ids of the latest runs' first events. Other types are ignored; runs only
// move forward, so a bridge that read further keeps what it read.
func (g *GlobalHub) Restore(hub, bundleType string, v bundle.Version, at bundle.Origin, runIDs []string) {
	short, ok := strings.CutPrefix(bundleType, GlobalHubBundlePrefix)
	t, known := ghTypes[short]
	if !ok || !known || v.Incarnation == 0 {
		return
	}
	run, a := t.unpack(v)
	g.mu.Lock()
	defer g.mu.Unlock()
	r := g.state(runKey{hub, short})
	if run < r.run || (run == r.run && r.hasLatest && !t.less(r.latest, a)) {
		return
	}
	r.run, r.latest, r.hasLatest = run, a, true
	r.linkSet = false // guessed again at the next use (linkOf)
	if at.Offset >= 0 && at.Topic != "" {
		r.read, r.hasRead = at, true
	}
	for i, id := range runIDs {
		if slices.ContainsFunc(r.starts, func(s runStart) bool { return s.id == id }) {
			continue
		}
		startRun := uint64(0) // an earlier run: older than anything written
		if i == len(runIDs)-1 {
			startRun = run
		}
		r.addStart(runStart{id: id, run: startRun})
	}
}

func (r *runState) addStart(s runStart) {
	r.starts = append(r.starts, s)
	if len(r.starts) > maxRuns {
		r.starts = slices.Delete(r.starts, 0, 1)
	}
}

func (r *runState) remember(id string, limit int) {
	if len(r.recent) >= limit {
		n := copy(r.recent, r.recent[len(r.recent)-limit+1:])
		r.recent = r.recent[:n]
	}
	r.recent = append(r.recent, hashID(id))
}

// seen reports whether an id was read before: the first event of a known
// run (with that run), or one of the ids read last (a copy: stale, as its
// original was read and is written or replaced).
func (r *runState) seen(id string) (run uint64, start, ok bool) {
	for _, s := range r.starts {
		if s.id == id {
			return s.run, true, true
		}
	}
	h := hashID(id)
	for _, s := range r.starts {
		if slices.Contains(s.frames, h) {
			return s.run, false, true
		}
	}
	if slices.Contains(r.recent, h) {
		return 0, false, true
	}
	return 0, false, false
}

// startID returns the id of the current run's first event, if known.
func (r *runState) startID() string {
	if n := len(r.starts); n > 0 && r.starts[n-1].run == r.run {
		return r.starts[n-1].id
	}
	return ""
}

// version maps an event of a hub's type, read at o, to its bundle
// version, the id of its run's first event, and, for a type that depends
// on another, the base's run its extdependencyversion names values in.
// See GlobalHub.
func (g *GlobalHub) version(hub, short string, t ghType, a agentVersion, id string, o bundle.Origin) (v bundle.Version, runID string, link uint64) {
	g.mu.Lock()
	defer g.mu.Unlock()
	r := g.state(runKey{hub, short})
	if r.hasRead && samePartition(o, r.read) && o.Offset <= r.read.Offset {
		// Read again (a rebalance, a restart): the run it was read in is
		// the newest one that started at or before it; none known means
		// it was written or replaced before what the database holds.
		for i := len(r.starts) - 1; i >= 0; i-- {
			if s := r.starts[i]; s.hasPos && samePartition(s.at, o) && s.at.Offset <= o.Offset {
				if t.dependsOn != "" && s.run == r.run {
					link = g.linkOf(hub, t, r)
				}
				return t.pack(s.run, a), s.id, link
			}
		}
		return bundle.Version{}, "", 0
	}
	if t.dependsOn != "" {
		// On the base's own partition (a per-hub topic) the order is the
		// agent's: an event before the base's newest one read (or
		// written, restored) was computed on an older base, and is read
		// again only after a restart or a rebalance. It is stale; it must
		// not number a run either.
		if base := g.runs[runKey{hub, t.dependsOn}]; base != nil && base.hasRead && samePartition(base.read, o) && o.Offset < base.read.Offset {
			return bundle.Version{}, "", 0
		}
	}
	r.read, r.hasRead = o, true
	if run, start, ok := r.seen(id); ok {
		// A copy of an event read before. The first event of the current
		// run keeps its version (equal or older than what was read since);
		// any other copy is stale: its original is written or replaced.
		if start && run == r.run {
			if t.dependsOn != "" {
				link = g.linkOf(hub, t, r)
			}
			return t.pack(run, a), "", link
		}
		return bundle.Version{}, "", 0
	}
	if !r.hasLatest || t.restarts(a, r.latest) {
		g.newRun(hub, short, t, r)
		r.addStart(runStart{id: id, run: r.run, at: o, hasPos: true, first: a})
		r.latest, r.hasLatest = a, true
	} else {
		if t.less(r.latest, a) {
			r.latest = a
		}
		if n := len(r.starts); n > 0 && r.starts[n-1].run == r.run && r.starts[n-1].hasPos &&
			r.starts[n-1].first == a && len(r.starts[n-1].frames) < maxStartFrames {
			r.starts[n-1].frames = append(r.starts[n-1].frames, hashID(id))
		}
	}
	r.remember(id, t.recentLimit())
	if t.dependsOn != "" {
		link = g.linkOf(hub, t, r)
	}
	return t.pack(r.run, a), r.startID(), link
}

// newRun moves r to a new run, numbered one above the current one, newer
// than every run before it.
//
// A type that depends on another (localcompletecompliance on
// localcompliance) also links its new run to one of the base's runs, the
// one its extdependencyversion names values in: the base's newest run when
// no earlier run of this type was linked to it; else, when that earlier
// link was sure, the base's next run (this type's partition is read ahead
// of the base's); else (the earlier link was a guess: a restart of the
// bridge restored the base past this type, whose partition replays runs
// the base is already past) the base's newest run again. On a hub's own
// topic, one partition, the base's new run is read first and the link is
// exact. A base's run starting in this process re-links a dependent run
// linked by a guess to an older one (linkBase). g.mu is held.
func (g *GlobalHub) newRun(hub, short string, t ghType, r *runState) {
	r.run++
	if t.dependsOn == "" {
		g.relinkDependents(hub, short, r.run)
		return
	}
	base := g.runs[runKey{hub, t.dependsOn}]
	baseRun := uint64(0)
	if base != nil {
		baseRun = base.run
	}
	switch {
	case !r.linkSet && baseRun == 0:
		// No run of the base known yet: its first.
		r.link, r.linkSure = 1, true
	case !r.linkSet || baseRun > r.link:
		r.link, r.linkSure = baseRun, base.witnessed(baseRun)
	case r.linkSure:
		// Read ahead of the base (none of its runs known yet, or its
		// newest already linked): the base's next run.
		r.link++
	default:
		r.link, r.linkSure = max(baseRun, 1), base != nil && base.witnessed(baseRun)
	}
	r.linkSet = true
}

// witnessed reports whether run's first event was read by this process.
func (r *runState) witnessed(run uint64) bool {
	return slices.ContainsFunc(r.starts, func(s runStart) bool { return s.run == run && s.hasPos })
}

// relinkDependents moves the runs of the types that depend on t, linked by
// a guess to an older run of t's, to t's new run. g.mu is held.
func (g *GlobalHub) relinkDependents(hub, base string, run uint64) {
	for short, dt := range ghTypes {
		if dt.dependsOn != base {
			continue
		}
		if d := g.runs[runKey{hub, short}]; d != nil && d.linkSet && !d.linkSure && d.link < run {
			d.link = run
		}
	}
}

// linkOf returns the base run r's current run is linked to, guessing the
// base's newest run when nothing linked it in this process (a restart of
// the bridge restored r). g.mu is held.
func (g *GlobalHub) linkOf(hub string, t ghType, r *runState) uint64 {
	if !r.linkSet {
		r.link, r.linkSet, r.linkSure = 1, true, false
		if base := g.runs[runKey{hub, t.dependsOn}]; base != nil && base.run > 0 {
			r.link = base.run
		}
	}
	return r.link
}

// dependency maps an extdependencyversion, naming the base's version by
// value in the agent's run the dependent was made in (the base's run link),
// to the base's bundle version.
func dependency(run uint64, dep agentVersion) bundle.Version {
	return bundle.Version{Incarnation: run << 32, Generation: dep.value}
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
	var link uint64
	b.Version, b.RunID, link = g.version(hub, short, t, agentV, ev.id, origin)
	if t.dependsOn != "" {
		b.Dependency, b.HasDependency = dependency(link, agentVersion{agentDep.Incarnation, agentDep.Generation}), true
	}
	if short == "managedclustermigration" {
		if data, err = withMigrationAttrs(data, ev.migrationID, ev.migrationStage); err != nil {
			return reject(deadletter.BadPayload, err)
		}
	}
	payload, err := rules.Decoder.Decode(bundleType, data)
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
	b.Payload, b.Size = payload, len(data)
	return b, nil
}

// withMigrationAttrs adds the migration id and stage extensions to a
// managedclustermigration event's data object as its last members
// ("migrationId", "stage"), where the decoder reads them: the agent sends
// them as extensions, and older agents in the data, which the extensions
// override (upstream's manager reads the extension first).
func withMigrationAttrs(data []byte, id, stage any) ([]byte, error) {
	var add []string
	for _, kv := range []struct {
		name string
		v    any
	}{{"migrationId", id}, {"stage", stage}} {
		if kv.v == nil {
			continue
		}
		text, err := types.ToString(kv.v)
		if err != nil {
			return nil, fmt.Errorf("%s: %w", kv.name, err)
		}
		quoted, err := json.Marshal(text)
		if err != nil {
			return nil, err
		}
		add = append(add, `"`+kv.name+`":`+string(quoted))
	}
	if len(add) == 0 {
		return data, nil
	}
	body := bytes.TrimRight(data, " \t\r\n")
	if len(body) == 0 || body[len(body)-1] != '}' {
		return nil, errors.New("managedclustermigration: the data is not a JSON object")
	}
	inner := bytes.TrimSpace(body[:len(body)-1])
	out := make([]byte, 0, len(body)+64)
	out = append(out, inner...)
	if len(inner) > 1 { // more than "{"
		out = append(out, ',')
	}
	out = append(out, strings.Join(add, ",")...)
	return append(out, '}'), nil
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
