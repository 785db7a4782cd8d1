package sim

import (
	"encoding/json"
	"maps"
	"reflect"
	"slices"
	"testing"
	"time"

	"github.com/stbridge/stb/pkg/bundle"
)

// refDB is a reference model of the database the bridge writes: the
// semantics of docs/design.md (wire formats, versions, conflation) and of the dbsyncers handlers, applied to
// messages one at a time, in the order given, without conflation. It reads
// the payloads with structs of its own, by the wire field names, so that
// it checks what the simulator sends rather than how it encodes it.
type refDB struct {
	t          *testing.T
	versions   map[string]map[string]bundle.Version
	heartbeats map[string]bool
	clusters   map[string]map[string]Cluster
	// compliance: hub → [policy, cluster] → state.
	compliance map[string]map[[2]string]ComplianceState
	// events: hub → [policy, cluster, name].
	events map[string]map[[3]string]bool

	// staleDeltas counts deltas dropped because the stored compliance was
	// not their base.
	staleDeltas int
}

func newRefDB(t *testing.T) *refDB {
	return &refDB{
		t:          t,
		versions:   map[string]map[string]bundle.Version{},
		heartbeats: map[string]bool{},
		clusters:   map[string]map[string]Cluster{},
		compliance: map[string]map[[2]string]ComplianceState{},
		events:     map[string]map[[3]string]bool{},
	}
}

// replay applies msgs in order to a fresh refDB.
func replay(t *testing.T, msgs []Message) *refDB {
	t.Helper()
	db := newRefDB(t)
	for _, m := range msgs {
		db.apply(m)
	}
	return db
}

// apply writes m as the bridge would if it were handed m now.
func (db *refDB) apply(m Message) {
	t := db.t
	t.Helper()
	if db.versions[m.Hub] == nil {
		db.versions[m.Hub] = map[string]bundle.Version{}
		db.compliance[m.Hub] = map[[2]string]ComplianceState{}
		db.events[m.Hub] = map[[3]string]bool{}
	}
	versions := db.versions[m.Hub]
	if v, ok := versions[m.Type]; ok && !m.Version.Newer(v) {
		return // stale: the version fence writes nothing
	}
	rows := db.compliance[m.Hub]
	switch m.Type {
	case TypeHeartbeat:
		db.heartbeats[m.Hub] = true
	case TypeManagedClusters:
		db.clusters[m.Hub] = decodeSnapshot(t, m.Data)
	case TypeClustersPolicies:
		if _, ok := versions[TypeManagedClusters]; !ok {
			t.Fatalf("%s %s of %s before any managedclusters: the bridge would hold it back", m.Type, m.Version, m.Hub)
		}
		var p struct {
			Objects []struct {
				PolicyID string   `json:"policyId"`
				Clusters []string `json:"clusters"`
			} `json:"objects"`
		}
		decodeInto(t, m, &p)
		listed := map[[2]string]bool{}
		for _, o := range p.Objects {
			for _, c := range o.Clusters {
				listed[[2]string{o.PolicyID, c}] = true
			}
		}
		maps.DeleteFunc(rows, func(k [2]string, _ ComplianceState) bool { return !listed[k] })
		for k := range listed {
			if _, ok := rows[k]; !ok {
				rows[k] = UnknownCompliance
			}
		}
	case TypeCompliance:
		if m.Dependency == nil {
			t.Fatalf("%s %s of %s names no clusterspolicies version", m.Type, m.Version, m.Hub)
		}
		if v, ok := versions[TypeClustersPolicies]; !ok || v.Compare(*m.Dependency) < 0 {
			t.Fatalf("%s %s of %s on clusterspolicies %s, the database holds %v: the bridge would hold it back",
				m.Type, m.Version, m.Hub, m.Dependency, v)
		}
		var p struct {
			Objects []struct {
				PolicyID     string   `json:"policyId"`
				NonCompliant []string `json:"nonCompliantClusters"`
				Unknown      []string `json:"unknownComplianceClusters"`
			} `json:"objects"`
		}
		decodeInto(t, m, &p)
		for _, o := range p.Objects {
			for k := range rows {
				if k[0] != o.PolicyID {
					continue
				}
				switch {
				case slices.Contains(o.NonCompliant, k[1]):
					rows[k] = NonCompliant
				case slices.Contains(o.Unknown, k[1]):
					rows[k] = UnknownCompliance
				default:
					rows[k] = Compliant
				}
			}
		}
	case TypeComplianceDelta:
		if m.Dependency == nil {
			t.Fatalf("%s %s of %s names no base", m.Type, m.Version, m.Hub)
		}
		if base, ok := versions[TypeCompliance]; !ok || base != *m.Dependency {
			db.staleDeltas++ // its base was replaced: dropped, no version
			return
		}
		var p struct {
			Objects []struct {
				PolicyID     string   `json:"policyId"`
				Compliant    []string `json:"compliantClusters"`
				NonCompliant []string `json:"nonCompliantClusters"`
				Unknown      []string `json:"unknownComplianceClusters"`
			} `json:"objects"`
		}
		decodeInto(t, m, &p)
		for _, o := range p.Objects {
			for _, l := range []struct {
				clusters []string
				state    ComplianceState
			}{{o.Compliant, Compliant}, {o.NonCompliant, NonCompliant}, {o.Unknown, UnknownCompliance}} {
				for _, c := range l.clusters {
					if k := [2]string{o.PolicyID, c}; rows[k] != "" {
						rows[k] = l.state // only rows that exist
					}
				}
			}
		}
	case TypePolicyEvents:
		var p struct {
			Objects []struct {
				PolicyID    string `json:"policyId"`
				ClusterName string `json:"clusterName"`
				EventName   string `json:"eventName"`
			} `json:"objects"`
		}
		decodeInto(t, m, &p)
		for _, o := range p.Objects {
			k := [3]string{o.PolicyID, o.ClusterName, o.EventName}
			if db.events[m.Hub][k] {
				t.Errorf("%s %s of %s sends event %v again", m.Type, m.Version, m.Hub, k)
			}
			db.events[m.Hub][k] = true
		}
	default:
		t.Fatalf("unknown type %q", m.Type)
	}
	versions[m.Type] = m.Version
}

func decodeInto(t *testing.T, m Message, v any) {
	t.Helper()
	if err := json.Unmarshal(m.Data, v); err != nil {
		t.Fatalf("%s %s of %s: %v", m.Type, m.Version, m.Hub, err)
	}
}

// check compares the model's final state with exp.
func (db *refDB) check(exp *Expected) {
	t := db.t
	t.Helper()
	for hub := range db.versions {
		if exp.Hubs[hub] == nil {
			t.Errorf("hub %s has rows but is not expected", hub)
		}
	}
	for _, hub := range exp.HubNames() {
		st := exp.Hubs[hub]
		got := db.versions[hub]
		for typ, v := range got {
			want, exact := st.Versions[typ]
			bound, bounded := st.VersionsAtMost[typ]
			switch {
			case exact && v != want:
				t.Errorf("hub %s: %s version %s, Expected %s", hub, typ, v, want)
			case bounded && v.Newer(bound):
				t.Errorf("hub %s: %s version %s, Expected at most %s", hub, typ, v, bound)
			case !exact && !bounded:
				t.Errorf("hub %s: %s version %s, Expected none", hub, typ, v)
			}
		}
		for typ, want := range st.Versions {
			if _, ok := got[typ]; !ok {
				t.Errorf("hub %s: no %s version, Expected %s", hub, typ, want)
			}
		}
		if db.heartbeats[hub] != st.Heartbeat {
			t.Errorf("hub %s: heartbeat %v, Expected %v", hub, db.heartbeats[hub], st.Heartbeat)
		}
		if clusters := db.clusters[hub]; !reflect.DeepEqual(clusters, st.ManagedClusters) && len(clusters)+len(st.ManagedClusters) > 0 {
			t.Errorf("hub %s: managed clusters differ from Expected", hub)
		}

		compliance := map[string]map[string]ComplianceState{}
		for k, s := range db.compliance[hub] {
			if compliance[k[0]] == nil {
				compliance[k[0]] = map[string]ComplianceState{}
			}
			compliance[k[0]][k[1]] = s
		}
		if !reflect.DeepEqual(compliance, st.Compliance) {
			t.Errorf("hub %s: compliance\n%v\nExpected\n%v", hub, compliance, st.Compliance)
		}
		events := map[string]map[string][]string{}
		for k := range db.events[hub] {
			if events[k[0]] == nil {
				events[k[0]] = map[string][]string{}
			}
			events[k[0]][k[1]] = append(events[k[0]][k[1]], k[2])
		}
		for _, byCluster := range events {
			for _, names := range byCluster {
				slices.Sort(names)
			}
		}
		if !reflect.DeepEqual(events, st.Events) {
			t.Errorf("hub %s: %d events, Expected %d, or they differ", hub, len(db.events[hub]), st.PolicyEvents())
		}
	}
}

// finalMessages returns what a bridge that conflates as much as it can
// writes of msgs: one that starts after all were sent, with every one
// waiting in its hub's unit. Per hub, in the order units serve types: the
// last bundle of each complete type, the deltas after the last compliance
// report, in order, and every event.
func finalMessages(msgs []Message) []Message {
	order := []string{TypeHeartbeat, TypeManagedClusters, TypeClustersPolicies, TypeCompliance, TypeComplianceDelta, TypePolicyEvents}
	byHub := map[string]map[string][]Message{}
	var hubs []string
	for _, m := range msgs {
		if byHub[m.Hub] == nil {
			byHub[m.Hub] = map[string][]Message{}
			hubs = append(hubs, m.Hub)
		}
		held := byHub[m.Hub]
		switch m.Type {
		case TypePolicyEvents, TypeComplianceDelta:
			held[m.Type] = append(held[m.Type], m)
		case TypeCompliance:
			held[TypeComplianceDelta] = nil // a new report drops the deltas on older ones
			held[m.Type] = []Message{m}
		default:
			held[m.Type] = []Message{m}
		}
	}
	var out []Message
	for _, hub := range hubs {
		for _, typ := range order {
			out = append(out, byHub[hub][typ]...)
		}
	}
	return out
}

// The expected state is what a database holds after the messages sent are
// written with the bridge's semantics: one by one in order, or with
// everything conflation may drop dropped. The two bound what the bridge
// does, and must agree with each other and with Expected.
func TestRunExpectedMatchesReplay(t *testing.T) {
	tests := []struct {
		name string
		cfg  Config
	}{
		{"defaults", Config{Hubs: 6, Clusters: 15, Generations: 40, Seed: 21}},
		{"much change", Config{Hubs: 6, Clusters: 10, Generations: 60, Seed: 22,
			RestartProbability: 0.15, ChurnProbability: 0.4, PlacementProbability: 0.4, ChangeProbability: 0.5}},
		{"reports every round", Config{Hubs: 3, Clusters: 8, Generations: 20, Seed: 23, ComplianceEvery: 1}},
		{"reports only after placements", Config{Hubs: 3, Clusters: 8, Generations: 40, Seed: 24,
			ComplianceEvery: -1, PlacementProbability: -1, ChurnProbability: -1, RestartProbability: -1}},
		{"many policies, few clusters", Config{Hubs: 2, Clusters: 2, Generations: 30, Seed: 25, Policies: 40, EventsPerRound: 10}},
		{"one policy", Config{Hubs: 4, Clusters: 6, Generations: 50, Seed: 26, Policies: 1, PlacementProbability: 0.5}},
		{"no clusters", Config{Hubs: 2, Generations: 10, Seed: 27}},
		{"no events", Config{Hubs: 2, Clusters: 5, Generations: 10, Seed: 28, EventsPerRound: -1}},
		{"no policies", Config{Hubs: 2, Clusters: 5, Generations: 10, Seed: 29, Policies: -1}},
	}
	for _, tt := range tests {
		t.Run(tt.name, func(t *testing.T) {
			exp, rec := run(t, tt.cfg)
			inOrder := replay(t, rec.msgs)
			if inOrder.staleDeltas != 0 {
				t.Errorf("%d deltas are not on the report before them", inOrder.staleDeltas)
			}
			inOrder.check(exp)
			final := finalMessages(rec.msgs)
			conflated := replay(t, final)
			conflated.check(exp)
			t.Logf("%d messages (%v), %d written when conflated; %d compliance rows, %d events",
				exp.Messages, exp.MessagesByType, len(final), exp.ComplianceRows(), exp.PolicyEvents())
		})
	}
}

// TestRunDurationEndsAfterARound: a run cut short by Duration ends after a
// whole round, and its Expected is the state of the rounds it sent.
func TestRunDurationEndsAfterARound(t *testing.T) {
	cfg := Config{Hubs: 4, Clusters: 5, Generations: 100000, Seed: 30, Rate: 4000, Duration: 300 * time.Millisecond}
	exp, rec := run(t, cfg)
	if exp.Generations < 2 || exp.Generations >= cfg.Generations {
		t.Fatalf("sent %d rounds; want the run cut short by its Duration after a few", exp.Generations)
	}
	if exp.Messages != len(rec.msgs) {
		t.Errorf("Expected counts %d messages, %d were published", exp.Messages, len(rec.msgs))
	}
	last := rec.msgs[len(rec.msgs)-1]
	if lastHub := cfg.withDefaults().hubName(cfg.Hubs - 1); last.Hub != lastHub {
		t.Errorf("the last message is a %s of %s, not of the last hub %s: the round was cut", last.Type, last.Hub, lastHub)
	}
	replay(t, rec.msgs).check(exp)
}
