package sim

import (
	"context"
	"encoding/json"
	"maps"
	"reflect"
	"slices"
	"testing"
)

// ghRecorder is a Publisher that keeps every message of a global-hub run
// with all it carries.
type ghRecorder struct{ msgs []GHMessage }

func (r *ghRecorder) Publish(_ context.Context, m Message) error {
	r.msgs = append(r.msgs, GHMessage{Message: m})
	return nil
}

func (r *ghRecorder) PublishGH(_ context.Context, m GHMessage) error {
	r.msgs = append(r.msgs, m)
	return nil
}

// runGH runs a global-hub simulation into a ghRecorder.
func runGH(t testing.TB, cfg Config) (*Expected, []GHMessage) {
	t.Helper()
	cfg.Agent = AgentGlobalHub
	rec := &ghRecorder{}
	exp, err := Run(context.Background(), cfg, rec, nil)
	if err != nil {
		t.Fatalf("Run: %v", err)
	}
	if exp.Messages != len(rec.msgs) {
		t.Fatalf("Expected counts %d messages, %d were published", exp.Messages, len(rec.msgs))
	}
	return exp, rec.msgs
}

// ghRefHub is a reference model of what the bridge stores of one hub of
// the global-hub agent: the global hub manager's handlers
// (/tmp/upstream/manager.md §2) with the bridge's rules, applied to the
// messages of one hub in the order sent. A message whose id was read
// before is a copy and changes nothing; chunks are joined first. It reads
// the data with structs of its own, by the wire field names.
type ghRefHub struct {
	t      *testing.T
	hub    string
	seen   map[string]bool
	chunks map[string][]byte // type → the data of the chunks so far

	clusters      map[string]Cluster // by name; the bridge keys them by claim id
	clusterIDs    map[string]string  // claim id → name
	policies      map[string]LocalPolicy
	compliance    map[string]map[string]ComplianceState
	complianceVal uint64 // value of the last localcompliance applied
	hasCompliance bool
	events        map[string]map[string]map[string]map[string]bool // type → a → b → name
	info          ghHubInfo
	infoData      json.RawMessage
	alerts        map[string]AlertCounts
	migrations    map[string]map[string]Migration
	heartbeat     bool
}

func newGHRefHub(t *testing.T, hub string) *ghRefHub {
	return &ghRefHub{
		t: t, hub: hub, seen: map[string]bool{}, chunks: map[string][]byte{},
		clusters: map[string]Cluster{}, clusterIDs: map[string]string{}, policies: map[string]LocalPolicy{},
		compliance: map[string]map[string]ComplianceState{}, events: map[string]map[string]map[string]map[string]bool{},
		alerts: map[string]AlertCounts{}, migrations: map[string]map[string]Migration{},
	}
}

func (h *ghRefHub) unmarshal(data []byte, into any) {
	h.t.Helper()
	if err := json.Unmarshal(data, into); err != nil {
		h.t.Fatalf("hub %s: %v in %s", h.hub, err, data)
	}
}

// apply reads one message.
func (h *ghRefHub) apply(m GHMessage) {
	t := h.t
	t.Helper()
	if h.seen[m.ID] {
		return // a copy: nothing new
	}
	h.seen[m.ID] = true
	data := m.Data
	if m.ChunkSize > 0 {
		h.chunks[m.Type] = append(h.chunks[m.Type], m.Data...)
		if len(h.chunks[m.Type]) != m.ChunkEnd {
			t.Fatalf("hub %s: chunk of %s ends at %d, but %d bytes were read", h.hub, m.Type, m.ChunkEnd, len(h.chunks[m.Type]))
		}
		if m.ChunkEnd < m.ChunkSize {
			return
		}
		data = h.chunks[m.Type]
		delete(h.chunks, m.Type)
	} else if len(h.chunks[m.Type]) > 0 {
		t.Fatalf("hub %s: a whole %s amid the chunks of another", h.hub, m.Type)
	}
	switch m.Type {
	case TypeGHHeartbeat:
		h.heartbeat = true
	case TypeGHHubInfo:
		var info ghHubInfo
		h.unmarshal(data, &info)
		if info.ClusterID != "" { // hub_cluster_info_handler.go: ignored without
			h.info, h.infoData = info, data
		}
	case TypeGHManagedCluster:
		h.applyClusters(data)
	case TypeGHLocalSpec:
		h.applySpecs(data)
	case TypeGHLocalCompliance:
		var list []ghCompliance
		h.unmarshal(data, &list)
		h.compliance = map[string]map[string]ComplianceState{}
		for _, p := range list {
			states := map[string]ComplianceState{}
			for _, l := range []struct {
				names []string
				state ComplianceState
			}{{p.Compliant, Compliant}, {p.NonCompliant, NonCompliant}, {p.Unknown, UnknownCompliance}, {p.Pending, PendingCompliance}} {
				for _, c := range l.names {
					states[c] = l.state
				}
			}
			if len(states) > 0 {
				h.compliance[p.PolicyID] = states
			}
		}
		h.complianceVal, h.hasCompliance = m.Version.Generation, true
	case TypeGHCompleteCompliance:
		if m.Dependency == nil || !h.hasCompliance || m.Dependency.Generation != h.complianceVal {
			t.Fatalf("hub %s: complete compliance %s depends on %v, the last compliance applied has value %d",
				h.hub, m.Version, m.Dependency, h.complianceVal)
		}
		var list []ghCompleteCompliance
		h.unmarshal(data, &list)
		listed := map[string]ghCompleteCompliance{}
		for _, p := range list {
			listed[p.PolicyID] = p
		}
		for id, states := range h.compliance {
			p := listed[id]
			for c := range states {
				states[c] = Compliant
			}
			for _, l := range []struct {
				names []string
				state ComplianceState
			}{{p.NonCompliant, NonCompliant}, {p.Unknown, UnknownCompliance}, {p.Pending, PendingCompliance}} {
				for _, c := range l.names {
					if _, ok := states[c]; !ok {
						t.Fatalf("hub %s: complete compliance names cluster %s of policy %s, which the compliance did not place", h.hub, c, id)
					}
					states[c] = l.state
				}
			}
		}
	case TypeGHClusterEvent, TypeGHRootPolicyEvent, TypeGHReplicatedEvent, TypeGHCGUEvent:
		var evs []map[string]any
		switch m.SendMode {
		case SendModeSingle:
			var ev map[string]any
			h.unmarshal(data, &ev)
			evs = append(evs, ev)
		case SendModeBatch:
			h.unmarshal(data, &evs)
		default:
			t.Fatalf("hub %s: %s with sendmode %q", h.hub, m.Type, m.SendMode)
		}
		for _, ev := range evs {
			str := func(k string) string { s, _ := ev[k].(string); return s }
			var a, b string
			switch m.Type {
			case TypeGHClusterEvent:
				a, b = str("clusterId"), str("clusterName")
			case TypeGHRootPolicyEvent:
				a = str("policyId")
				if _, ok := ev["clusterName"]; ok {
					t.Fatalf("hub %s: a root policy event names a cluster: %v", h.hub, ev)
				}
			case TypeGHReplicatedEvent:
				a, b = str("policyId"), str("clusterName")
			case TypeGHCGUEvent:
				continue // no handler: never stored
			}
			byA := h.events[m.Type]
			if byA == nil {
				byA = map[string]map[string]map[string]bool{}
				h.events[m.Type] = byA
			}
			if byA[a] == nil {
				byA[a] = map[string]map[string]bool{}
			}
			if byA[a][b] == nil {
				byA[a][b] = map[string]bool{}
			}
			byA[a][b][str("eventName")] = true
		}
	case TypeGHAlertCounts:
		var c ghAlertCounts
		h.unmarshal(data, &c)
		h.alerts[c.Source] = AlertCounts{Low: c.Low, Medium: c.Medium, High: c.High, Critical: c.Critical, DetailURL: c.DetailURL}
	case TypeGHMigration:
		var s ghMigrationStatus
		h.unmarshal(data, &s)
		if m.Extensions["clustername"] != ghGlobalHubClusterName {
			t.Fatalf("hub %s: migration report to %q", h.hub, m.Extensions["clustername"])
		}
		if s.Resync {
			clear(h.migrations)
			return
		}
		id, stage := m.Extensions["migrationid"], m.Extensions["migrationstage"]
		if h.migrations[id] == nil {
			h.migrations[id] = map[string]Migration{}
		}
		h.migrations[id][stage] = Migration{ErrorMessage: s.ErrMessage, Payload: data}
	default:
		t.Fatalf("hub %s: unknown type %s", h.hub, m.Type)
	}
}

// ghRefBundle reads a generic bundle, failing on create, which the agent
// never sends.
type ghRefBundle struct {
	Create         []json.RawMessage `json:"create"`
	Update         []json.RawMessage `json:"update"`
	Delete         []ghMeta          `json:"delete"`
	Resync         []json.RawMessage `json:"resync"`
	ResyncMetadata []ghMeta          `json:"resync_metadata"`
}

func (h *ghRefHub) bundle(data []byte) ghRefBundle {
	var b ghRefBundle
	h.unmarshal(data, &b)
	if b.Create != nil {
		h.t.Fatalf("hub %s: a generic bundle with create", h.hub)
	}
	return b
}

// applyClusters is managedcluster_handler.go @06ef95e: upserts by claim
// id, deletes by id (else name), and a non-empty resync_metadata deletes
// every cluster of the hub it does not list.
func (h *ghRefHub) applyClusters(data []byte) {
	b := h.bundle(data)
	for _, raw := range slices.Concat(b.Resync, b.Update) {
		var o ghManagedCluster
		h.unmarshal(raw, &o)
		id := ""
		for _, c := range o.Status.ClusterClaims {
			if c.Name == ClusterIDClaim {
				id = c.Value
			}
		}
		if id == "" || o.Metadata.Annotations[ghManagedBy] != h.hub {
			h.t.Fatalf("hub %s: cluster %s without a claim or the managed-by annotation", h.hub, o.Metadata.Name)
		}
		if old, ok := h.clusterIDs[id]; ok && old != o.Metadata.Name {
			delete(h.clusters, old)
		}
		h.clusterIDs[id] = o.Metadata.Name
		h.clusters[o.Metadata.Name] = Cluster{UID: id, Labels: o.Metadata.Labels}
	}
	for _, d := range b.Delete {
		if d.ID != "" {
			delete(h.clusters, h.clusterIDs[d.ID])
			delete(h.clusterIDs, d.ID)
			continue
		}
		delete(h.clusterIDs, h.clusters[d.Name].UID)
		delete(h.clusters, d.Name)
	}
	if len(b.ResyncMetadata) > 0 {
		listed := map[string]bool{}
		for _, m := range b.ResyncMetadata {
			listed[m.ID] = true
		}
		for id, name := range h.clusterIDs {
			if !listed[id] {
				delete(h.clusters, name)
				delete(h.clusterIDs, id)
			}
		}
	}
}

// applySpecs is local_policy_spec_handler.go @6eda979: upserts by uid,
// deletes by uid (else namespace and name), and a non-empty
// resync_metadata deletes the ids it does not list.
func (h *ghRefHub) applySpecs(data []byte) {
	b := h.bundle(data)
	for _, raw := range slices.Concat(b.Resync, b.Update) {
		var o ghPolicy
		h.unmarshal(raw, &o)
		h.policies[o.Metadata.UID] = LocalPolicy{Namespace: o.Metadata.Namespace, Name: o.Metadata.Name, Payload: raw}
	}
	for _, d := range b.Delete {
		if d.ID != "" {
			delete(h.policies, d.ID)
			continue
		}
		for id, p := range h.policies {
			if p.Namespace == d.Namespace && p.Name == d.Name {
				delete(h.policies, id)
			}
		}
	}
	if len(b.ResyncMetadata) > 0 {
		listed := map[string]bool{}
		for _, m := range b.ResyncMetadata {
			listed[m.ID] = true
		}
		for id := range h.policies {
			if !listed[id] {
				delete(h.policies, id)
			}
		}
	}
}

// events returns the stored events of a type as the expected state holds
// them.
func (h *ghRefHub) eventsOf(typ string) map[string]map[string][]string {
	out := map[string]map[string][]string{}
	for a, byB := range h.events[typ] {
		out[a] = map[string][]string{}
		for b, names := range byB {
			out[a][b] = slices.Sorted(maps.Keys(names))
		}
	}
	return out
}

// check compares the reference with the expected state of the hub.
func (h *ghRefHub) check(st *HubState) {
	t := h.t
	t.Helper()
	if len(h.chunks) > 0 {
		t.Errorf("hub %s: chunks never completed: %v", h.hub, slices.Collect(maps.Keys(h.chunks)))
	}
	if !h.heartbeat || !st.Heartbeat {
		t.Errorf("hub %s: heartbeat read %v, expected %v", h.hub, h.heartbeat, st.Heartbeat)
	}
	if !reflect.DeepEqual(h.clusters, st.ManagedClusters) {
		t.Errorf("hub %s: managed clusters\n%v\nwant\n%v", h.hub, h.clusters, st.ManagedClusters)
	}
	want := st.LocalPolicies
	if want == nil {
		want = map[string]LocalPolicy{}
	}
	if !reflect.DeepEqual(h.policies, want) {
		t.Errorf("hub %s: local policies differ: %d, want %d", h.hub, len(h.policies), len(want))
	}
	if !reflect.DeepEqual(h.compliance, st.Compliance) && (len(h.compliance) > 0 || len(st.Compliance) > 0) {
		t.Errorf("hub %s: compliance\n%v\nwant\n%v", h.hub, h.compliance, st.Compliance)
	}
	for _, c := range []struct {
		typ  string
		want map[string]map[string][]string
	}{
		{TypeGHClusterEvent, st.ManagedClusterEvents},
		{TypeGHRootPolicyEvent, st.LocalRootPolicyEvents},
		{TypeGHReplicatedEvent, st.LocalPolicyEvents},
	} {
		got := h.eventsOf(c.typ)
		if (len(got) > 0 || len(c.want) > 0) && !reflect.DeepEqual(got, c.want) {
			t.Errorf("hub %s: %s events\n%v\nwant\n%v", h.hub, c.typ, got, c.want)
		}
	}
	if h.info.ClusterID != st.HubClusterID || string(h.infoData) != string(st.HubInfo) {
		t.Errorf("hub %s: info %s, want clusterId %q and %s", h.hub, h.infoData, st.HubClusterID, st.HubInfo)
	}
	if (len(h.alerts) > 0 || len(st.AlertCounts) > 0) && !reflect.DeepEqual(h.alerts, st.AlertCounts) {
		t.Errorf("hub %s: alert counts %v, want %v", h.hub, h.alerts, st.AlertCounts)
	}
	if (len(h.migrations) > 0 || len(st.Migrations) > 0) && !reflect.DeepEqual(h.migrations, st.Migrations) {
		t.Errorf("hub %s: migrations %v, want %v", h.hub, h.migrations, st.Migrations)
	}
	if len(st.Versions) != 0 {
		t.Errorf("hub %s: expected versions %v: the global-hub types' versions are the bridge's to map", h.hub, st.Versions)
	}
}

// replayGH applies each hub's messages in order to a reference of its own
// and checks it against the expected state.
func replayGH(t *testing.T, exp *Expected, msgs []GHMessage) {
	t.Helper()
	refs := map[string]*ghRefHub{}
	for _, m := range msgs {
		ref := refs[m.Hub]
		if ref == nil {
			ref = newGHRefHub(t, m.Hub)
			refs[m.Hub] = ref
		}
		ref.apply(m)
	}
	for name, st := range exp.Hubs {
		if refs[name] == nil {
			t.Fatalf("hub %s sent nothing", name)
		}
		refs[name].check(st)
	}
}

// The expected state is what the global hub's manager (and the bridge)
// stores of the messages sent, read in order with copies recognised by
// their ids: whatever the restarts, losses, copies, chunks and modes.
func TestGlobalHubExpectedMatchesReplay(t *testing.T) {
	small := GlobalHubConfig{FrameBytes: 1500, ChunkBytes: 1000, ResyncEvery: 4}
	tests := []struct {
		name string
		cfg  Config
	}{
		{"defaults", Config{Hubs: 4, Clusters: 8, Generations: 30, Seed: 61}},
		{"restarts, losses, small frames and chunks", Config{Hubs: 6, Clusters: 6, Generations: 40, Seed: 62,
			RestartProbability: 0.15, LoseProbability: 0.3, GlobalHub: small}},
		{"single events", Config{Hubs: 3, Clusters: 5, Generations: 25, Seed: 63, RestartProbability: 0.2,
			GlobalHub: GlobalHubConfig{SendMode: SendModeSingle, FrameBytes: 2000, ChunkBytes: 700}}},
		{"mixed modes, much change", Config{Hubs: 4, Clusters: 10, Generations: 40, Seed: 64, RestartProbability: 0.1,
			ChurnProbability: 0.4, PlacementProbability: 0.4, ChangeProbability: 0.5, LoseProbability: 0.2,
			GlobalHub: GlobalHubConfig{SendMode: SendModeMixed, FrameBytes: 3000, ChunkBytes: 2500, ResyncEvery: -1}}},
		{"no clusters", Config{Hubs: 2, Generations: 10, Seed: 65, RestartProbability: 0.3}},
		{"no policies, no events", Config{Hubs: 2, Clusters: 5, Generations: 15, Seed: 66, Policies: -1, EventsPerRound: -1, LoseProbability: 0.5}},
	}
	for _, tt := range tests {
		t.Run(tt.name, func(t *testing.T) {
			exp, msgs := runGH(t, tt.cfg)
			replayGH(t, exp, msgs)
			t.Logf("%d messages %v; %+v", exp.Messages, exp.MessagesByType, *exp.GlobalHub)
		})
	}
}

// A lost frame is repaired by the agent's next periodic resync, or by the
// one after the last round: the state is exact whatever was lost.
func TestGlobalHubLostFramesAreRepaired(t *testing.T) {
	exp, msgs := runGH(t, Config{Hubs: 5, Clusters: 8, Generations: 30, Seed: 67, LoseProbability: 0.5,
		ChangeProbability: 0.6, ChurnProbability: 0.5, RestartProbability: -1, GlobalHub: GlobalHubConfig{ResyncEvery: 7}})
	if exp.GlobalHub.Lost == 0 {
		t.Fatal("nothing was lost; pick another seed")
	}
	replayGH(t, exp, msgs)
}
