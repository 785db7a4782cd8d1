package transport_test

import (
	"bytes"
	"encoding/json"
	"strings"
	"testing"
	"time"

	"github.com/confluentinc/confluent-kafka-go/v2/kafka"

	"github.com/stbridge/stb/dbsyncers"
	"github.com/stbridge/stb/pkg/bundle"
	"github.com/stbridge/stb/pkg/deadletter"
	"github.com/stbridge/stb/pkg/transport"
)

// ghRules are the reader's rules with the decoders of both profiles, as
// the bridge builds them.
func ghRules(t testing.TB) transport.Rules {
	t.Helper()
	reg, err := dbsyncers.ForProfiles(true, true)
	if err != nil {
		t.Fatal(err)
	}
	d := transport.Decoders{}
	for _, ti := range reg.Types() {
		s, _ := reg.Lookup(ti.Name)
		d[ti.Name] = s.Decode
	}
	return transport.Rules{
		TypePrefix: transport.DefaultTypePrefix, VerifySource: true,
		MaxBundleBytes: transport.MinMaxBundleBytes, Decoder: d,
	}
}

var ghTime = time.Date(2026, 8, 3, 10, 0, 0, 0, time.UTC)

// ghEvent is a valid event of each global-hub type, with data shaped as
// the agent sends it.
func ghEvent(topic, hub, typ string) transport.GlobalHubEvent {
	e := transport.GlobalHubEvent{Topic: topic, Hub: hub, Type: typ, ID: hub + "-" + typ, Version: "3.7", Time: ghTime}
	switch typ {
	case "managedhub.heartbeat":
		e.Data = []byte(`[]`)
	case "managedhub.info":
		e.Data = []byte(`{"consoleURL":"https://console-openshift-console.apps.x.com","grafanaURL":"","clusterId":"8606cf88-c711-4dae-ba7e-2e4d54227887"}`)
	case "managedcluster":
		e.Data = []byte(`{"update":[{"kind":"ManagedCluster","metadata":{"name":"c1","uid":"u1"},"status":{"clusterClaims":[{"name":"id.k8s.io","value":"id-c1"}]}}],"delete":[{"id":"id-c2","name":"c2"}]}`)
	case "policy.localcompliance":
		e.Data = []byte(`[{"policyId":"p1","policy_namespaced_name":"default/p1","compliantClusters":["c1"],"nonCompliantClusters":null,"unknownComplianceClusters":null,"pendingComplianceClusters":["c2"]}]`)
	case "policy.localcompletecompliance":
		e.Data = []byte(`[{"policyId":"p1","policy_namespaced_name":"default/p1","nonCompliantClusters":["c1"],"unknownComplianceClusters":null,"pendingComplianceClusters":null}]`)
		e.Dependency = "4.7"
	case "event.localrootpolicy":
		e.Data = []byte(`[{"leafHubName":"` + hub + `","eventName":"p1.17b8","eventNamespace":"ns","message":"propagated","reason":"PolicyPropagation","count":1,"source":{"component":"policy-propagator"},"createdAt":"2024-02-29T03:01:05Z","policyId":"p1","compliance":"Unknown"}]`)
		e.SendMode = "batch"
	case "event.localreplicatedpolicy":
		e.Data = []byte(`{"leafHubName":"` + hub + `","eventName":"ns.p1.17b8","eventNamespace":"c1","message":"NonCompliant","reason":"PolicyStatusSync","count":1,"source":{"component":"policy-status-history-sync"},"createdAt":"2024-02-29T03:01:14Z","policyId":"p1","clusterId":"id-c1","clusterName":"c1","compliance":"NonCompliant"}`)
		e.SendMode = "single"
	case "event.managedcluster":
		e.Data = []byte(`[{"eventNamespace":"c1","eventName":"c1.1870fdff35b3d4bc","clusterName":"c1","clusterId":"id-c1","leafHubName":"` + hub + `","message":"waiting","reason":"WaitForImporting","reportingController":"managedcluster-import-controller","type":"Normal","createdAt":"2025-10-23T02:32:06Z"}]`)
		e.SendMode = "batch"
	}
	return e
}

var ghTypes = []string{
	"managedhub.heartbeat", "managedhub.info", "managedcluster", "policy.localcompliance",
	"policy.localcompletecompliance", "event.localrootpolicy", "event.localreplicatedpolicy", "event.managedcluster",
}

// ghCase is one global-hub message the reader may meet; reason is "" for
// one that must become a bundle.
type ghCase struct {
	name   string
	reason deadletter.Reason
	build  func(t testing.TB, topic, hub string) *kafka.Message
}

func ghEncode(t testing.TB, e transport.GlobalHubEvent) *kafka.Message {
	t.Helper()
	m, err := transport.EncodeGlobalHub(e)
	if err != nil {
		t.Fatal(err)
	}
	return m
}

func ghCases() []ghCase {
	var cases []ghCase
	for _, typ := range ghTypes {
		cases = append(cases, ghCase{typ, "", func(t testing.TB, topic, hub string) *kafka.Message {
			return ghEncode(t, ghEvent(topic, hub, typ))
		}})
	}
	change := func(name string, reason deadletter.Reason, typ string, f func(e *transport.GlobalHubEvent)) ghCase {
		return ghCase{name, reason, func(t testing.TB, topic, hub string) *kafka.Message {
			e := ghEvent(topic, hub, typ)
			f(&e)
			return ghEncode(t, e)
		}}
	}
	cases = append(cases,
		change("heartbeat without data", "", "managedhub.heartbeat", func(e *transport.GlobalHubEvent) { e.Data = nil }),
		change("type the profile does not map", deadletter.UnknownType, "managedhub.heartbeat", func(e *transport.GlobalHubEvent) { e.Type = "policy.localspec" }),
		change("malformed extversion", deadletter.MalformedVersion, "managedcluster", func(e *transport.GlobalHubEvent) { e.Version = "3" }),
		change("complete compliance without extdependencyversion", deadletter.MissingAttribute, "policy.localcompletecompliance", func(e *transport.GlobalHubEvent) { e.Dependency = "" }),
		change("malformed extdependencyversion", deadletter.MalformedVersion, "policy.localcompletecompliance", func(e *transport.GlobalHubEvent) { e.Dependency = "x.1" }),
		change("sendmode single with an array", deadletter.BadPayload, "event.managedcluster", func(e *transport.GlobalHubEvent) { e.SendMode = "single" }),
		change("sendmode batch with an object", deadletter.BadPayload, "event.localreplicatedpolicy", func(e *transport.GlobalHubEvent) { e.SendMode = "batch" }),
		change("events without sendmode are a batch", "", "event.managedcluster", func(e *transport.GlobalHubEvent) { e.SendMode = "" }),
		change("unknown sendmode", deadletter.BadPayload, "event.managedcluster", func(e *transport.GlobalHubEvent) { e.SendMode = "stream" }),
		change("compliance wrapped in objects", deadletter.BadPayload, "policy.localcompliance", func(e *transport.GlobalHubEvent) { e.Data = []byte(`{"objects":[]}`) }),
		change("data over the limit", deadletter.TooLarge, "managedhub.info", func(e *transport.GlobalHubEvent) {
			e.Data = []byte(`{"clusterId":"` + strings.Repeat("x", transport.MinMaxBundleBytes) + `"}`)
		}),
		ghCase{"per-hub topic of another hub", deadletter.SourceMismatch, func(t testing.TB, topic, hub string) *kafka.Message {
			return ghEncode(t, ghEvent("gh-status.other", hub, "managedhub.heartbeat"))
		}},
		ghCase{"type with trailing space", deadletter.UnknownType, func(t testing.TB, topic, hub string) *kafka.Message {
			m := ghEncode(t, ghEvent(topic, hub, "managedhub.heartbeat"))
			setHeader(m, "ce_type", transport.GlobalHubTypePrefix+"managedhub.heartbeat ")
			return m
		}},
		ghCase{"no source", deadletter.MissingAttribute, func(t testing.TB, topic, hub string) *kafka.Message {
			m := ghEncode(t, ghEvent(topic, hub, "managedhub.heartbeat"))
			delHeader(m, "ce_source")
			return m
		}},
		ghCase{"a chunk that was not assembled", deadletter.BadPayload, func(t testing.TB, topic, hub string) *kafka.Message {
			m := ghEncode(t, ghEvent(topic, hub, "managedhub.info"))
			m.Headers = append(m.Headers, kafka.Header{Key: "ce_extsize", Value: []byte("900")}, kafka.Header{Key: "ce_extoffset", Value: []byte("300")})
			return m
		}},
		ghCase{"a chunk of an event over the limit", deadletter.TooLarge, func(t testing.TB, topic, hub string) *kafka.Message {
			m := ghEncode(t, ghEvent(topic, hub, "managedhub.info"))
			m.Headers = append(m.Headers, kafka.Header{Key: "ce_extsize", Value: []byte("90000000")}, kafka.Header{Key: "ce_extoffset", Value: []byte("300")})
			return m
		}},
	)
	return cases
}

func TestGlobalHubDecode(t *testing.T) {
	received := time.Date(2026, 8, 3, 10, 0, 1, 0, time.UTC)
	for i, tc := range ghCases() {
		t.Run(tc.name, func(t *testing.T) {
			hub := "hub-" + string(rune('a'+i))
			topic := "gh-status." + hub
			msg := consumed(tc.build(t, topic, hub), 0, int64(10+i))
			gh := transport.NewGlobalHub()
			b, rej := gh.Decode(msg, ghRules(t), received)
			if tc.reason != "" {
				if b != nil || rej == nil {
					t.Fatalf("got bundle %+v; want reject %s", b, tc.reason)
				}
				if rej.Reason != tc.reason || rej.Err == nil {
					t.Fatalf("reason %q (%v), want %q", rej.Reason, rej.Err, tc.reason)
				}
				if !bytes.Equal(rej.Data, msg.Value) {
					t.Error("reject does not carry the raw data")
				}
				return
			}
			if rej != nil {
				t.Fatalf("rejected (%s): %v", rej.Reason, rej.Err)
			}
			typ, _ := header(msg, "ce_type")
			if b.Hub != hub || b.Type != dbsyncers.GlobalHubTypePrefix+strings.TrimPrefix(typ, transport.GlobalHubTypePrefix) {
				t.Fatalf("bundle of hub %q type %q", b.Hub, b.Type)
			}
			if b.Origin != (bundle.Origin{Topic: topic, Partition: 0, Offset: int64(10 + i)}) || b.Payload == nil || !b.EventTime.Equal(ghTime) {
				t.Fatalf("bundle %+v", b)
			}
			// Agent's version 3.7 in a run this bridge has not seen start:
			// the first event read starts it; ordered by generation, or by
			// value for localcompliance.
			want := bundle.Version{Incarnation: uint64(ghTime.UnixNano()), Generation: 3}
			if strings.HasSuffix(typ, ".policy.localcompliance") {
				want.Generation = 7
			}
			if b.Version != want {
				t.Fatalf("version %v, want %v", b.Version, want)
			}
			if strings.HasSuffix(typ, "localcompletecompliance") && (!b.HasDependency || b.Dependency != (bundle.Version{Generation: 7})) {
				t.Fatalf("dependency %v (%v), want the value 7 of the localcompliance run", b.Dependency, b.HasDependency)
			}
		})
	}
}

// TestGlobalHubSharedTopic: on the shared gh-status topic (or any topic not
// per hub) the source alone names the hub, and the key is the event type.
func TestGlobalHubSharedTopic(t *testing.T) {
	msg := consumed(ghEncode(t, ghEvent("gh-status", "hub1", "managedhub.heartbeat")), 1, 5)
	if string(msg.Key) != transport.GlobalHubTypePrefix+"managedhub.heartbeat" {
		t.Fatalf("key %q: the agent keys by event type", msg.Key)
	}
	b, rej := transport.NewGlobalHub().Decode(msg, ghRules(t), time.Now())
	if rej != nil || b.Hub != "hub1" {
		t.Fatalf("bundle %+v, reject %+v", b, rej)
	}
	// STB's own events still decode through the same entry point.
	stb := consumed(mustEncode(t, validEnvelope("status", "hub2")), 0, 1)
	if b, rej := transport.NewGlobalHub().Decode(stb, ghRules(t), time.Now()); rej != nil || b.Type != "heartbeat" || b.Hub != "hub2" {
		t.Fatalf("STB event: bundle %+v, reject %+v", b, rej)
	}
}

// TestGlobalHubRuns checks the version mapping across agent restarts:
// generation 0 starts a run whose incarnation is its event time; later
// events of the run share it; a restart is newer; late copies of an older
// run stay older; a bridge starting past a run's first event learns it
// from the stored versions.
func TestGlobalHubRuns(t *testing.T) {
	rules := ghRules(t)
	decode := func(gh *transport.GlobalHub, typ, version, dep string, at time.Time) *bundle.Bundle {
		t.Helper()
		e := ghEvent("gh-status.hub1", "hub1", typ)
		e.Version, e.Time, e.Dependency = version, at, dep
		b, rej := gh.Decode(consumed(ghEncode(t, e), 0, 1), rules, time.Now())
		if rej != nil {
			t.Fatalf("%s %s rejected: %v", typ, version, rej.Err)
		}
		return b
	}
	t0 := ghTime
	run1 := uint64(t0.UnixNano())
	gh := transport.NewGlobalHub()
	steps := []struct {
		name, typ, version string
		at                 time.Time
		want               bundle.Version
	}{
		{"first event of a run", "managedcluster", "0.1", t0, bundle.Version{Incarnation: run1, Generation: 0}},
		{"later events share its incarnation", "managedcluster", "1.2", t0.Add(time.Minute), bundle.Version{Incarnation: run1, Generation: 1}},
		{"each type has its own run, the first read starting it", "managedhub.heartbeat", "5.0", t0.Add(time.Minute), bundle.Version{Incarnation: uint64(t0.Add(time.Minute).UnixNano()), Generation: 5}},
		{"a copy made before the run's first read event is stale", "managedhub.heartbeat", "4.0", t0.Add(time.Second), bundle.Version{Incarnation: 0, Generation: 4}},
		{"a lower generation made later starts a run whose first event was not read", "managedhub.heartbeat", "2.0", t0.Add(time.Hour), bundle.Version{Incarnation: uint64(t0.Add(time.Hour).UnixNano()), Generation: 2}},
		{"a restart starts a newer run", "managedcluster", "0.1", t0.Add(time.Hour), bundle.Version{Incarnation: uint64(t0.Add(time.Hour).UnixNano()), Generation: 0}},
		{"a late copy of the old run's first event stays old", "managedcluster", "0.1", t0, bundle.Version{Incarnation: run1, Generation: 0}},
		{"a late copy of the old run's later event is stale", "managedcluster", "7.9", t0.Add(2 * time.Minute), bundle.Version{Incarnation: 0, Generation: 7}},
		{"the new run goes on", "managedcluster", "1.3", t0.Add(time.Hour + time.Minute), bundle.Version{Incarnation: uint64(t0.Add(time.Hour).UnixNano()), Generation: 1}},
	}
	for _, s := range steps {
		if got := decode(gh, s.typ, s.version, "", s.at).Version; got != s.want {
			t.Fatalf("%s: version %v, want %v", s.name, got, s.want)
		}
	}
	if !(bundle.Version{Incarnation: uint64(t0.Add(time.Hour).UnixNano())}).Newer(bundle.Version{Incarnation: run1, Generation: 1 << 40}) {
		t.Fatal("a restart is not newer than any version of the run before")
	}

	// localcompliance is ordered by value, and localcompletecompliance
	// names it by value in the compliance's current run.
	lc := decode(gh, "policy.localcompliance", "0.4", "", t0)
	if lc.Version != (bundle.Version{Incarnation: run1, Generation: 4}) {
		t.Fatalf("localcompliance version %v", lc.Version)
	}
	cc := decode(gh, "policy.localcompletecompliance", "0.1", "1.4", t0.Add(time.Second))
	if !cc.HasDependency || cc.Dependency != lc.Version {
		t.Fatalf("complete compliance depends on %v, want %v", cc.Dependency, lc.Version)
	}

	// A complete compliance made before the compliance's next run started
	// names the value in the run it was made in, even when read after the
	// next run's first event (another partition, or a replay).
	lc2 := decode(gh, "policy.localcompliance", "0.1", "", t0.Add(time.Hour))
	if lc2.Version != (bundle.Version{Incarnation: uint64(t0.Add(time.Hour).UnixNano()), Generation: 1}) {
		t.Fatalf("localcompliance of the next run: version %v", lc2.Version)
	}
	if late := decode(gh, "policy.localcompletecompliance", "1.2", "1.4", t0.Add(2*time.Second)); late.Dependency != lc.Version {
		t.Fatalf("complete compliance made in the first run depends on %v, want %v", late.Dependency, lc.Version)
	}

	// A bridge restarted past the run's first event learns the run from
	// status.bundle_versions.
	fresh := transport.NewGlobalHub()
	fresh.Restore("hub1", dbsyncers.GHLocalCompliance, lc.Version)
	fresh.Restore("hub1", "compliance", bundle.Version{Incarnation: 99}) // not a global-hub type: ignored
	if got := decode(fresh, "policy.localcompliance", "3.9", "", t0.Add(time.Minute)).Version; got != (bundle.Version{Incarnation: run1, Generation: 9}) {
		t.Fatalf("after Restore: version %v", got)
	}
	if got := decode(fresh, "policy.localcompletecompliance", "2.1", "4.9", t0.Add(time.Minute)).Dependency; got != (bundle.Version{Incarnation: run1, Generation: 9}) {
		t.Fatalf("after Restore: dependency %v", got)
	}

	// A replay from an older stored offset, into a bridge that restored a
	// newer run: a complete compliance of an earlier run must not meet the
	// newer run's compliance of the same value (it was computed on another
	// placement). Before any earlier run is read it depends on nothing
	// processed (incarnation 0: stale); once the earlier run's first event
	// is read again, on that run.
	replay := transport.NewGlobalHub()
	replay.Restore("hub1", dbsyncers.GHLocalCompliance, lc2.Version)
	if got := decode(replay, "policy.localcompletecompliance", "0.1", "0.4", t0.Add(time.Second)).Dependency; got != (bundle.Version{Generation: 4}) {
		t.Fatalf("replayed complete compliance of an earlier run depends on %v, want incarnation 0", got)
	}
	if got := decode(replay, "policy.localcompliance", "0.4", "", t0).Version; got != lc.Version {
		t.Fatalf("replayed first event of the earlier run: version %v, want %v", got, lc.Version)
	}
	if got := decode(replay, "policy.localcompletecompliance", "0.1", "0.4", t0.Add(time.Second)).Dependency; got != lc.Version {
		t.Fatalf("replayed complete compliance depends on %v, want %v", got, lc.Version)
	}
}

// TestChunkGlobalHub checks the chunks the encoder makes, as the agent's
// producer does: one event id, extsize the whole length, extoffset where
// each chunk ends.
func TestChunkGlobalHub(t *testing.T) {
	e := ghEvent("gh-status.hub1", "hub1", "policy.localcompliance")
	msgs, err := transport.ChunkGlobalHub(e, 40)
	if err != nil {
		t.Fatal(err)
	}
	var joined []byte
	for i, m := range msgs {
		size, _ := header(m, "ce_extsize")
		end, _ := header(m, "ce_extoffset")
		id, _ := header(m, "ce_id")
		joined = append(joined, m.Value...)
		if size != itoa(len(e.Data)) || end != itoa(len(joined)) || id != e.ID {
			t.Fatalf("chunk %d: extsize %s extoffset %s id %s", i, size, end, id)
		}
	}
	if !bytes.Equal(joined, e.Data) || len(msgs) != (len(e.Data)+39)/40 {
		t.Fatalf("%d chunks joining to %q", len(msgs), joined)
	}
	if !json.Valid(joined) {
		t.Fatal("the chunks do not join to the data")
	}
}

func itoa(n int) string {
	b, _ := json.Marshal(n)
	return string(b)
}

// FuzzGlobalHubDecode: the profile's decoding never panics and returns
// exactly one of a bundle and a reject; a bundle is of a global-hub type
// whose hub is the source (or STB's own). Seeded with every case above.
func FuzzGlobalHubDecode(f *testing.F) {
	for i, c := range ghCases() {
		m := c.build(f, "gh-status.hub1", "hub1")
		f.Add(*m.TopicPartition.Topic, int32(0), int64(i), m.Key, m.Value, packHeaders(m.Headers))
	}
	rules := ghRules(f)
	f.Fuzz(func(t *testing.T, topic string, partition int32, offset int64, key, value, headers []byte) {
		msg := &kafka.Message{
			TopicPartition: kafka.TopicPartition{Topic: &topic, Partition: partition, Offset: kafka.Offset(offset)},
			Key:            key, Value: value, Headers: unpackHeaders(headers),
		}
		b, rej := transport.NewGlobalHub().Decode(msg, rules, time.Now())
		if (b == nil) == (rej == nil) {
			t.Fatalf("bundle %v and reject %v: want exactly one", b, rej)
		}
		if rej != nil {
			if rej.Reason == "" || rej.Err == nil {
				t.Fatalf("reject without reason or error: %+v", rej)
			}
			return
		}
		if b.Hub == "" || b.Payload == nil || b.Size > rules.MaxBundleBytes {
			t.Fatalf("bundle breaks the rules: %+v", b)
		}
		if h, ok := strings.CutPrefix(topic, transport.GlobalHubTopicPrefix); ok && strings.HasPrefix(b.Type, dbsyncers.GlobalHubTypePrefix) && h != b.Hub {
			t.Fatalf("bundle of hub %q from topic %q", b.Hub, topic)
		}
	})
}
