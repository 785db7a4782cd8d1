package sim

import (
	"encoding/json"
	"reflect"
	"strings"
	"testing"
	"time"

	"github.com/stbridge/stb/pkg/bundle"
)

// ghTestConfig exercises everything: restarts, losses, small frames and
// chunks, mixed send modes, periodic resyncs.
var ghTestConfig = Config{Hubs: 6, Clusters: 7, Generations: 40, Seed: 71, RestartProbability: 0.15, LoseProbability: 0.2,
	GlobalHub: GlobalHubConfig{FrameBytes: 1800, ChunkBytes: 1200, SendMode: SendModeMixed, ResyncEvery: 5}}

// ghOriginals returns, per hub, the messages that are not copies (an id
// read before), in order.
func ghOriginals(msgs []GHMessage) map[string][]GHMessage {
	seen := map[string]bool{}
	out := map[string][]GHMessage{}
	for _, m := range msgs {
		if seen[m.ID] {
			continue
		}
		seen[m.ID] = true
		out[m.Hub] = append(out[m.Hub], m)
	}
	return out
}

// ghWhole joins chunks: it returns each hub's original events whole, the
// first chunk's message carrying the whole data.
func ghWhole(t *testing.T, msgs []GHMessage) map[string][]GHMessage {
	t.Helper()
	out := map[string][]GHMessage{}
	for hub, ms := range ghOriginals(msgs) {
		var open *GHMessage
		for _, m := range ms {
			if m.ChunkSize == 0 {
				if open != nil {
					t.Fatalf("hub %s: a whole %s amid the chunks of a %s", hub, m.Type, open.Type)
				}
				out[hub] = append(out[hub], m)
				continue
			}
			if open == nil {
				first := m
				first.Data = nil
				open = &first
			}
			if m.Type != open.Type || m.ChunkSize != open.ChunkSize || m.Version != open.Version {
				t.Fatalf("hub %s: chunk of %s %s amid those of %s %s", hub, m.Type, m.Version, open.Type, open.Version)
			}
			open.Data = append(open.Data, m.Data...)
			if len(open.Data) != m.ChunkEnd {
				t.Fatalf("hub %s: chunk ends at %d after %d bytes", hub, m.ChunkEnd, len(open.Data))
			}
			if m.ChunkEnd == m.ChunkSize {
				open.ChunkSize, open.ChunkEnd = 0, 0
				out[hub] = append(out[hub], *open)
				open = nil
			}
		}
		if open != nil {
			t.Fatalf("hub %s: the chunks of a %s never end", hub, open.Type)
		}
	}
	return out
}

// TestGlobalHubVersions checks each type's versions against the agent's
// rules (pkg/bundle/version/version.go and the emitters): runs start at
// 0, heartbeats go 0.0, 1.0, …; object and event emitters move to the next
// generation at every tick, sent or not, so their generation is the
// round's heartbeat's; generic emitters only after a send; a complete
// compliance names the compliance emitter's version as it stands, one
// generation after the last compliance sent, with its value.
func TestGlobalHubVersions(t *testing.T) {
	exp, msgs := runGH(t, ghTestConfig)
	if exp.GlobalHub.Restarts == 0 {
		t.Fatal("no restarts; pick another seed")
	}
	for hub, ms := range ghWhole(t, msgs) {
		var tick uint64 // the generation of the round's heartbeat
		runs := 0
		last := map[string]GHMessage{}
		for _, m := range ms {
			v := m.Version // Incarnation: the agent's generation, Generation: its value
			if m.Type == TypeGHHeartbeat {
				if v.Incarnation == 0 {
					runs++
					clear(last)
				} else if v.Incarnation != tick+1 {
					t.Fatalf("hub %s: heartbeat %s after %d.0", hub, v, tick)
				}
				if v.Generation != 0 {
					t.Fatalf("hub %s: heartbeat %s has a value", hub, v)
				}
				tick = v.Incarnation
				continue
			}
			prev, sentBefore := last[m.Type]
			last[m.Type] = m
			switch m.Type {
			case TypeGHManagedCluster, TypeGHLocalSpec, TypeGHClusterEvent, TypeGHRootPolicyEvent, TypeGHReplicatedEvent, TypeGHCGUEvent:
				if v.Incarnation != tick {
					t.Fatalf("hub %s: %s %s in the round of heartbeat %d.0: not a generation per tick", hub, m.Type, v, tick)
				}
				if sentBefore && v.Generation < prev.Version.Generation {
					t.Fatalf("hub %s: %s value went back: %s after %s", hub, m.Type, v, prev.Version)
				}
			case TypeGHHubInfo, TypeGHLocalCompliance, TypeGHCompleteCompliance:
				switch {
				case !sentBefore && v.Incarnation != 0:
					t.Fatalf("hub %s: the run's first %s is %s", hub, m.Type, v)
				case !sentBefore && m.Type == TypeGHHubInfo && v.Generation != 1:
					t.Fatalf("hub %s: the run's first info is %s, want 0.1", hub, v)
				case sentBefore && (v.Incarnation != prev.Version.Incarnation+1 || v.Generation <= prev.Version.Generation):
					t.Fatalf("hub %s: %s %s after %s: one generation per send, a new value", hub, m.Type, v, prev.Version)
				}
				if m.Type == TypeGHCompleteCompliance {
					base, ok := last[TypeGHLocalCompliance]
					if !ok || m.Dependency == nil || m.Dependency.Incarnation != base.Version.Incarnation+1 || m.Dependency.Generation != base.Version.Generation {
						t.Fatalf("hub %s: complete compliance %s depends on %v, the last compliance sent is %s", hub, v, m.Dependency, base.Version)
					}
				}
			case TypeGHAlertCounts:
				if v.Generation != v.Incarnation+1 || (sentBefore && v.Incarnation != prev.Version.Incarnation+1) {
					t.Fatalf("hub %s: alert counts %s after %s: increment, send, next", hub, v, prev.Version)
				}
			case TypeGHMigration:
				if v.Generation != v.Incarnation+1 {
					t.Fatalf("hub %s: migration report %s", hub, v)
				}
			}
			if m.Type != TypeGHCompleteCompliance && m.Dependency != nil {
				t.Fatalf("hub %s: %s names a dependency", hub, m.Type)
			}
		}
		if runs != exp.Hubs[hub].Restarts+1 {
			t.Errorf("hub %s: %d runs, %d restarts", hub, runs, exp.Hubs[hub].Restarts)
		}
	}
}

// TestGlobalHubFrames checks the generic bundles (object_emitter.go,
// generic_bundle.go): never create; frames within the limit (but a
// resync_metadata frame, which is never split, or a frame of one object);
// a resync is resync frames and one resync_metadata frame, all at one
// version, the metadata naming every object of the resync by its id.
func TestGlobalHubFrames(t *testing.T) {
	exp, msgs := runGH(t, ghTestConfig)
	limit := ghTestConfig.GlobalHub.FrameBytes
	for hub, ms := range ghWhole(t, msgs) {
		var resync []string // ids of the open resync's objects
		var resyncVersion string
		for _, m := range ms {
			if m.Type != TypeGHManagedCluster && m.Type != TypeGHLocalSpec {
				continue
			}
			var b map[string][]json.RawMessage
			if err := json.Unmarshal(m.Data, &b); err != nil {
				t.Fatal(err)
			}
			if len(b) == 0 {
				t.Fatalf("hub %s: an empty frame", hub)
			}
			for k, items := range b {
				if !strings.Contains("update delete resync resync_metadata", k) || len(items) == 0 {
					t.Fatalf("hub %s: frame member %q of %d", hub, k, len(items))
				}
			}
			n := len(b["update"]) + len(b["delete"]) + len(b["resync"])
			if len(b["resync_metadata"]) == 0 && n > 1 && len(m.Data) > limit {
				t.Fatalf("hub %s: %s frame of %d bytes, limit %d", hub, m.Type, len(m.Data), limit)
			}
			if len(b["resync"]) > 0 {
				if resync != nil && resyncVersion != m.Version.String() {
					t.Fatalf("hub %s: resync frames at %s and %s", hub, resyncVersion, m.Version)
				}
				resyncVersion = m.Version.String()
				for _, raw := range b["resync"] {
					resync = append(resync, objectID(t, m.Type, raw))
				}
			}
			if meta := b["resync_metadata"]; len(meta) > 0 {
				if len(b) != 1 || m.Version.String() != resyncVersion {
					t.Fatalf("hub %s: resync_metadata at %s with %d members after resync frames at %s", hub, m.Version, len(b), resyncVersion)
				}
				var ids []string
				for _, raw := range meta {
					var o ghMeta
					if err := json.Unmarshal(raw, &o); err != nil {
						t.Fatal(err)
					}
					if o.ID == "" || o.Name == "" || (m.Type == TypeGHLocalSpec) != (o.Namespace != "") {
						t.Fatalf("hub %s: %s metadata %s", hub, m.Type, raw)
					}
					ids = append(ids, o.ID)
				}
				if !reflect.DeepEqual(ids, resync) {
					t.Fatalf("hub %s: resync_metadata names %v, the resync sent %v", hub, ids, resync)
				}
				resync, resyncVersion = nil, ""
			}
		}
		if resync != nil {
			t.Fatalf("hub %s: a resync without resync_metadata", hub)
		}
	}
	if exp.GlobalHub.ResyncFrames <= exp.GlobalHub.Resyncs*2 {
		t.Errorf("%d resyncs sent %d frames: want several resync frames per resync", exp.GlobalHub.Resyncs, exp.GlobalHub.ResyncFrames)
	}
}

// objectID returns the id the bridge keys an object by: a cluster's claim,
// a policy's uid.
func objectID(t *testing.T, typ string, raw []byte) string {
	t.Helper()
	if typ == TypeGHLocalSpec {
		var p ghPolicy
		if err := json.Unmarshal(raw, &p); err != nil {
			t.Fatal(err)
		}
		if string(mustJSON(t, p.Status)) != "{}" {
			t.Fatalf("policy %s with a status", p.Metadata.Name)
		}
		return p.Metadata.UID
	}
	var c ghManagedCluster
	if err := json.Unmarshal(raw, &c); err != nil {
		t.Fatal(err)
	}
	if c.Status.ClusterClaims[0].Value == c.Metadata.UID {
		t.Fatalf("cluster %s: its claim is its metadata.uid", c.Metadata.Name)
	}
	return c.Status.ClusterClaims[0].Value
}

func mustJSON(t *testing.T, v any) []byte {
	t.Helper()
	data, err := json.Marshal(v)
	if err != nil {
		t.Fatal(err)
	}
	return data
}

// TestGlobalHubNoResyncWithoutObjects: the periodic syncer skips a resync
// of no objects, and an object emitter sends nothing without changes.
func TestGlobalHubNoResyncWithoutObjects(t *testing.T) {
	exp, _ := runGH(t, Config{Hubs: 3, Generations: 20, Seed: 72, Policies: -1, RestartProbability: 0.3})
	for _, typ := range []string{TypeGHManagedCluster, TypeGHLocalSpec, TypeGHLocalCompliance} {
		if n := exp.MessagesByType[typ]; n != 0 {
			t.Errorf("%d %s messages from hubs without any", n, typ)
		}
	}
}

// TestGlobalHubChunks: data above the chunk limit goes in chunks, one
// after the other, each a message of its own id with extsize the whole
// length and extoffset where it ends; data below it in one message
// without them.
func TestGlobalHubChunks(t *testing.T) {
	exp, msgs := runGH(t, ghTestConfig)
	limit := ghTestConfig.GlobalHub.ChunkBytes
	chunks := 0
	for i, m := range msgs {
		if m.ChunkSize == 0 {
			if len(m.Data) > limit {
				t.Fatalf("message %d: %d bytes whole, limit %d", i, len(m.Data), limit)
			}
			continue
		}
		chunks++
		if len(m.Data) > limit || m.ChunkEnd > m.ChunkSize || m.ChunkSize <= limit {
			t.Fatalf("message %d: chunk of %d bytes ending at %d of %d, limit %d", i, len(m.Data), m.ChunkEnd, m.ChunkSize, limit)
		}
		if m.ChunkEnd > len(m.Data) && msgs[i-1].ID == m.ID {
			t.Fatalf("message %d: a chunk with the id of the chunk before", i)
		}
	}
	if chunks == 0 || exp.GlobalHub.ChunkedEvents == 0 {
		t.Fatal("nothing was chunked")
	}
	for hub, ms := range ghWhole(t, msgs) { // chunks join into whole events, in order
		for _, m := range ms {
			if !json.Valid(m.Data) {
				t.Fatalf("hub %s: %s joins to no JSON", hub, m.Type)
			}
		}
	}
}

// TestGlobalHubCopies: a copy is the very message again (same id, time,
// headers and data), right after it or rounds later, also of the run
// before's first events after a restart.
func TestGlobalHubCopies(t *testing.T) {
	exp, msgs := runGH(t, ghTestConfig)
	first := map[string]GHMessage{}
	var immediate, late, earlierRun int
	runOf := map[string]int{} // id → the hub's run it was first sent in
	runs := map[string]int{}
	for i, m := range msgs {
		if m.Type == TypeGHHeartbeat && m.Version.Incarnation == 0 && first[m.ID].ID == "" {
			runs[m.Hub]++
		}
		f, ok := first[m.ID]
		if !ok {
			first[m.ID] = m
			runOf[m.ID] = runs[m.Hub]
			continue
		}
		if !reflect.DeepEqual(f, m) {
			t.Fatalf("message %d has the id of an earlier one but differs:\n%+v\n%+v", i, m, f)
		}
		switch {
		case msgs[i-1].ID == m.ID:
			immediate++
		case runOf[m.ID] < runs[m.Hub]:
			earlierRun++
			if m.Version.Incarnation != 0 {
				t.Fatalf("message %d: a copy of the run before's %s %s, not of its first events", i, m.Type, m.Version)
			}
		default:
			late++
		}
		if m.Type == TypeGHMigration && msgs[i-1].ID != m.ID {
			t.Fatalf("message %d: a late copy of a migration report", i)
		}
	}
	if immediate == 0 || late == 0 || earlierRun == 0 {
		t.Errorf("copies: %d immediate, %d late, %d of the run before (stats %+v)", immediate, late, earlierRun, *exp.GlobalHub)
	}
}

// TestGlobalHubSkewedClocks: a restarted agent's clock may be behind the
// clock of the run before: its events carry earlier times.
func TestGlobalHubSkewedClocks(t *testing.T) {
	exp, msgs := runGH(t, ghTestConfig)
	latest := map[string]time.Time{} // of the hub's run so far
	back := 0
	seen := map[string]bool{}
	for _, m := range msgs {
		if seen[m.ID] {
			continue
		}
		seen[m.ID] = true
		if m.Type == TypeGHHeartbeat && m.Version.Incarnation == 0 {
			if m.Time.Before(latest[m.Hub]) {
				back++
				if d := latest[m.Hub].Sub(m.Time); d < DefaultClockSkew-time.Second {
					t.Errorf("hub %s: a run starts %v before the last event of the run before, want at least %v", m.Hub, d, DefaultClockSkew)
				}
			}
			latest[m.Hub] = time.Time{}
		}
		if m.Time.After(latest[m.Hub]) {
			latest[m.Hub] = m.Time
		}
	}
	if back == 0 || back != exp.GlobalHub.SkewedRestarts {
		t.Errorf("%d runs started earlier than the run before ended, %d restarts set the clock back", back, exp.GlobalHub.SkewedRestarts)
	}
}

// TestGlobalHubSendModes: single mode sends each event of a tick alone,
// one object as data, all at one version; batch mode an array.
func TestGlobalHubSendModes(t *testing.T) {
	exp, msgs := runGH(t, ghTestConfig)
	cfg := ghTestConfig.withDefaults()
	modes := map[string]bool{}
	for hub, ms := range ghWhole(t, msgs) {
		i := 0
		for ; cfg.hubName(i) != hub; i++ {
		}
		single := cfg.GlobalHub.single(i)
		for _, m := range ms {
			if !strings.HasPrefix(m.Type, bundle.GlobalHubPrefix+"event.") {
				if m.SendMode != "" {
					t.Fatalf("hub %s: %s with sendmode %q", hub, m.Type, m.SendMode)
				}
				continue
			}
			modes[m.SendMode] = true
			if (m.SendMode == SendModeSingle) != single {
				t.Fatalf("hub %s (single %v): sendmode %q", hub, single, m.SendMode)
			}
			if single != (m.Data[0] == '{') {
				t.Fatalf("hub %s: sendmode %s with data %.20s", hub, m.SendMode, m.Data)
			}
		}
	}
	if !modes[SendModeSingle] || !modes[SendModeBatch] || exp.GlobalHub.SingleEvents == 0 {
		t.Errorf("modes seen: %v", modes)
	}
}

// TestGlobalHubHubInfo: some runs send an info without a clusterId first;
// the expected info is the last with one.
func TestGlobalHubHubInfo(t *testing.T) {
	exp, msgs := runGH(t, ghTestConfig)
	without := 0
	last := map[string][]byte{}
	for _, m := range msgs {
		if m.Type != TypeGHHubInfo {
			continue
		}
		var info ghHubInfo
		if err := json.Unmarshal(m.Data, &info); err != nil {
			t.Fatal(err)
		}
		var keys map[string]any
		_ = json.Unmarshal(m.Data, &keys)
		if len(keys) != 4 {
			t.Fatalf("info %s: want consoleURL, grafanaURL, mchVersion and clusterId, always", m.Data)
		}
		if info.ClusterID == "" {
			without++
			continue
		}
		last[m.Hub] = m.Data
	}
	if without == 0 {
		t.Error("every info had a clusterId")
	}
	for hub, st := range exp.Hubs {
		if string(st.HubInfo) != string(last[hub]) {
			t.Errorf("hub %s: expected info %s, the last with a clusterId is %s", hub, st.HubInfo, last[hub])
		}
	}
}

// TestGlobalHubTopics: a topic per hub, or the shared one; the type under
// the bridge's prefix.
func TestGlobalHubTopics(t *testing.T) {
	_, msgs := runGH(t, Config{Hubs: 3, Clusters: 2, Generations: 3, Seed: 73})
	for _, m := range msgs {
		if m.Topic != GlobalHubTopicPrefix+m.Hub || !strings.HasPrefix(m.Type, bundle.GlobalHubPrefix) {
			t.Fatalf("%s of %s to %s", m.Type, m.Hub, m.Topic)
		}
	}
	_, msgs = runGH(t, Config{Hubs: 3, Clusters: 2, Generations: 3, Seed: 73, Topic: GlobalHubSharedTopic})
	for _, m := range msgs {
		if m.Topic != GlobalHubSharedTopic {
			t.Fatalf("%s of %s to %s", m.Type, m.Hub, m.Topic)
		}
	}
}

func TestGlobalHubIsDeterministic(t *testing.T) {
	exp1, msgs1 := runGH(t, ghTestConfig)
	exp2, msgs2 := runGH(t, ghTestConfig)
	if !reflect.DeepEqual(exp1, exp2) || len(msgs1) != len(msgs2) {
		t.Fatal("two runs with the same seed differ")
	}
	for i := range msgs1 {
		a, b := msgs1[i], msgs2[i]
		a.Time, b.Time = time.Time{}, time.Time{}
		if !reflect.DeepEqual(a, b) {
			t.Fatalf("message %d differs:\n%+v\n%+v", i, a, b)
		}
	}
}

// A Publisher without PublishGH cannot send what only the global-hub
// agent's messages carry: Run says so rather than send them wrong.
func TestGlobalHubNeedsGHPublisher(t *testing.T) {
	cfg := ghTestConfig
	cfg.Agent = AgentGlobalHub
	_, err := Run(t.Context(), cfg, &recorder{}, nil)
	if err == nil || !strings.Contains(err.Error(), "PublishGH") {
		t.Fatalf("Run into a plain publisher: %v", err)
	}
}
