package transport

import (
	"hash/maphash"
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
