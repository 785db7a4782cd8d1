package sim

import (
	"bytes"
	"maps"
	"math/rand/v2"
	"slices"
)

// Bundle types the simulator sends, in the order a hub sends them in a
// round.
const (
	TypeHeartbeat        = "heartbeat"
	TypeManagedClusters  = "managedclusters"
	TypeClustersPolicies = "clusterspolicies"
	TypeCompliance       = "compliance"
	TypeComplianceDelta  = "compliancedelta"
	TypePolicyEvents     = "policyevents"
)

// draft is one bundle a source produces in a round, before its hub stamps
// it with a version.
type draft struct {
	typ  string
	data []byte
	// dependsOn names the type whose last version sent becomes the
	// bundle's Dependency; "" for types that name none.
	dependsOn string
	// delta marks a delta on the last dependsOn bundle sent: the database
	// applies it only on exactly that base (see hub.state).
	delta bool
}

// tick is what a source learns about the round it steps into.
type tick struct {
	round int // 1-based
	// restarted says the agent restarted before this round.
	restarted bool
}

// fresh reports whether the agent starts from scratch in this round (its
// first, or the first after a restart): it then sends its full state,
// every complete bundle type, before any delta.
func (t tick) fresh() bool { return t.round == 1 || t.restarted }

// source simulates one bundle type of one hub. A hub steps its sources in
// a fixed order, with the hub's random source, so that a run is
// reproducible. Sources of related types (the policy ones) share a model
// and rely on that order.
type source interface {
	// step advances the simulated state to the round and returns the
	// bundle the hub sends in it, if any.
	step(rng *rand.Rand, t tick) (d draft, ok bool, err error)
	// record adds what the database must hold of this type, once the
	// bridge has written the last bundle sent, to st.
	record(st *HubState)
}

// fuller is a source of a complete type that can send its current state
// again, unchanged, as an agent does when asked for a resync.
type fuller interface {
	fullType() string
	full() (draft, error)
}

// heartbeats sends a heartbeat every round.
type heartbeats struct {
	sent bool
}

func (s *heartbeats) step(*rand.Rand, tick) (draft, bool, error) {
	s.sent = true
	return draft{typ: TypeHeartbeat, data: []byte(`{}`)}, true, nil
}

func (s *heartbeats) record(st *HubState) { st.Heartbeat = s.sent }

// managedClusters sends a snapshot of the hub's managed clusters every
// round. Before each one (but the first), some clusters change labels, and
// a cluster may be removed and one added; their number stays within about
// 10% of the configured one.
type managedClusters struct {
	hub      string
	target   int
	change   float64
	churn    float64
	clusters []*cluster // in the order they were added
	next     int        // number of the last cluster added
}

func newManagedClusters(rng *rand.Rand, hub string, cfg Config) *managedClusters {
	s := &managedClusters{hub: hub, target: cfg.Clusters, change: cfg.ChangeProbability, churn: cfg.ChurnProbability}
	for range cfg.Clusters {
		s.add(rng, 1)
	}
	return s
}

func (s *managedClusters) add(rng *rand.Rand, round int) {
	s.next++
	s.clusters = append(s.clusters, newCluster(rng, s.hub, s.next, round))
}

func (s *managedClusters) step(rng *rand.Rand, t tick) (draft, bool, error) {
	if t.round > 1 {
		s.evolve(rng, t.round)
	}
	d, err := s.full()
	return d, err == nil, err
}

func (s *managedClusters) fullType() string { return TypeManagedClusters }

// full is the snapshot of the clusters as they are.
func (s *managedClusters) full() (draft, error) {
	var buf bytes.Buffer
	buf.WriteString(`{"objects":[`)
	for i, c := range s.clusters {
		raw, err := c.object()
		if err != nil {
			return draft{}, err
		}
		if i > 0 {
			buf.WriteByte(',')
		}
		buf.Write(raw)
	}
	buf.WriteString(`]}`)
	return draft{typ: TypeManagedClusters, data: buf.Bytes()}, nil
}

// evolve applies one round of changes.
func (s *managedClusters) evolve(rng *rand.Rand, round int) {
	for _, c := range s.clusters {
		if rng.Float64() < s.change {
			c.touch(round)
		}
	}
	if s.target == 0 {
		return // a hub without clusters stays so
	}
	slack := max(1, s.target/10)
	if len(s.clusters) > s.target-slack && rng.Float64() < s.churn {
		i := rng.IntN(len(s.clusters))
		s.clusters = slices.Delete(s.clusters, i, i+1)
	}
	if len(s.clusters) < s.target-slack || (len(s.clusters) < s.target+slack && rng.Float64() < s.churn) {
		s.add(rng, round)
	}
}

func (s *managedClusters) record(st *HubState) {
	st.ManagedClusters = make(map[string]Cluster, len(s.clusters))
	for _, c := range s.clusters {
		st.ManagedClusters[c.name] = Cluster{UID: c.uid, Labels: maps.Clone(c.labels)}
	}
}
