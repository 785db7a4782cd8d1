package sim

import (
	"encoding/json"
	"fmt"
	"maps"
	"math/rand/v2"
	"slices"
	"time"

	"github.com/stbridge/stb/pkg/bundle"
)

// The global-hub agent (Config.Agent AgentGlobalHub) simulates what the
// multicluster global-hub agent (stolostron/multicluster-global-hub) sends,
// shaped as that agent shapes it, leaving out what it leaves out:
//
//   - managedhub.heartbeat every round, data [];
//   - managedhub.info in the first round of a run: consoleURL, grafanaURL,
//     clusterId;
//   - managedcluster, a generic bundle: in the first round of a run a
//     resync of every cluster with resync_metadata naming them all, then
//     only what changed (create, update, delete; empty members left out);
//   - policy.localcompliance, every policy with its compliant,
//     nonCompliant, unknown and pending clusters (an empty list as null),
//     when the placement changed;
//   - policy.localcompletecompliance in the other rounds when compliance
//     changed or is due, naming the localcompliance it was computed on, and
//     leaving out every cluster that complies and every policy whose
//     clusters all do;
//   - event.localreplicatedpolicy, the policy events of the round.
//
// Each type counts its own versions, "<generation>.<value>": generation
// counts the events sent, value the changes; both start again at 0 when
// the agent restarts. Each event carries the time it was made, and each
// hub sends to its own topic (GlobalHubTopicPrefix + hub) unless
// Config.Topic names a shared one. Now and then an event sent a round or
// two before is sent again, as a producer retry or a replayed partition
// does: the bridge must not let it take anything back.

// Bundle types of the global-hub agent, as the bridge's global-hub profile
// names them (its type after the CloudEvents prefix, behind GHTypePrefix).
const (
	GHTypePrefix             = "globalhub."
	TypeGHHeartbeat          = GHTypePrefix + "managedhub.heartbeat"
	TypeGHHubInfo            = GHTypePrefix + "managedhub.info"
	TypeGHManagedCluster     = GHTypePrefix + "managedcluster"
	TypeGHLocalCompliance    = GHTypePrefix + "policy.localcompliance"
	TypeGHCompleteCompliance = GHTypePrefix + "policy.localcompletecompliance"
	TypeGHReplicatedEvent    = GHTypePrefix + "event.localreplicatedpolicy"

	// GlobalHubTopicPrefix starts the topic of each hub of the global-hub
	// agent ("gh-status.<hub>").
	GlobalHubTopicPrefix = "gh-status."
	// ClusterIDClaim is the cluster claim the agent identifies a managed
	// cluster by.
	ClusterIDClaim = "id.k8s.io"

	// ghLateCopyProbability is the chance per hub and round that an event
	// of the last rounds is sent again.
	ghLateCopyProbability = 0.1
	// ghRecent is the number of recent events a late copy is drawn from.
	ghRecent = 8
)

// ghEventEpoch is the creation time of a hub's first policy event; each
// later one is a second after the one before, so that a seed sends the
// same data every time.
var ghEventEpoch = time.Date(2026, 1, 1, 0, 0, 0, 0, time.UTC)

// ghAgent is the version side of one hub's global-hub agent.
type ghAgent struct {
	topic string // "" for a topic per hub
	types map[string]*ghCounter
	// last holds the agent's version of the last event sent per type, for
	// extdependencyversion.
	last map[string]bundle.Version
	// recent are the last events sent that a late copy may repeat: stream
	// and complete types whose copies the version fence must stop.
	recent []Message
	// made holds the time of the last event sent per type, over runs.
	made map[string]time.Time
}

// ghCounter is the agent's version of one type in the current run.
type ghCounter struct {
	generation, value uint64
	// start is the time of the run's first event of the type: the bridge
	// takes it as the run's incarnation.
	start time.Time
}

func newGHAgent(cfg Config) *ghAgent {
	return &ghAgent{topic: cfg.Topic, types: map[string]*ghCounter{}, last: map[string]bundle.Version{}, made: map[string]time.Time{}}
}

// restart starts a new run: every type counts from 0 again.
func (a *ghAgent) restart() {
	clear(a.types)
	clear(a.last)
}

// stamp turns d into the event the agent sends and records, in h, the
// version the bridge gives it: the run's start as incarnation, and the
// generation (the value for localcompliance, which the bridge orders by
// value, as localcompletecompliance names it by value).
func (a *ghAgent) stamp(h *hub, d draft) Message {
	c := a.types[d.typ]
	if c == nil {
		c = &ghCounter{}
		a.types[d.typ] = c
	}
	now := time.Now()
	if c.generation == 0 {
		c.start = now
	}
	c.value++
	agent := bundle.Version{Incarnation: c.generation, Generation: c.value} // "<generation>.<value>"
	topic := a.topic
	if topic == "" {
		topic = GlobalHubTopicPrefix + h.name
	}
	m := Message{
		Topic:   topic,
		Hub:     h.name,
		Type:    d.typ,
		ID:      fmt.Sprintf("%s/%s/%d/%s", h.name, d.typ, h.restarts, agent),
		Version: agent,
		Time:    now,
		Data:    d.data,
	}
	if d.dependsOn != "" {
		if dep, ok := a.last[d.dependsOn]; ok {
			m.Dependency = &dep
		}
	}
	ordinal := c.generation
	if d.typ == TypeGHLocalCompliance {
		ordinal = c.value
	}
	h.last[d.typ] = bundle.Version{Incarnation: uint64(c.start.UnixNano()), Generation: ordinal}
	a.last[d.typ] = agent
	a.made[d.typ] = now
	c.generation++
	if d.typ == TypeGHManagedCluster || d.typ == TypeGHLocalCompliance {
		a.recent = append(a.recent, m)
		if len(a.recent) > ghRecent {
			a.recent = slices.Delete(a.recent, 0, 1)
		}
	}
	return m
}

// record adds the bounds of the incarnations the bridge may store.
func (a *ghAgent) record(st *HubState) {
	st.IncarnationsUpTo = make(map[string]uint64, len(a.made))
	for typ, t := range a.made {
		st.IncarnationsUpTo[typ] = uint64(t.UnixNano())
	}
}

// lateCopy sometimes appends to msgs a copy of an event sent in an earlier
// round.
func (a *ghAgent) lateCopy(rng *rand.Rand, msgs []Message) []Message {
	earlier := len(a.recent)
	for _, m := range msgs {
		if slices.ContainsFunc(a.recent, func(r Message) bool { return r.ID == m.ID }) {
			earlier--
		}
	}
	if earlier <= 0 || rng.Float64() >= ghLateCopyProbability {
		return msgs
	}
	return append(msgs, a.recent[rng.IntN(earlier)])
}

// newGHSources returns the sources of a global-hub agent's hub, in the
// order it sends them in a round.
func newGHSources(rng *rand.Rand, hub string, clusters *managedClusters, cfg Config) []source {
	sources := []source{&ghHeartbeats{}, &ghHubInfo{hub: hub}, &ghClusters{mc: clusters}}
	if cfg.Policies > 0 {
		m := newPolicyModel(rng, hub, clusters, cfg)
		sources = append(sources, &ghLocalCompliance{m}, &ghCompleteCompliance{m}, &ghPolicyEvents{m: m})
	}
	return sources
}

// ghHeartbeats sends a heartbeat every round; its data is an empty array.
type ghHeartbeats struct{ sent bool }

func (s *ghHeartbeats) step(*rand.Rand, tick) (draft, bool, error) {
	s.sent = true
	return draft{typ: TypeGHHeartbeat, data: []byte(`[]`)}, true, nil
}

func (s *ghHeartbeats) record(st *HubState) { st.Heartbeat = s.sent }

// ghHubInfo sends what the hub says about itself when a run starts.
type ghHubInfo struct {
	hub       string
	clusterID string
}

func (s *ghHubInfo) step(rng *rand.Rand, t tick) (draft, bool, error) {
	if !t.fresh() {
		return draft{}, false, nil
	}
	if s.clusterID == "" {
		s.clusterID = newUUID(rng)
	}
	data, err := json.Marshal(map[string]string{
		"consoleURL": "https://console-openshift-console.apps." + s.hub + ".example.com",
		"grafanaURL": "https://grafana-open-cluster-management-observability.apps." + s.hub + ".example.com",
		"clusterId":  s.clusterID,
	})
	return draft{typ: TypeGHHubInfo, data: data}, err == nil, err
}

func (s *ghHubInfo) record(st *HubState) { st.HubClusterID = s.clusterID }

// ghClusters sends the hub's managed clusters as generic bundles: all of
// them as a resync when a run starts, then what changed since the last
// event. A round without a change sends nothing.
type ghClusters struct {
	mc *managedClusters
	// sent maps the clusters the agent last reported to their generation
	// label, which every change moves.
	sent map[string]string
}

// ghClusterObject is a ManagedCluster as the global-hub agent sends it:
// the cluster's id is its id.k8s.io cluster claim.
type ghClusterObject struct {
	APIVersion string `json:"apiVersion"`
	Kind       string `json:"kind"`
	Metadata   struct {
		Name   string            `json:"name"`
		Labels map[string]string `json:"labels"`
	} `json:"metadata"`
	Status struct {
		ClusterClaims []ghClaim `json:"clusterClaims"`
	} `json:"status"`
}

type ghClaim struct {
	Name  string `json:"name"`
	Value string `json:"value"`
}

// ghRef names an object in delete and resync_metadata.
type ghRef struct {
	ID   string `json:"id,omitempty"`
	Name string `json:"name,omitempty"`
}

type ghGeneric struct {
	Create         []ghClusterObject `json:"create,omitempty"`
	Update         []ghClusterObject `json:"update,omitempty"`
	Delete         []ghRef           `json:"delete,omitempty"`
	Resync         []ghClusterObject `json:"resync,omitempty"`
	ResyncMetadata []ghRef           `json:"resync_metadata,omitempty"`
}

func ghObject(c *cluster) ghClusterObject {
	var o ghClusterObject
	o.APIVersion = "cluster.open-cluster-management.io/v1"
	o.Kind = "ManagedCluster"
	o.Metadata.Name = c.name
	o.Metadata.Labels = c.labels
	o.Status.ClusterClaims = []ghClaim{{Name: ClusterIDClaim, Value: c.uid}}
	return o
}

func (s *ghClusters) step(rng *rand.Rand, t tick) (draft, bool, error) {
	if t.round > 1 {
		s.mc.evolve(rng, t.round)
	}
	var g ghGeneric
	current := make(map[string]string, len(s.mc.clusters))
	for _, c := range s.mc.clusters {
		gen := c.labels[LabelGeneration]
		current[c.name] = gen
		switch was, ok := s.sent[c.name]; {
		case t.fresh():
			g.Resync = append(g.Resync, ghObject(c))
			g.ResyncMetadata = append(g.ResyncMetadata, ghRef{ID: c.uid, Name: c.name})
		case !ok:
			g.Create = append(g.Create, ghObject(c))
		case was != gen:
			g.Update = append(g.Update, ghObject(c))
		}
	}
	if !t.fresh() {
		for _, name := range slices.Sorted(maps.Keys(s.sent)) {
			if _, ok := current[name]; !ok {
				g.Delete = append(g.Delete, ghRef{Name: name})
			}
		}
	}
	s.sent = current
	if len(g.Create)+len(g.Update)+len(g.Delete)+len(g.Resync) == 0 {
		return draft{}, false, nil
	}
	data, err := json.Marshal(g)
	if err != nil {
		return draft{}, false, fmt.Errorf("encode %s: %w", TypeGHManagedCluster, err)
	}
	return draft{typ: TypeGHManagedCluster, data: data}, true, nil
}

func (s *ghClusters) record(st *HubState) { s.mc.record(st) }

// ghComplianceObject is one policy of a compliance event; the agent
// marshals an empty list as null.
type ghComplianceObject struct {
	PolicyID     string   `json:"policyId"`
	NamespacedNS string   `json:"policy_namespaced_name"`
	Compliant    []string `json:"compliantClusters"`
	NonCompliant []string `json:"nonCompliantClusters"`
	Unknown      []string `json:"unknownComplianceClusters"`
	Pending      []string `json:"pendingComplianceClusters"`
}

func ghComplianceOf(p *policy) ghComplianceObject {
	o := ghComplianceObject{PolicyID: p.id, NamespacedNS: "default/" + p.name}
	for _, c := range p.clusters { // sorted
		switch p.state[c] {
		case Compliant:
			o.Compliant = append(o.Compliant, c)
		case NonCompliant:
			o.NonCompliant = append(o.NonCompliant, c)
		case UnknownCompliance:
			o.Unknown = append(o.Unknown, c)
		case PendingCompliance:
			o.Pending = append(o.Pending, c)
		}
	}
	return o
}

// ghLocalCompliance sends every policy with every placed cluster's state
// when a run starts and whenever the placement changed.
type ghLocalCompliance struct{ m *policyModel }

func (s *ghLocalCompliance) step(rng *rand.Rand, t tick) (draft, bool, error) {
	m := s.m
	changed := m.evolvePlacement(rng, t.round)
	m.evolveCompliance(rng)
	m.sinceReport++
	m.placed = changed || t.fresh()
	if !m.placed {
		return draft{}, false, nil
	}
	m.sinceReport = 0
	clear(m.changed)
	policies := m.sortedPolicies()
	objs := make([]ghComplianceObject, len(policies))
	for i, p := range policies {
		objs[i] = ghComplianceOf(p)
	}
	data, err := json.Marshal(objs)
	return draft{typ: TypeGHLocalCompliance, data: data}, err == nil, err
}

func (s *ghLocalCompliance) record(st *HubState) { st.Compliance = s.m.compliance() }

// ghCompleteCompliance sends, in the other rounds, the clusters that do
// not comply when compliance changed or a report is due, computed on the
// last localcompliance sent.
type ghCompleteCompliance struct{ m *policyModel }

func (s *ghCompleteCompliance) step(*rand.Rand, tick) (draft, bool, error) {
	m := s.m
	due := len(m.changed) > 0 || (m.every > 0 && m.sinceReport >= m.every)
	if m.placed || !due {
		return draft{}, false, nil
	}
	m.sinceReport = 0
	clear(m.changed)
	objs := []ghComplianceObject{}
	for _, p := range m.sortedPolicies() {
		o := ghComplianceOf(p)
		if len(o.NonCompliant)+len(o.Unknown)+len(o.Pending) == 0 {
			continue // every cluster complies: left out
		}
		o.Compliant = nil
		objs = append(objs, o)
	}
	data, err := json.Marshal(objs)
	return draft{typ: TypeGHCompleteCompliance, data: data, dependsOn: TypeGHLocalCompliance, delta: true}, err == nil, err
}

func (s *ghCompleteCompliance) record(*HubState) {}

// ghPolicyEvents sends Config.EventsPerRound policy events a round about
// placed pairs, as event.localreplicatedpolicy.
type ghPolicyEvents struct {
	m    *policyModel
	sent map[string]map[string][]string
}

type ghPolicyEvent struct {
	EventName      string `json:"eventName"`
	EventNamespace string `json:"eventNamespace"`
	Message        string `json:"message"`
	Reason         string `json:"reason"`
	Count          int    `json:"count"`
	CreatedAt      string `json:"createdAt"`
	PolicyID       string `json:"policyId"`
	ClusterID      string `json:"clusterId"`
	ClusterName    string `json:"clusterName"`
	Compliance     string `json:"compliance"`
}

// ghComplianceWords spells the states as the events of the policy
// framework do.
var ghComplianceWords = map[ComplianceState]string{
	Compliant: "Compliant", NonCompliant: "NonCompliant", UnknownCompliance: "Unknown", PendingCompliance: "Pending",
}

func (s *ghPolicyEvents) step(rng *rand.Rand, _ tick) (draft, bool, error) {
	m := s.m
	total := m.pairs()
	if m.events == 0 || total == 0 {
		return draft{}, false, nil
	}
	if s.sent == nil {
		s.sent = map[string]map[string][]string{}
	}
	uids := make(map[string]string, len(m.clusters.clusters))
	for _, c := range m.clusters.clusters {
		uids[c.name] = c.uid
	}
	events := make([]ghPolicyEvent, m.events)
	for i := range events {
		pr := m.randomPair(rng, total)
		m.eventSeq++
		state := pr.policy.state[pr.cluster]
		events[i] = ghPolicyEvent{
			EventName:      fmt.Sprintf("default.%s.%08x", pr.policy.name, m.eventSeq),
			EventNamespace: pr.cluster,
			Message:        eventMessages[state],
			Reason:         "PolicyStatusSync",
			Count:          1,
			CreatedAt:      ghEventEpoch.Add(time.Duration(m.eventSeq) * time.Second).Format(time.RFC3339),
			PolicyID:       pr.policy.id,
			ClusterID:      uids[pr.cluster],
			ClusterName:    pr.cluster,
			Compliance:     ghComplianceWords[state],
		}
		byCluster := s.sent[pr.policy.id]
		if byCluster == nil {
			byCluster = map[string][]string{}
			s.sent[pr.policy.id] = byCluster
		}
		byCluster[pr.cluster] = append(byCluster[pr.cluster], events[i].EventName)
	}
	data, err := json.Marshal(events)
	return draft{typ: TypeGHReplicatedEvent, data: data}, err == nil, err
}

func (s *ghPolicyEvents) record(st *HubState) {
	st.LocalPolicyEvents = make(map[string]map[string][]string, len(s.sent))
	for id, byCluster := range s.sent {
		out := make(map[string][]string, len(byCluster))
		for c, names := range byCluster {
			out[c] = slices.Sorted(slices.Values(names))
		}
		st.LocalPolicyEvents[id] = out
	}
}
