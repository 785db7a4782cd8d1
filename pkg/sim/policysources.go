package sim

import (
	"cmp"
	"encoding/json"
	"fmt"
	"maps"
	"math/rand/v2"
	"slices"
	"strconv"
	"strings"
)

// newPolicySources returns the sources of the policy bundle types of one
// hub, in the order the hub must step them, sharing one model.
func newPolicySources(rng *rand.Rand, hub string, clusters *managedClusters, cfg Config) []source {
	m := newPolicyModel(rng, hub, clusters, cfg)
	return []source{
		&clustersPolicies{m},
		&complianceReports{m},
		&complianceDeltas{m},
		&policyEvents{m},
	}
}

// encodeObjects returns {"objects":[...]} with objs, never null.
func encodeObjects[T any](typ string, objs []T) ([]byte, error) {
	if objs == nil {
		objs = []T{}
	}
	data, err := json.Marshal(struct {
		Objects []T `json:"objects"`
	}{objs})
	if err != nil {
		return nil, fmt.Errorf("encode %s: %w", typ, err)
	}
	return data, nil
}

// sortedPolicies returns the hub's policies sorted by id, the order the
// bundles list them in.
func (m *policyModel) sortedPolicies() []*policy {
	return slices.SortedFunc(slices.Values(m.policies), func(a, b *policy) int { return strings.Compare(a.id, b.id) })
}

// nonNil returns s, or an empty slice for nil, so that lists encode as
// [] rather than null.
func nonNil(s []string) []string {
	if s == nil {
		return []string{}
	}
	return s
}

// clustersPolicies sends the hub's placement: in its first round, after a
// restart, and whenever it changed, including because clusters came or
// went in the snapshot the hub sent just before. The placement therefore
// never names a cluster the last snapshot does not have.
type clustersPolicies struct{ m *policyModel }

type placementObject struct {
	PolicyID          string   `json:"policyId"`
	Clusters          []string `json:"clusters"`
	RemediationAction string   `json:"remediationAction"`
	ResourceVersion   string   `json:"resourceVersion"`
}

func (s *clustersPolicies) step(rng *rand.Rand, t tick) (draft, bool, error) {
	m := s.m
	changed := m.evolvePlacement(rng, t.round)
	m.placed = changed || t.fresh()
	if !m.placed {
		return draft{}, false, nil
	}
	d, err := s.full()
	return d, err == nil, err
}

func (s *clustersPolicies) fullType() string { return TypeClustersPolicies }

// full is the placement as it is.
func (s *clustersPolicies) full() (draft, error) {
	m := s.m
	policies := m.sortedPolicies()
	objs := make([]placementObject, len(policies))
	for i, p := range policies {
		objs[i] = placementObject{
			PolicyID:          p.id,
			Clusters:          nonNil(p.clusters),
			RemediationAction: p.remediation,
			ResourceVersion:   strconv.Itoa(p.version),
		}
	}
	data, err := encodeObjects(TypeClustersPolicies, objs)
	// The dependency on managedclusters is implicit: no
	// extdependencyversion.
	return draft{typ: TypeClustersPolicies, data: data}, err
}

func (s *clustersPolicies) record(*HubState) {}

// complianceReports sends complete compliance reports: right after every
// clusterspolicies bundle (so each placement is followed by a report built
// on it, and pairs never stay 'unknown' only because they were placed),
// and every Config.ComplianceEvery rounds. Each lists every policy of the
// hub, even one placed nowhere, but for the hub-of-hubs agent (AgentHoH),
// which leaves out the policies whose clusters all comply; either way the
// last report decides the state of every row. Its dependency is the last clusterspolicies version sent.
type complianceReports struct{ m *policyModel }

type complianceObject struct {
	PolicyID        string   `json:"policyId"`
	NonCompliant    []string `json:"nonCompliantClusters"`
	Unknown         []string `json:"unknownComplianceClusters"`
	ResourceVersion string   `json:"resourceVersion"`
}

func (s *complianceReports) step(rng *rand.Rand, t tick) (draft, bool, error) {
	m := s.m
	m.evolveCompliance(rng)
	m.sinceReport++
	m.reported = m.placed || t.fresh() || (m.every > 0 && m.sinceReport >= m.every)
	if !m.reported {
		return draft{}, false, nil
	}
	d, err := s.full()
	return d, err == nil, err
}

func (s *complianceReports) fullType() string { return TypeCompliance }

// full is a complete report of the compliance as it is. Deltas after it
// are on it: the changes reported so far are all in it.
func (s *complianceReports) full() (draft, error) {
	m := s.m
	m.sinceReport = 0
	clear(m.changed)
	policies := m.sortedPolicies()
	objs := make([]complianceObject, 0, len(policies))
	for _, p := range policies {
		o := complianceObject{PolicyID: p.id, NonCompliant: []string{}, Unknown: []string{}, ResourceVersion: strconv.Itoa(p.version)}
		for _, c := range p.clusters { // sorted
			switch p.state[c] {
			case NonCompliant:
				o.NonCompliant = append(o.NonCompliant, c)
			case UnknownCompliance:
				o.Unknown = append(o.Unknown, c)
			}
		}
		if m.omitCompliant && len(o.NonCompliant) == 0 && len(o.Unknown) == 0 {
			continue // "don't send in the bundle a policy where all clusters are compliant"
		}
		objs = append(objs, o)
	}
	data, err := encodeObjects(TypeCompliance, objs)
	return draft{typ: TypeCompliance, data: data, dependsOn: TypeClustersPolicies}, err
}

func (s *complianceReports) record(st *HubState) { st.Compliance = s.m.compliance() }

// complianceDeltas sends, in the rounds without a report, the pairs whose
// compliance changed since the last report or delta, with their new
// state. Its base is the last report sent: deltas never cross a report.
type complianceDeltas struct{ m *policyModel }

type deltaObject struct {
	PolicyID     string   `json:"policyId"`
	Compliant    []string `json:"compliantClusters"`
	NonCompliant []string `json:"nonCompliantClusters"`
	Unknown      []string `json:"unknownComplianceClusters"`
}

func (s *complianceDeltas) step(*rand.Rand, tick) (draft, bool, error) {
	m := s.m
	if m.reported || len(m.changed) == 0 {
		return draft{}, false, nil
	}
	// Sorted by policy id and cluster: the map's order must not show.
	changes := slices.SortedFunc(maps.Keys(m.changed), func(a, b pair) int {
		return cmp.Or(strings.Compare(a.policy.id, b.policy.id), strings.Compare(a.cluster, b.cluster))
	})
	clear(m.changed)
	var objs []deltaObject
	for _, pr := range changes {
		if !m.isPlaced(pr) {
			continue
		}
		if len(objs) == 0 || objs[len(objs)-1].PolicyID != pr.policy.id {
			objs = append(objs, deltaObject{PolicyID: pr.policy.id, Compliant: []string{}, NonCompliant: []string{}, Unknown: []string{}})
		}
		o := &objs[len(objs)-1]
		switch pr.policy.state[pr.cluster] {
		case Compliant:
			o.Compliant = append(o.Compliant, pr.cluster)
		case NonCompliant:
			o.NonCompliant = append(o.NonCompliant, pr.cluster)
		case UnknownCompliance:
			o.Unknown = append(o.Unknown, pr.cluster)
		}
	}
	if len(objs) == 0 {
		return draft{}, false, nil
	}
	data, err := encodeObjects(TypeComplianceDelta, objs)
	return draft{typ: TypeComplianceDelta, data: data, dependsOn: TypeCompliance, delta: true}, err == nil, err
}

func (s *complianceDeltas) record(*HubState) {}

// policyEvents sends Config.EventsPerRound events a round, each about a
// placed pair, with a name unique over the hub's life (a number that
// survives restarts), so that every event is a row of its own.
//
// The events carry no time: the bridge then stores the time the bundle was
// produced. An event time in the data would differ between two runs of one
// seed, which must send the same data.
type policyEvents struct{ m *policyModel }

type eventObject struct {
	PolicyID    string `json:"policyId"`
	ClusterName string `json:"clusterName"`
	EventName   string `json:"eventName"`
	Reason      string `json:"reason"`
	Message     string `json:"message"`
}

// EventName is the name of the seq-th policy event about policy of a run
// that started at incarnation run: "<policy>.<run>.<seq, 8 hex digits>".
// Events are a stream that the database keeps, so a database simulated
// into before holds the events of earlier runs; the run in the name tells
// them from this run's (EventRun, Expected.FirstIncarnation).
func EventName(policy string, run uint64, seq int) string {
	return fmt.Sprintf("%s.%d.%08x", policy, run, seq)
}

// EventRun returns the incarnation the run that named the event started
// at, and false for a name EventName did not make.
func EventRun(name string) (uint64, bool) {
	rest, seq, ok := cutLast(name, '.')
	if !ok || len(seq) != 8 {
		return 0, false
	}
	if _, err := strconv.ParseUint(seq, 16, 64); err != nil {
		return 0, false
	}
	_, run, ok := cutLast(rest, '.')
	if !ok {
		return 0, false
	}
	n, err := strconv.ParseUint(run, 10, 64)
	return n, err == nil
}

// cutLast slices s around the last sep.
func cutLast(s string, sep byte) (before, after string, ok bool) {
	i := strings.LastIndexByte(s, sep)
	if i < 0 {
		return s, "", false
	}
	return s[:i], s[i+1:], true
}

// eventMessages are the messages of events about a cluster in each state,
// after the policy-framework's.
var eventMessages = map[ComplianceState]string{
	Compliant:         "Compliant; notification - policy is satisfied",
	NonCompliant:      "NonCompliant; violation - policy is not satisfied",
	UnknownCompliance: "Pending; the cluster has not reported its status yet",
}

func (s *policyEvents) step(rng *rand.Rand, _ tick) (draft, bool, error) {
	m := s.m
	total := m.pairs()
	if m.events == 0 || total == 0 {
		return draft{}, false, nil
	}
	objs := make([]eventObject, m.events)
	for i := range objs {
		pr := m.randomPair(rng, total)
		m.eventSeq++
		name := EventName(pr.policy.name, m.run, m.eventSeq)
		objs[i] = eventObject{
			PolicyID:    pr.policy.id,
			ClusterName: pr.cluster,
			EventName:   name,
			Reason:      "PolicyStatusSync",
			Message:     eventMessages[pr.policy.state[pr.cluster]],
		}
		byCluster := m.sentEvents[pr.policy.id]
		if byCluster == nil {
			byCluster = make(map[string][]string)
			m.sentEvents[pr.policy.id] = byCluster
		}
		byCluster[pr.cluster] = append(byCluster[pr.cluster], name)
	}
	data, err := encodeObjects(TypePolicyEvents, objs)
	return draft{typ: TypePolicyEvents, data: data}, err == nil, err
}

func (s *policyEvents) record(st *HubState) {
	st.Events = make(map[string]map[string][]string, len(s.m.sentEvents))
	for id, byCluster := range s.m.sentEvents {
		out := make(map[string][]string, len(byCluster))
		for c, names := range byCluster {
			out[c] = slices.Sorted(slices.Values(names))
		}
		st.Events[id] = out
	}
}
