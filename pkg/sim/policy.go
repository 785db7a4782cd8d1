package sim

import (
	"fmt"
	"math/rand/v2"
	"slices"
)

// ComplianceState is how a cluster complies with a policy, spelled as
// stb.compliance stores it.
type ComplianceState string

// The compliance states.
const (
	Compliant         ComplianceState = "compliant"
	NonCompliant      ComplianceState = "non_compliant"
	UnknownCompliance ComplianceState = "unknown"
	// PendingCompliance is the global-hub agent's fourth state: the policy
	// has not been evaluated on the cluster yet. Only AgentGlobalHub
	// reports it.
	PendingCompliance ComplianceState = "pending"
)

// complianceStates lists the states the hub-of-hubs and STB agents report,
// for random picks; ghComplianceStates those of the global-hub agent.
var (
	complianceStates   = []ComplianceState{Compliant, NonCompliant, UnknownCompliance}
	ghComplianceStates = []ComplianceState{Compliant, NonCompliant, UnknownCompliance, PendingCompliance}
)

// remediationActions are the values of a policy's remediationAction.
var remediationActions = [...]string{"inform", "enforce"}

const (
	// placeShare is the chance that a policy is placed on a given cluster:
	// each policy applies to about half of its hub's clusters.
	placeShare = 0.5
	// maxChangesPerRound bounds the number of (policy, cluster) pairs whose
	// compliance changes in a round; at least one does while there are
	// pairs, so every round without a report sends a delta.
	maxChangesPerRound = 3
)

// policy is one simulated policy of a hub: where it is placed and how each
// of those clusters complies, as the hub sees it.
type policy struct {
	id          string // policyId: a UUID
	name        string // starts the names of its events
	remediation string
	// version is the round its placement last changed: its
	// resourceVersion.
	version int
	// clusters are the names of the clusters it is placed on, sorted;
	// state holds the compliance of each of them.
	clusters []string
	state    map[string]ComplianceState
}

// place puts the policy on cluster, whose compliance starts as initial
// draws it.
func (p *policy) place(rng *rand.Rand, cluster string, initial func(*rand.Rand) ComplianceState) {
	i, found := slices.BinarySearch(p.clusters, cluster)
	if found {
		return
	}
	p.clusters = slices.Insert(p.clusters, i, cluster)
	p.state[cluster] = initial(rng)
}

// unplace takes the policy off cluster; it reports whether it was on it.
func (p *policy) unplace(cluster string) bool {
	i, found := slices.BinarySearch(p.clusters, cluster)
	if !found {
		return false
	}
	p.clusters = slices.Delete(p.clusters, i, i+1)
	delete(p.state, cluster)
	return true
}

// initialState is the compliance of a newly placed cluster as its first
// report says: mostly compliant. The global-hub agent reports some of the
// unknown ones as pending instead; the draws are the same either way.
func (m *policyModel) initialState(rng *rand.Rand) ComplianceState {
	switch r := rng.Float64(); {
	case r < 0.7:
		return Compliant
	case r < 0.9:
		return NonCompliant
	case r < 0.95 && len(m.states) > 3:
		return PendingCompliance
	}
	return UnknownCompliance
}

// pair names one placed (policy, cluster).
type pair struct {
	policy  *policy
	cluster string
}

// policyModel is the policy side of one hub: its policies, where they are
// placed and how the clusters comply, and what of it the hub has reported.
// The four policy sources share it and step it in the order the hub sends
// their bundles (clusterspolicies, compliance, compliancedelta,
// policyevents), each relying on the steps before it in the round.
//
// The hub's view of compliance is the truth its reports carry: a complete
// report sends all of it, a delta the pairs that changed since the last
// report or delta. Every change is sent in one or the other, so the view
// at the end is what the database must hold: the last report with the
// deltas after it.
type policyModel struct {
	hub      string
	clusters *managedClusters // the hub's snapshot source, stepped first
	target   int
	placeP   float64
	every    int // ComplianceEvery; 0: reports only after placements
	events   int // events per round
	// omitCompliant leaves fully compliant policies out of complete
	// reports (Config.Agent hoh).
	omitCompliant bool
	// states are the compliance states the agent reports.
	states []ComplianceState

	policies []*policy // in the order added
	next     int       // number of the last policy added
	// known holds the clusters of the last snapshot the placement follows.
	known map[string]bool

	// placed and reported say whether a clusterspolicies bundle and a
	// compliance report go out in this round; sinceReport counts the
	// rounds since the last report.
	placed, reported bool
	sinceReport      int
	// changed holds the pairs whose compliance changed since the last
	// report or delta; only pairs still placed go out in a delta.
	changed map[pair]bool

	eventSeq int // number of the last event, over the hub's life
	// run is the incarnation the run started at, which every event name
	// carries (EventName).
	run uint64
	// sentEvents maps policy id and cluster to the names of the events
	// sent about them.
	sentEvents map[string]map[string][]string
}

// newPolicyModel returns the model of a hub with cfg.Policies policies,
// each placed on a random half of the hub's clusters.
func newPolicyModel(rng *rand.Rand, hub string, clusters *managedClusters, cfg Config) *policyModel {
	m := &policyModel{
		hub:           hub,
		clusters:      clusters,
		target:        cfg.Policies,
		placeP:        cfg.PlacementProbability,
		every:         cfg.ComplianceEvery,
		events:        cfg.EventsPerRound,
		omitCompliant: cfg.Agent == AgentHoH,
		states:        complianceStates,
		known:         make(map[string]bool),
		changed:       make(map[pair]bool),
		sentEvents:    make(map[string]map[string][]string),
		run:           cfg.FirstIncarnation,
	}
	if cfg.Agent == AgentGlobalHub {
		m.states = ghComplianceStates
	}
	for _, c := range clusters.clusters {
		m.known[c.name] = true
	}
	for range cfg.Policies {
		m.addPolicy(rng, 1)
	}
	return m
}

// addPolicy adds a policy placed on a random half of the current clusters.
func (m *policyModel) addPolicy(rng *rand.Rand, round int) {
	m.next++
	p := &policy{
		id:          newUUID(rng),
		name:        fmt.Sprintf("policy-%03d", m.next),
		remediation: remediationActions[rng.IntN(len(remediationActions))],
		state:       make(map[string]ComplianceState),
	}
	m.replace(rng, p, round)
	m.policies = append(m.policies, p)
}

// replace places p on a new random half of the current clusters; the
// clusters it stays on keep their compliance.
func (m *policyModel) replace(rng *rand.Rand, p *policy, round int) {
	old := p.state
	p.clusters, p.state = p.clusters[:0], make(map[string]ComplianceState)
	for _, c := range m.clusters.clusters {
		if rng.Float64() >= placeShare {
			continue
		}
		p.clusters = append(p.clusters, c.name)
		if s, ok := old[c.name]; ok {
			p.state[c.name] = s
		} else {
			p.state[c.name] = m.initialState(rng)
		}
	}
	slices.Sort(p.clusters)
	p.version = round
}

// evolvePlacement brings the placement up to the snapshot the hub just
// sent and, at the placement probability, changes it by itself. It
// reports whether the placement changed.
func (m *policyModel) evolvePlacement(rng *rand.Rand, round int) bool {
	changed := m.followClusters(rng, round)
	if round > 1 && rng.Float64() < m.placeP {
		m.changePlacement(rng, round)
		changed = true
	}
	return changed
}

// followClusters takes the policies off the clusters the last snapshot no
// longer has and places each on a new cluster at placeShare, as placement
// rules matching on labels would. It reports whether a policy changed.
func (m *policyModel) followClusters(rng *rand.Rand, round int) bool {
	current := make(map[string]bool, len(m.clusters.clusters))
	changed := false
	for _, c := range m.clusters.clusters {
		current[c.name] = true
		if m.known[c.name] {
			continue
		}
		for _, p := range m.policies {
			if rng.Float64() < placeShare {
				p.place(rng, c.name, m.initialState)
				p.version, changed = round, true
			}
		}
	}
	for name := range m.known {
		if current[name] {
			continue
		}
		for _, p := range m.policies { // no random draws: map order is harmless
			if p.unplace(name) {
				p.version, changed = round, true
			}
		}
	}
	m.known = current
	return changed
}

// changePlacement adds a policy, removes one or places one on other
// clusters, keeping the number of policies within about 10% of the
// target.
func (m *policyModel) changePlacement(rng *rand.Rand, round int) {
	slack := max(1, m.target/10)
	switch r := rng.IntN(3); {
	case len(m.policies) == 0 || (r == 0 && len(m.policies) < m.target+slack):
		m.addPolicy(rng, round)
	case r == 1 && len(m.policies) > max(1, m.target-slack):
		i := rng.IntN(len(m.policies))
		m.policies = slices.Delete(m.policies, i, i+1)
	default:
		m.replace(rng, m.policies[rng.IntN(len(m.policies))], round)
	}
}

// pairs returns the number of placed (policy, cluster) pairs.
func (m *policyModel) pairs() int {
	n := 0
	for _, p := range m.policies {
		n += len(p.clusters)
	}
	return n
}

// randomPair returns a placed pair, each with the same chance; there must
// be one.
func (m *policyModel) randomPair(rng *rand.Rand, total int) pair {
	i := rng.IntN(total)
	for _, p := range m.policies {
		if i < len(p.clusters) {
			return pair{p, p.clusters[i]}
		}
		i -= len(p.clusters)
	}
	panic("sim: randomPair beyond the placed pairs")
}

// evolveCompliance changes the compliance of one to maxChangesPerRound
// placed pairs, each to another state, and notes them for the next delta.
func (m *policyModel) evolveCompliance(rng *rand.Rand) {
	total := m.pairs()
	if total == 0 {
		return
	}
	for range 1 + rng.IntN(maxChangesPerRound) {
		pr := m.randomPair(rng, total)
		// One of the other states, each with the same chance.
		n := len(m.states)
		i := slices.Index(m.states, pr.policy.state[pr.cluster])
		pr.policy.state[pr.cluster] = m.states[(i+1+rng.IntN(n-1))%n]
		m.changed[pr] = true
	}
}

// isPlaced reports whether the pair is still placed: its policy is one of
// the hub's and on its cluster.
func (m *policyModel) isPlaced(pr pair) bool {
	if _, ok := pr.policy.state[pr.cluster]; !ok {
		return false
	}
	return slices.Contains(m.policies, pr.policy)
}

// compliance returns the hub's view of compliance per policy id and
// cluster: the rows stb.compliance must hold. Policies placed on no
// cluster have no rows and are left out.
func (m *policyModel) compliance() map[string]map[string]ComplianceState {
	out := make(map[string]map[string]ComplianceState, len(m.policies))
	for _, p := range m.policies {
		if len(p.clusters) == 0 {
			continue
		}
		states := make(map[string]ComplianceState, len(p.clusters))
		for _, c := range p.clusters {
			states[c] = p.state[c]
		}
		out[p.id] = states
	}
	return out
}

// placeAll places every policy on every current cluster, NonCompliant, or,
// without on, on none (GlobalHubConfig.Rotate).
func (m *policyModel) placeAll(on bool) {
	for _, p := range m.policies {
		p.clusters, p.state = p.clusters[:0], make(map[string]ComplianceState)
		if !on {
			continue
		}
		for _, c := range m.clusters.clusters {
			p.clusters = append(p.clusters, c.name)
			p.state[c.name] = NonCompliant
		}
		slices.Sort(p.clusters)
	}
}

// rotate turns every placed pair to the other of Compliant and
// NonCompliant and notes it for the next delta (GlobalHubConfig.Rotate).
func (m *policyModel) rotate() {
	for _, p := range m.policies {
		for _, c := range p.clusters {
			if p.state[c] == NonCompliant {
				p.state[c] = Compliant
			} else {
				p.state[c] = NonCompliant
			}
			m.changed[pair{p, c}] = true
		}
	}
}
