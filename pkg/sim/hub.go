package sim

import (
	"maps"
	"math/rand/v2"

	"github.com/stbridge/stb/pkg/bundle"
)

// hub is the model of one hub's agent: its version counter, its random
// source and the sources of the bundle types it sends.
type hub struct {
	name     string
	topic    string
	rng      *rand.Rand
	restartP float64
	// version is the version of the last bundle stamped. Every bundle,
	// whatever its type, takes the next generation, as the agent does.
	version bundle.Version
	last    map[string]bundle.Version // last version sent per type
	// bases maps each delta type sent to the type of its base.
	bases map[string]string
	// seq numbers the hub's bundles in the order sent; lastSeq holds the
	// number of the last one of each type. It tells whether a base was
	// sent after a delta on it, for every agent kind (versions of the
	// global-hub agent's types cannot be compared across types).
	seq     int
	lastSeq map[string]int
	// gh is the global-hub agent's side, nil for the other kinds.
	gh *ghAgent
	// loseP is Config.LoseProbability; held is a compliance report held
	// back until it is known whether a delta follows it (then it may be
	// lost); lost counts the reports lost.
	loseP    float64
	held     *Message
	lost     int
	resyncs  int
	restarts int
	sources  []source
}

// newHub returns the model of hub i (0-based). Each hub draws from a random
// source of its own, seeded from the run's seed and its index, so that a
// hub behaves the same whatever the number of hubs beside it.
func newHub(cfg Config, i int) *hub {
	name := cfg.hubName(i)
	rng := rand.New(rand.NewPCG(uint64(cfg.Seed), uint64(i)))
	clusters := newManagedClusters(rng, name, cfg)
	// The order is the order of the hub's bundles in each round. It is
	// part of what the seed reproduces; the policy sources rely on it.
	var sources []source
	var gh *ghAgent
	if cfg.Agent == AgentGlobalHub {
		gh = newGHAgent(rng, cfg, i, clusters)
	} else {
		sources = []source{&heartbeats{}, clusters}
		if cfg.Policies > 0 {
			sources = append(sources, newPolicySources(rng, name, clusters, cfg)...)
		}
	}
	return &hub{
		name:     name,
		topic:    cfg.Topic,
		rng:      rng,
		restartP: cfg.RestartProbability,
		loseP:    max(cfg.LoseProbability, 0),
		version:  bundle.Version{Incarnation: cfg.FirstIncarnation},
		last:     make(map[string]bundle.Version),
		bases:    make(map[string]string),
		lastSeq:  make(map[string]int),
		gh:       gh,
		sources:  sources,
	}
}

// step advances the hub to round (1-based) and returns the messages it
// sends in it, in order. STB's and the hub-of-hubs agents' go without
// their times (the caller stamps those when it sends them); the global-hub
// agent stamps its own, with its node's clock.
func (h *hub) step(round int) ([]GHMessage, error) {
	t := tick{round: round}
	if round > 1 && h.rng.Float64() < h.restartP {
		h.restart()
		t.restarted = true
	}
	if h.gh != nil {
		return h.gh.step(h.rng, t)
	}
	msgs := make([]Message, 0, len(h.sources))
	for _, s := range h.sources {
		d, ok, err := s.step(h.rng, t)
		if err != nil {
			return nil, err
		}
		if !ok {
			continue
		}
		msgs = h.lose(msgs, h.stamp(d))
	}
	return plain(msgs), nil
}

// plain returns msgs as GHMessages that say nothing more.
func plain(msgs []Message) []GHMessage {
	out := make([]GHMessage, len(msgs))
	for i, m := range msgs {
		out[i].Message = m
	}
	return out
}

// noteSent records the order of d among the hub's bundles.
func (h *hub) noteSent(d draft) {
	h.seq++
	h.lastSeq[d.typ] = h.seq
	if d.delta {
		h.bases[d.typ] = d.dependsOn
	}
}

// stamp gives d the hub's next version and its dependency.
func (h *hub) stamp(d draft) Message {
	h.noteSent(d)
	h.version.Generation++
	m := Message{
		Topic:   h.topic,
		Hub:     h.name,
		Type:    d.typ,
		ID:      h.name + "/" + d.typ + "/" + h.version.String(),
		Version: h.version,
		Data:    d.data,
	}
	if d.dependsOn != "" {
		if dep, ok := h.last[d.dependsOn]; ok {
			m.Dependency = &dep
		}
	}
	h.last[d.typ] = h.version
	return m
}

// lose appends m to msgs, unless reports may be lost: a compliance report
// is then held until the hub's next compliance message. If that is a
// delta, the report is lost with probability loseP (the delta names a base
// the bridge never reads); else it is sent first, late but in order.
func (h *hub) lose(msgs []Message, m Message) []Message {
	if h.loseP == 0 {
		return append(msgs, m)
	}
	switch m.Type {
	case TypeCompliance:
		if h.held != nil {
			msgs = append(msgs, *h.held)
		}
		h.held = &m
		return msgs
	case TypeComplianceDelta:
		if h.held != nil {
			if h.rng.Float64() < h.loseP {
				h.lost++
			} else {
				msgs = append(msgs, *h.held)
			}
			h.held = nil
		}
	}
	return append(msgs, m)
}

// flush returns what the hub sends after the last round: the report
// still held, if any, or the global-hub agent's repairing resyncs.
func (h *hub) flush() ([]GHMessage, error) {
	if h.gh != nil {
		return h.gh.finish()
	}
	if h.held == nil {
		return nil, nil
	}
	m := *h.held
	h.held = nil
	return plain([]Message{m}), nil
}

// resync returns a complete bundle of typ with the hub's current state and
// a new generation, as an agent sends when asked for a resync; ok is
// false for a type the hub cannot send that way.
func (h *hub) resync(typ string) (Message, bool, error) {
	if h.gh != nil {
		return Message{}, false, nil
	}
	for _, s := range h.sources {
		f, ok := s.(fuller)
		if !ok || f.fullType() != typ {
			continue
		}
		d, err := f.full()
		if err != nil {
			return Message{}, false, err
		}
		h.resyncs++
		return h.stamp(d), true, nil
	}
	return Message{}, false, nil
}

// restart simulates the agent restarting: it comes back with the next
// incarnation and counts generations from zero again.
func (h *hub) restart() {
	h.version = bundle.Version{Incarnation: h.version.Incarnation + 1}
	h.restarts++
}

// state returns what the database must hold for the hub once the bridge
// has written the last bundle of every type.
//
// The version of a delta type is certain only when no base bundle was sent
// after the last delta: the bridge then applies every delta on that base,
// the last one included. When a newer base followed, the deltas before it
// may each have been applied or dropped as stale (the bridge writes only
// the newest base, and deltas on a replaced base never), so the database
// holds one of their versions or none: VersionsAtMost bounds it instead.
func (h *hub) state() *HubState {
	st := &HubState{
		Versions:   maps.Clone(h.last),
		Compliance: map[string]map[string]ComplianceState{},
		Events:     map[string]map[string][]string{},
		Restarts:   h.restarts,
	}
	for typ, base := range h.bases {
		if v := st.Versions[typ]; h.lastSeq[base] > h.lastSeq[typ] {
			delete(st.Versions, typ)
			if st.VersionsAtMost == nil {
				st.VersionsAtMost = make(map[string]bundle.Version)
			}
			st.VersionsAtMost[typ] = v
		}
	}
	for _, s := range h.sources {
		s.record(st)
	}
	if h.gh != nil {
		h.gh.record(st)
	}
	return st
}
