package sim

import (
	"fmt"
	"hash/fnv"
	"math/rand/v2"
	"slices"
	"time"
)

// Chances per round of the events the hub's model makes besides the
// replicated-policy ones (Config.EventsPerRound).
const (
	ghClusterEventProbability    = 0.3
	ghRootPolicyEventProbability = 0.5
	ghCGUEventProbability        = 0.15
)

// ghPolicyMessages are the messages of policy status events in each state;
// the agent takes the compliance of a replicated-policy event from the
// word before ";".
var ghPolicyMessages = map[ComplianceState]string{
	Compliant:         "Compliant; notification - policy is satisfied",
	NonCompliant:      "NonCompliant; violation - policy is not satisfied",
	UnknownCompliance: "Unknown; the cluster has not reported its status",
	PendingCompliance: "Pending; the policy has not been evaluated on the cluster yet",
}

// ghComplianceWords spell the states as the policy framework does.
var ghComplianceWords = map[ComplianceState]string{
	Compliant: "Compliant", NonCompliant: "NonCompliant", UnknownCompliance: "Unknown", PendingCompliance: "Pending",
}

// ghEventModel makes the Kubernetes events the agent's event emitters
// see, and keeps those that must be stored: every one, once, whether sent
// in a batch, alone, again by a restarted agent, or copied.
type ghEventModel struct {
	hub        string
	replicated int // per round; 0: no events of any type
	seq        int // number of the last event, over the hub's life
	known      map[string]bool
	// The stored events: clusterEvents by cluster id and name, root by
	// policy id (and cluster ""), replicatedEvents by policy id and
	// cluster.
	clusterEvents, rootEvents, replicatedEvents map[string]map[string][]string
}

func newGHEventModel(hub string, replicated int) ghEventModel {
	return ghEventModel{
		hub: hub, replicated: replicated, known: map[string]bool{},
		clusterEvents:    map[string]map[string][]string{},
		rootEvents:       map[string]map[string][]string{},
		replicatedEvents: map[string]map[string][]string{},
	}
}

// next returns the name suffix and creation time of a new event. The
// suffix is unique across hubs, as Kubernetes' are (a name is the object's
// and a suffix its API server makes from the time): the global hub's event
// tables identify an event by (event_name, count, created_at) alone, with
// no hub (operator/pkg/controllers/storage/database/2.tables.sql), so two
// hubs that named their events alike would share rows.
func (m *ghEventModel) next() (string, string) {
	m.seq++
	h := fnv.New32a()
	h.Write([]byte(m.hub))
	return fmt.Sprintf("%08x%08x", h.Sum32(), m.seq), ghEventEpoch.Add(time.Duration(m.seq) * time.Second).Format(time.RFC3339)
}

func note(into map[string]map[string][]string, a, b, name string) {
	if into[a] == nil {
		into[a] = map[string][]string{}
	}
	into[a][b] = append(into[a][b], name)
}

// make returns the events of the round by type, encoded.
func (m *ghEventModel) make(rng *rand.Rand, a *ghAgent) (map[string][][]byte, error) {
	if m.replicated == 0 {
		return nil, nil
	}
	var evs []struct {
		typ string
		ev  any
	}
	add := func(typ string, ev any) {
		evs = append(evs, struct {
			typ string
			ev  any
		}{typ, ev})
	}
	clusterEvent := func(c *cluster, reason, message, typ string) {
		suffix, at := m.next()
		name := c.name + "." + suffix
		add(TypeGHClusterEvent, ghClusterEvent{
			EventNamespace: c.name, EventName: name, ClusterName: c.name, ClusterID: c.uid, LeafHubName: m.hub,
			Message: message, Reason: reason, ReportingController: "registration-controller",
			ReportingInstance: "registration-controller-" + m.hub, EventType: typ, CreatedAt: at,
		})
		note(m.clusterEvents, c.uid, c.name, name)
	}
	// event.managedcluster: a cluster that joined, and now and then news
	// of another; only about clusters that are there (the agent drops the
	// events of a cluster it cannot get).
	current := map[string]bool{}
	for _, c := range a.clusters.clusters {
		current[c.name] = true
		if !m.known[c.name] {
			clusterEvent(c, "ManagedClusterJoined", "The managed cluster "+c.name+" joined the hub", "Normal")
		}
	}
	m.known = current
	if cs := a.clusters.clusters; len(cs) > 0 && rng.Float64() < ghClusterEventProbability {
		clusterEvent(cs[rng.IntN(len(cs))], "AvailableUnknown", "The managed cluster stopped updating its lease", "Warning")
	}
	if p := a.policies; p != nil {
		total := p.pairs()
		// event.localrootpolicy: a root policy's status changed on a
		// cluster; no cluster fields in the event.
		if total > 0 && rng.Float64() < ghRootPolicyEventProbability {
			pr := p.randomPair(rng, total)
			suffix, at := m.next()
			name := pr.policy.name + "." + suffix
			state := pr.policy.state[pr.cluster]
			add(TypeGHRootPolicyEvent, ghRootPolicyEvent{
				ghBaseEvent: ghBaseEvent{
					EventName: name, EventNamespace: ghPolicyNamespace,
					Message: fmt.Sprintf("Policy %s.%s status was updated to %s in cluster namespace %s",
						ghPolicyNamespace, pr.policy.name, ghComplianceWords[state], pr.cluster),
					Reason: "PolicyStatusSync", Count: int32(1 + rng.IntN(3)),
					Source: ghEventSource{Component: "policy-propagator"}, CreatedAt: at,
				},
				PolicyID: pr.policy.id, Compliance: ghComplianceWords[state],
			})
			note(m.rootEvents, pr.policy.id, "", name)
		}
		// event.localreplicatedpolicy: the status history of replicated
		// policies.
		uids := make(map[string]string, len(a.clusters.clusters))
		for _, c := range a.clusters.clusters {
			uids[c.name] = c.uid
		}
		replicated := func(pr pair, state ComplianceState) {
			suffix, at := m.next()
			name := ghPolicyNamespace + "." + pr.policy.name + "." + suffix
			add(TypeGHReplicatedEvent, ghReplicatedPolicyEvent{
				ghBaseEvent: ghBaseEvent{
					EventName: name, EventNamespace: pr.cluster, Message: ghPolicyMessages[state],
					Reason: "PolicyStatusSync", Count: 1,
					Source: ghEventSource{Component: "policy-status-history-sync"}, CreatedAt: at,
				},
				PolicyID: pr.policy.id, ClusterID: uids[pr.cluster], ClusterName: pr.cluster,
				Compliance: ghComplianceWords[state],
			})
			note(m.replicatedEvents, pr.policy.id, pr.cluster, name)
		}
		if a.cfg.Rotate {
			// One per pair that changed; in the first round each pair's
			// evaluation: Pending, then its state.
			first := len(p.changed) == 0 && !a.rotated
			for _, pol := range p.policies {
				for _, c := range pol.clusters {
					pr := pair{pol, c}
					if first {
						replicated(pr, PendingCompliance)
					} else if !p.changed[pr] {
						continue
					}
					replicated(pr, pol.state[c])
				}
			}
			a.rotated = true
		}
		for range m.replicated {
			if total == 0 || a.cfg.Rotate {
				break
			}
			pr := p.randomPair(rng, total)
			replicated(pr, pr.policy.state[pr.cluster])
		}
	}
	// event.clustergroupupgrade: sent, never stored.
	if rng.Float64() < ghCGUEventProbability {
		suffix, at := m.next()
		cgu := fmt.Sprintf("cgu-%s", suffix[len(suffix)-4:])
		add(TypeGHCGUEvent, ghCGUEvent{
			EventNamespace: "ztp-install", EventName: cgu + "." + suffix, CGUName: cgu, LeafHubName: m.hub,
			Message: "ClusterGroupUpgrade " + cgu + " started remediating policies", Reason: "CguStarted",
			ReportingController: "cluster-group-upgrades-controller", EventType: "Normal", CreatedAt: at,
		})
	}
	out := make(map[string][][]byte, len(ghEventTypes))
	for _, e := range evs {
		data, err := encodeEvent(e.ev)
		if err != nil {
			return nil, err
		}
		out[e.typ] = append(out[e.typ], data)
	}
	return out, nil
}

// sendEvents is one tick of the four event emitters: a restarted agent
// first sends again the events of the round before (its emitters' first
// resync, with an empty time filter), then each event seen is an Update,
// and the tick sends them.
func (a *ghAgent) sendEvents(made map[string][][]byte) {
	r := a.run
	for _, typ := range ghEventTypes {
		em := r.events[typ]
		if !r.started && a.runs > 1 {
			em.resync(a.lastEvents[typ])
		}
		for _, ev := range made[typ] {
			em.update(ev)
		}
		em.send()
		for _, s := range em.take() {
			if em.single {
				a.stats.SingleEvents++
			}
			a.send(ghEvent{typ: typ, version: s.version, sendMode: em.mode(), data: s.data})
		}
	}
}

// record adds the events that must be stored to st, each list sorted.
func (m *ghEventModel) record(st *HubState) {
	sorted := func(in map[string]map[string][]string) map[string]map[string][]string {
		out := make(map[string]map[string][]string, len(in))
		for a, byB := range in {
			o := make(map[string][]string, len(byB))
			for b, names := range byB {
				o[b] = slices.Sorted(slices.Values(names))
			}
			out[a] = o
		}
		return out
	}
	st.ManagedClusterEvents = sorted(m.clusterEvents)
	st.LocalRootPolicyEvents = sorted(m.rootEvents)
	st.LocalPolicyEvents = sorted(m.replicatedEvents)
}
