package transport

import (
	"slices"
	"strings"
	"sync"

	"github.com/stbridge/stb/pkg/bundle"
)

// The global-hub profile's runs: how the agent's versions, which start
// again when it restarts, map onto versions that only grow.

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
// unset), the event must instead be of generation 0, which only a run's
// first event is (ghType.restarts).
// A new run is numbered one above the current one, so it is newer than
// every run before it in that partition: the order is total, and no
// sender clock enters it.
//
// An event maps to bundle.Version{Incarnation: run<<32 | generation,
// Generation: value}: run first, then the agent's own order.
//
// policy.localcompletecompliance names the localcompliance it was computed
// on: its extdependencyversion is the compliance emitter's live version,
// one generation past the compliance event last sent, with its value
// (agent/pkg/status/syncers/policies/policy_syncer.go shares one version
// between the compliance emitter and the complete one's dependency;
// generic_emitter.go's PostSend moves the generation after each send, and
// multi_event_syncer.go sends the compliance first in every tick). So a
// dependency "n.v" names the compliance event "(n-1).v" of the same agent
// run. The runs of the two types are numbered on their own partitions,
// which a shared topic reads unevenly; a complete compliance run is
// numbered by the compliance run it belongs to (see startsRun, newRun and
// align), so its dependency is that run's compliance version.
//
// What the profile learns is also what the database keeps: the version
// (run and agent version), where the event was read, and the ids of the
// latest runs' first events (the run_ids of its stored state, ghState),
// so that a bridge that starts again (Restore) tells a replayed event,
// which it reads at or before the stored offset, from a restart of the
// agent.
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
	// restoredFrames are the hashed ids of frames written at their run's
	// first version, as the start_frames of its stored state keep them: a
	// copy of one is never a new run either.
	restoredFrames []uint64
	// read is where the newest event of the type was read (or, restored,
	// written): an event read again at or before it, in the same
	// partition, was read before and is mapped as it was then.
	read    bundle.Origin
	hasRead bool

	// history is, for a type another depends on, what was read of its
	// latest runs (see align).
	history []runHistory
	// skipped counts, for a type that depends on another, the first
	// events of its runs after run read before the base's newest event
	// and dropped as stale (firstOfBaseRun).
	skipped uint64

	// storedIDs and storedFrames are what the database keeps of the runs
	// (the stored state, ghState), as of the newest bundle made: the run
	// ids of the bundles, the latest maxStoredRuns, and their start
	// frames, the latest maxStoredFrames. Each bundle carries them as its
	// FamilyState, sharing their backing arrays (store).
	storedIDs    []string
	storedFrames []int64
	// compacted: the hub's unit was evicted and this is what the
	// database keeps of it (GlobalHub.Evict), until its next event.
	compacted bool
}

// maxStoredRuns and maxStoredFrames bound the run ids and start frames
// stored per hub and type (ghState).
const (
	maxStoredRuns   = 4
	maxStoredFrames = 64
)

// store records, as the database will keep them, a bundle's run id and
// start frame, and returns the state the bundle carries. The lists only
// grow at their end, past every state handed out before (a state holds
// the list as it was, its own length), and slide forward, so appending
// in place changes no state handed out and copies only when the backing
// array is full, once per so many appends.
func (r *runState) store(runID string, frame uint64) *ghSnapshot {
	if runID != "" && !slices.Contains(r.storedIDs, runID) {
		ids := append(r.storedIDs, runID)
		r.storedIDs = ids[max(0, len(ids)-maxStoredRuns):]
	}
	if frame != 0 {
		frames := append(r.storedFrames, int64(frame))
		r.storedFrames = frames[max(0, len(frames)-maxStoredFrames):]
	}
	return &ghSnapshot{runIDs: r.storedIDs, frames: r.storedFrames}
}

// ghSnapshot is the state a bundle carries (bundle.Bundle.FamilyState):
// encoded only when the bundle is written.
type ghSnapshot struct {
	runIDs []string
	frames []int64
}

// EncodeState implements bundle.State.
func (s *ghSnapshot) EncodeState() []byte { return EncodeGlobalHubState(s.runIDs, s.frames) }

// runHistory is what was read of one run of a type that another depends
// on: its events' versions (the latest maxHistory), and whether a newer run
// started.
type runHistory struct {
	run    uint64
	events []agentVersion
	ended  bool
}

// maxHistory bounds the versions kept per run in runHistory, and
// maxHistoryRuns the runs kept.
const (
	maxHistory     = 64
	maxHistoryRuns = 8
)

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

// hashID hashes an event id the profile remembers: FNV-1a, 64 bits, the
// same in every process, as the start_frames of its stored state keep
// them across restarts of the bridge.
func hashID(id string) uint64 {
	h := uint64(14695981039346656037)
	for i := 0; i < len(id); i++ {
		h ^= uint64(id[i])
		h *= 1099511628211
	}
	return h
}

// less orders two agent versions: by generation, then value.
func less(a, b agentVersion) bool {
	if a.generation == b.generation {
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
		return less(a, latest)
	}
	return a.generation == 0
}

// pack maps an agent version of a run to the bundle's version.
func pack(run uint64, a agentVersion) bundle.Version {
	return bundle.Version{Incarnation: run<<32 | a.generation, Generation: a.value}
}

// unpack is pack's inverse.
func unpack(v bundle.Version) (run uint64, a agentVersion) {
	return v.Incarnation >> 32, agentVersion{generation: v.Incarnation & maxAgentGeneration, value: v.Generation}
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

// RestoreRuns records what stb.bundle_versions holds of a hub's bundle
// type: its version (run and agent version), where it was read, and the
// ids of the latest runs' first events and the frames stored (the stored
// state, Restore). Other types are ignored; runs only move forward, so a
// bridge that read further keeps what it read.
func (g *GlobalHub) RestoreRuns(hub, bundleType string, v bundle.Version, at bundle.Origin, runIDs []string, startFrames []int64) {
	short, ok := strings.CutPrefix(bundleType, bundle.GlobalHubPrefix)
	if !ok {
		return
	}
	g.mu.Lock()
	defer g.mu.Unlock()
	g.restoreLocked(hub, short, v, at, runIDs, startFrames)
}

// restoreLocked is RestoreRuns of the short type; g.mu is held.
func (g *GlobalHub) restoreLocked(hub, short string, v bundle.Version, at bundle.Origin, runIDs []string, startFrames []int64) {
	t, known := ghTypes[short]
	if !known || v.Incarnation == 0 {
		return
	}
	run, a := unpack(v)
	r := g.state(runKey{hub, short})
	if run < r.run || (run == r.run && r.hasLatest && !less(r.latest, a)) {
		return
	}
	r.run, r.latest, r.hasLatest, r.skipped = run, a, true, 0
	r.storedIDs, r.storedFrames = slices.Clone(runIDs), slices.Clone(startFrames)
	if t.isBase() {
		r.history = []runHistory{{run: run, events: []agentVersion{a}}}
	}
	if at.Offset >= 0 && at.Topic != "" {
		r.read, r.hasRead = at, true
	}
	for _, f := range startFrames {
		if h := uint64(f); !slices.Contains(r.restoredFrames, h) {
			r.restoredFrames = append(r.restoredFrames, h)
		}
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

// seen reports whether an id was read before: the first event or a start
// frame of a known run, or one of the ids read last.
func (r *runState) seen(id string) bool {
	h := hashID(id)
	for _, s := range r.starts {
		if s.id == id || slices.Contains(s.frames, h) {
			return true
		}
	}
	return slices.Contains(r.recent, h) || slices.Contains(r.restoredFrames, h)
}

// startID returns the id of the current run's first event, if known.
func (r *runState) startID() string {
	if n := len(r.starts); n > 0 && r.starts[n-1].run == r.run {
		return r.starts[n-1].id
	}
	return ""
}

// mapped is what version makes of an event: its bundle version, for a
// type that depends on another the base's version its
// extdependencyversion names, the id of its run's first event, and, for a
// frame read at its run's first version or at its newest, its hashed id
// (startFrame).
type mapped struct {
	v, dep     bundle.Version
	runID      string
	startFrame uint64
	// state is what the database is to keep of the runs once the bundle
	// is written; nil for a stale event.
	state *ghSnapshot
}

// version maps an event of a hub's type, read at o. See GlobalHub.
func (g *GlobalHub) version(hub, short string, t ghType, a, dep agentVersion, id string, o bundle.Origin) mapped {
	g.mu.Lock()
	defer g.mu.Unlock()
	r := g.state(runKey{hub, short})
	r.compacted = false
	if r.hasRead && samePartition(o, r.read) && o.Offset <= r.read.Offset {
		// Read again (a rebalance, a restart): the run it was read in is
		// the newest one that started at or before it; none known means
		// it was written or replaced before what the database holds.
		for i := len(r.starts) - 1; i >= 0; i-- {
			if s := r.starts[i]; s.hasPos && samePartition(s.at, o) && s.at.Offset <= o.Offset {
				return mapped{v: pack(s.run, a), dep: t.dependency(s.run, dep), runID: s.id}
			}
		}
		return mapped{}
	}
	base := g.baseInOrder(hub, t, o)
	if base != nil && o.Offset < base.read.Offset && !r.firstOfBaseRun(t, a, base, id) {
		// On the base's own partition (a per-hub topic) the order is the
		// agent's: an event before the base's newest one read (or
		// written, restored) was computed on an older base, and is read
		// again only after a restart or a rebalance. It is stale; it must
		// not number a run either: the next one read after the base is
		// numbered by the base (startsRun). The one exception is the
		// first event of the base's newest run, which overtook it
		// (firstOfBaseRun). Its id is remembered: a late copy of it must
		// not be taken for a run's first event (startsRun) either.
		if !r.seen(id) {
			r.remember(id, t.recentLimit())
		}
		return mapped{}
	}
	r.read, r.hasRead = o, true
	if r.seen(id) {
		// A copy of an event read before is stale, the first event of the
		// current run's too: its original is written or replaced, and a
		// frame read since may carry its version (a resync's frames share
		// one), so taking the copy at that version would undo the frame.
		return mapped{}
	}
	var frame uint64
	if startsRun(t, r, a, base) {
		g.newRun(hub, t, r, o)
		r.addStart(runStart{id: id, run: r.run, at: o, hasPos: true, first: a})
		r.latest, r.hasLatest = a, true
	} else {
		if less(r.latest, a) {
			r.latest = a
		}
		if n := len(r.starts); n > 0 && r.starts[n-1].run == r.run && r.starts[n-1].hasPos && r.starts[n-1].first == a {
			frame = hashID(id)
			if len(r.starts[n-1].frames) < maxStartFrames {
				r.starts[n-1].frames = append(r.starts[n-1].frames, frame)
			}
		} else if a == r.latest {
			// At the run's newest version (a periodic resync's frames, the
			// events of one interval in single mode share it): recorded
			// with the version too, so that after a restart of the bridge,
			// whose ids read last are gone, a late copy of one read after
			// the others is a copy, not an event at that version again
			// (TestGlobalHubAgent ended once with a local policy one
			// generation behind).
			frame = hashID(id)
		}
	}
	r.remember(id, t.recentLimit())
	if t.dependsOn != "" && base == nil {
		g.align(hub, t, r, dep)
	}
	if t.isBase() {
		r.record(a)
	}
	m := mapped{v: pack(r.run, a), dep: t.dependency(r.run, dep), runID: r.startID(), startFrame: frame}
	m.state = r.store(m.runID, frame)
	return m
}

// baseInOrder returns, for a type that depends on another, the base's
// state when the base's newest event was read (or written, restored) in
// o's partition: there the order is the agent's, which sends the base
// first in every tick and restarts both emitters together. nil otherwise.
// g.mu is held.
func (g *GlobalHub) baseInOrder(hub string, t ghType, o bundle.Origin) *runState {
	if t.dependsOn == "" {
		return nil
	}
	if base := g.runs[runKey{hub, t.dependsOn}]; base != nil && base.hasRead && base.run > 0 && samePartition(base.read, o) {
		return base
	}
	return nil
}

// startsRun reports whether an event at a, whose id was never read,
// starts a new run of r. Read after its base in the base's partition
// (base not nil), a dependent event belongs to the base's newest run: a
// new one when the base's run is newer than r's, whatever the event's own
// version says. Its own run's first event may never be read again: a
// complete compliance whose compliance was replaced before it was written
// is stale and released, and a bridge that starts again reads from past
// it; the run's next events, of another generation, must still be of the
// new run (TestGlobalHubAgentRestart ended one run in three with a hub's
// complete compliance numbered in the run before, stale for good, and
// its compliance rows behind).
//
// There is one exception to the base's order: the agent's producer
// (acks=1, retries=1, no idempotence: upstream pkg/transport/config/
// confluent_config.go) may put a new run's first complete compliance
// ahead of that run's first compliance, which a retry delays. So a
// dependent event of generation 0, the first of an agent run and only
// that (ghType.restarts), read while the base's newest run is the
// dependent's own, starts a new run too, one above the base's: the run of
// the compliance still to come, which it names (newRun). Upstream holds
// it until that compliance is processed (manager/pkg/status/conflator/
// element_complete.go, matchDependency, dependency.ExactMatch) and
// applies it; numbered in the run before, it was older than what was
// written, dropped as stale, and that run's complete compliance never
// applied (issue 34, item 12). A copy of an earlier run's first event
// has an id the profile keeps (the starts of the latest runs, and
// the run_ids of its stored state after a restart), so it is not taken for
// one. Otherwise see ghType.restarts.
func startsRun(t ghType, r *runState, a agentVersion, base *runState) bool {
	if base != nil {
		return base.run > r.run || (base.run == r.run && r.hasLatest && !t.ticks && a.generation == 0)
	}
	return !r.hasLatest || t.restarts(a, r.latest)
}

// firstOfBaseRun reports whether a dependent event read before the
// base's newest event in the base's partition (base.read, restored after
// a restart of the bridge) is the first event of the base's newest run,
// which it overtook on the way (startsRun). Read again after a restart,
// the first events (generation 0, never read) of the dependent's runs
// after r's come in the order of their runs, which are the base's runs up
// to its newest, one each at most (a run that sent no complete
// compliance has none); skipped counts them. The one that makes the count
// reach the base's newest run is that run's: if every run between sent
// one, that is its run; if one did not, the count never gets there. Stale
// in the agent's order, it is the first complete compliance of the run
// the database holds the compliance of, put ahead of it, when the bridge
// stopped between writing that compliance and writing this: numbered in
// the base's run it applies, where it was dropped, and then the next run's
// first one (startsRun) was numbered in this run. If it was in the
// agent's order after all, it names an older compliance of that run than
// the newest and is stale all the same, by its dependency. The others
// stay stale, their ids remembered.
func (r *runState) firstOfBaseRun(t ghType, a agentVersion, base *runState, id string) bool {
	if t.dependsOn == "" || t.ticks || a.generation != 0 || base.run <= r.run || r.seen(id) {
		return false
	}
	r.skipped++
	return r.run+r.skipped == base.run
}

// newRun moves r to a new run, newer than every run before it: numbered
// one above the current one, and, for a type that depends on another
// (localcompletecompliance on localcompliance), at least the base's newest
// run when that was read in the same partition, before this event (one
// above it when the event overtook the base's next run: startsRun). A
// dependent type's runs are numbered by the base's run they belong to:
// the agent restarts both emitters together and sends the compliance
// first, so each agent run has at most one run of each type, and the
// compliance run of a complete compliance run is at least one above the
// previous one's; on one partition (a per-hub topic) it is exactly the
// base's newest run read. On a shared topic, where the base is on another
// partition, the count is a first guess that align corrects. g.mu is held.
func (g *GlobalHub) newRun(hub string, t ghType, r *runState, o bundle.Origin) {
	r.run++
	r.skipped = 0
	if t.dependsOn != "" {
		if base := g.runs[runKey{hub, t.dependsOn}]; base != nil && base.hasRead && samePartition(base.read, o) {
			r.run = max(r.run, base.run)
		}
	}
	if n := len(r.history); n > 0 {
		r.history[n-1].ended = true
	}
	if t.isBase() {
		r.history = append(r.history, runHistory{run: r.run})
		if len(r.history) > maxHistoryRuns {
			r.history = slices.Delete(r.history, 0, 1)
		}
	}
}

// isBase reports whether another type depends on t.
func (t ghType) isBase() bool { return t.dependents }

// record adds a to what was read of r's current run, if it is newer than
// everything recorded of it: an older one is a copy whose id was not
// remembered, maybe of an earlier run, and would make align take the run
// for one that did not send what a dependent names.
func (r *runState) record(a agentVersion) {
	n := len(r.history)
	if n == 0 || r.history[n-1].run != r.run {
		r.history = append(r.history, runHistory{run: r.run})
		n++
	}
	h := &r.history[n-1]
	if k := len(h.events); k > 0 && !less(h.events[k-1], a) {
		return
	}
	if len(h.events) >= maxHistory {
		h.events = slices.Delete(h.events, 0, 1)
	}
	h.events = append(h.events, a)
}

// align moves a dependent type's current run r.run forward while the
// base's run of that number, as read, cannot hold the base event dep
// names: the base's generation grows by one on every send and its value
// only grows, so a run that sent dep's generation at another value, or
// sent a lower generation at dep's value or above (or a higher one at or
// below it), or ended before reaching dep's generation, is not the run
// the dependent was made in (an agent run that sent no complete
// compliance was counted). A base run not read yet, or not read in this
// process, is taken as it is. g.mu is held.
func (g *GlobalHub) align(hub string, t ghType, r *runState, dep agentVersion) {
	base := g.runs[runKey{hub, t.dependsOn}]
	if base == nil {
		return
	}
	want := baseEvent(dep)
	for {
		i := slices.IndexFunc(base.history, func(h runHistory) bool { return h.run == r.run })
		if i < 0 || base.history[i].holds(want) {
			return
		}
		r.run++
		r.skipped = 0
		if n := len(r.starts); n > 0 && r.starts[n-1].run == r.run-1 {
			r.starts[n-1].run = r.run
		}
	}
}

// holds reports whether the run may have sent the base event want.
func (h runHistory) holds(want agentVersion) bool {
	last := agentVersion{}
	for i, e := range h.events {
		switch {
		case e.generation == want.generation && e.value != want.value,
			e.generation < want.generation && e.value >= want.value,
			e.generation > want.generation && e.value <= want.value:
			return false
		}
		if i == 0 || less(last, e) {
			last = e
		}
	}
	return !h.ended || len(h.events) == 0 || last.generation >= want.generation
}

// baseEvent is the base event an extdependencyversion names: the
// compliance emitter's version after its last send is one generation past
// that send ("0.v" only before any send: then the compliance's "0.v").
func baseEvent(dep agentVersion) agentVersion {
	if dep.generation > 0 {
		dep.generation--
	}
	return dep
}

// dependency maps an extdependencyversion to the base's bundle version in
// the base's run the dependent run belongs to; the zero version for a
// type without a dependency.
func (t ghType) dependency(run uint64, dep agentVersion) bundle.Version {
	if t.dependsOn == "" {
		return bundle.Version{}
	}
	return pack(run, baseEvent(dep))
}
