package transport_test

import (
	"bytes"
	"encoding/json"
	"strconv"
	"strings"
	"testing"
	"time"

	"github.com/confluentinc/confluent-kafka-go/v2/kafka"

	"github.com/stbridge/stb/dbsyncers"
	"github.com/stbridge/stb/pkg/bundle"
	"github.com/stbridge/stb/pkg/bundle/globalhub"
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
	case "policy.localspec":
		// pkg/bundle/generic/generic_bundle.go; a Policy with its status
		// cleared (agent/pkg/status/syncers/policies).
		e.Data = []byte(`{"resync":[{"apiVersion":"policy.open-cluster-management.io/v1","kind":"Policy","metadata":{"name":"p1","namespace":"default","uid":"9e1c3a2e-4c53-4b0e-9b7f-1f3c2b7e8a11"},"spec":{"disabled":false},"status":{}}]}`)
	case "security.alertcounts":
		// pkg/wire/models/security.go: counts omitempty.
		e.Data = []byte(`{"low":2,"high":1,"detail_url":"https://central-stackrox.apps.x.com/main/violations","source":"stackrox/central"}`)
	case "managedclustermigration":
		// pkg/bundle/migration: id and stage are extensions.
		e.Data = []byte(`{"managedClusters":["c1","c2"]}`)
		e.Extensions = map[string]string{"migrationid": "0b2a6a55-6e8c-4e0f-b8b6-0d7b0ff4b5a1", "migrationstage": "Validating", "clustername": "global-hub"}
	case "event.managedcluster":
		e.Data = []byte(`[{"eventNamespace":"c1","eventName":"c1.1870fdff35b3d4bc","clusterName":"c1","clusterId":"id-c1","leafHubName":"` + hub + `","message":"waiting","reason":"WaitForImporting","reportingController":"managedcluster-import-controller","type":"Normal","createdAt":"2025-10-23T02:32:06Z"}]`)
		e.SendMode = "batch"
	}
	return e
}

var ghTypes = []string{
	"managedhub.heartbeat", "managedhub.info", "managedcluster", "policy.localcompliance",
	"policy.localcompletecompliance", "event.localrootpolicy", "event.localreplicatedpolicy", "event.managedcluster",
	"policy.localspec", "security.alertcounts", "managedclustermigration",
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
		change("type the profile does not map", deadletter.UnknownType, "managedhub.heartbeat", func(e *transport.GlobalHubEvent) { e.Type = "policy.minicompliance" }),
		change("malformed extversion", deadletter.MalformedVersion, "managedcluster", func(e *transport.GlobalHubEvent) { e.Version = "3" }),
		change("complete compliance without extdependencyversion", deadletter.MissingAttribute, "policy.localcompletecompliance", func(e *transport.GlobalHubEvent) { e.Dependency = "" }),
		change("malformed extdependencyversion", deadletter.MalformedVersion, "policy.localcompletecompliance", func(e *transport.GlobalHubEvent) { e.Dependency = "x.1" }),
		change("sendmode single with an array", deadletter.BadPayload, "event.managedcluster", func(e *transport.GlobalHubEvent) { e.SendMode = "single" }),
		change("sendmode batch with an object", deadletter.BadPayload, "event.localreplicatedpolicy", func(e *transport.GlobalHubEvent) { e.SendMode = "batch" }),
		change("events without sendmode are a batch", "", "event.managedcluster", func(e *transport.GlobalHubEvent) { e.SendMode = "" }),
		change("unknown sendmode", deadletter.BadPayload, "event.managedcluster", func(e *transport.GlobalHubEvent) { e.SendMode = "stream" }),
		// Taken raw when read, refused when written (dbsyncers).
		change("compliance wrapped in objects", "", "policy.localcompliance", func(e *transport.GlobalHubEvent) { e.Data = []byte(`{"objects":[]}`) }),
		// A hub info is decoded when read, as only its data says whether
		// it is ignored: a bad one is still rejected then.
		change("hub info not an object", deadletter.BadPayload, "managedhub.info", func(e *transport.GlobalHubEvent) { e.Data = []byte(`[]`) }),
		change("data over the limit", deadletter.TooLarge, "managedhub.info", func(e *transport.GlobalHubEvent) {
			e.Data = []byte(`{"clusterId":"` + strings.Repeat("x", transport.GlobalHubAgentMaxBytes) + `"}`)
		}),
		// On a per-hub topic the hub is the topic's suffix (upstream:
		// pkg/transport/identity/identity.go, HubFromStatusTopic;
		// identity_test.go, TestHubFromStatusTopic "per-hub topic").
		ghCase{"per-hub topic of another hub", deadletter.SourceMismatch, func(t testing.TB, topic, hub string) *kafka.Message {
			return ghEncode(t, ghEvent("gh-status.other", hub, "managedhub.heartbeat"))
		}},
		ghCase{"type with trailing space", deadletter.UnknownType, func(t testing.TB, topic, hub string) *kafka.Message {
			m := ghEncode(t, ghEvent(topic, hub, "managedhub.heartbeat"))
			setHeader(m, "ce_type", transport.GlobalHubEventTypePrefix+"managedhub.heartbeat ")
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
	for _, c := range authedHubCases() {
		cases = append(cases, ghCase{c.name, c.reason, func(t testing.TB, topic, hub string) *kafka.Message {
			return ghEncode(t, c.event(topic, hub))
		}})
	}
	return cases
}

func TestGlobalHubDecode(t *testing.T) {
	received := time.Date(2026, 8, 3, 10, 0, 1, 0, time.UTC)
	for i, tc := range ghCases() {
		t.Run(tc.name, func(t *testing.T) {
			hub := "hub-" + strconv.Itoa(i) // as many as there are cases
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
			if b.Hub != hub || b.Type != bundle.GlobalHubPrefix+strings.TrimPrefix(typ, transport.GlobalHubEventTypePrefix) {
				t.Fatalf("bundle of hub %q type %q", b.Hub, b.Type)
			}
			if b.Origin != (bundle.Origin{Topic: *msg.TopicPartition.Topic, Partition: 0, Offset: int64(10 + i)}) || !b.EventTime.Equal(ghTime) || b.Size != len(b.Raw) {
				t.Fatalf("bundle %+v", b)
			}
			// The bundle's data is the event's as it came; what the event
			// says beside it, the family keeps in Attrs (upstream's
			// pkg/bundle/migration sends the migration's id and stage as
			// extensions).
			if !bytes.Equal(b.Raw, msg.Value) {
				t.Fatalf("bundle data %s, want the event's %s", b.Raw, msg.Value)
			}
			if strings.HasSuffix(typ, "managedclustermigration") {
				if a, ok := b.Attrs.(*globalhub.MigrationAttrs); !ok || *a != (globalhub.MigrationAttrs{ID: "0b2a6a55-6e8c-4e0f-b8b6-0d7b0ff4b5a1", Stage: "Validating"}) {
					t.Fatalf("migration attributes %#v, want the extensions'", b.Attrs)
				}
			} else if b.Attrs != nil {
				t.Fatalf("%s bundle with attributes %#v", b.Type, b.Attrs)
			}
			// Only a hub info is decoded when read (it may be one to
			// ignore); the others keep their data for the worker.
			if isInfo := b.Type == dbsyncers.GHHubInfo; (b.Payload != nil) != isInfo {
				t.Fatalf("%s bundle read with payload %T", b.Type, b.Payload)
			}
			// Agent's version 3.7, the first read of its type: run 1, then
			// the generation and the value.
			want := bundle.Version{Incarnation: 1<<32 | 3, Generation: 7}
			if b.Version != want {
				t.Fatalf("version %v, want %v", b.Version, want)
			}
			// extdependencyversion 4.7 is the compliance emitter's version
			// after it sent 3.7 (generic_emitter.go: PostSend calls Next).
			if strings.HasSuffix(typ, "localcompletecompliance") && (!b.HasDependency || b.Dependency != (bundle.Version{Incarnation: 1<<32 | 3, Generation: 7})) {
				t.Fatalf("dependency %v (%v), want the localcompliance 3.7 of run 1", b.Dependency, b.HasDependency)
			}
		})
	}
}

// TestGlobalHubSkipsTypesNotStored: event.clustergroupupgrade is a type
// the agent sends (agent/pkg/status/syncers/events/
// clustergroupupgrade_event_emitter.go) and upstream's manager registers
// no handler for; an info without clusterId is one its manager ignores
// (manager/pkg/status/handlers/managedhub/hub_cluster_info_handler.go).
// Both are skipped, counted, and never dead letters: a healthy agent must
// not page anyone.
func TestGlobalHubSkipsTypesNotStored(t *testing.T) {
	cgu := ghEvent("gh-status.hub1", "hub1", "event.managedcluster")
	cgu.Type = "event.clustergroupupgrade"
	cgu.Data = []byte(`[{"eventNamespace":"ztp-install","eventName":"cgu-1.17f","eventAnnotations":{},"cguName":"cgu-1","leafHubName":"hub1","message":"completed","reason":"CguSuccess","reportingController":"cgu-controller","reportingInstance":"","type":"Normal","createdAt":"2025-10-23T02:32:06Z"}]`)
	info := ghEvent("gh-status.hub1", "hub1", "managedhub.info")
	info.Data = []byte(`{"consoleURL":"https://console-openshift-console.apps.x.com","grafanaURL":"","mchVersion":"","clusterId":""}`)
	for i, e := range []transport.GlobalHubEvent{cgu, info} {
		b, rej := transport.NewGlobalHub().Decode(consumed(ghEncode(t, e), 0, int64(i)), ghRules(t), time.Now())
		if b != nil || rej == nil || !rej.Skipped || rej.Reason != "" {
			t.Fatalf("%s: bundle %+v, reject %+v; want skipped, no reason", e.Type, b, rej)
		}
	}
}

// TestGlobalHubSharedTopic: on the shared gh-status topic (or any topic not
// per hub) the source alone names the hub, and the key is the event type.
func TestGlobalHubSharedTopic(t *testing.T) {
	msg := consumed(ghEncode(t, ghEvent("gh-status", "hub1", "managedhub.heartbeat")), 1, 5)
	if string(msg.Key) != transport.GlobalHubEventTypePrefix+"managedhub.heartbeat" {
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

// ghRead is one event of hub1 as the agent sends it, read at an offset of
// partition 0 of gh-status.hub1.
type ghRead struct {
	typ, version, dep, id string
	offset                int64
	at                    time.Time
}

func (r ghRead) decode(t *testing.T, gh *transport.GlobalHub) *bundle.Bundle {
	t.Helper()
	e := ghEvent("gh-status.hub1", "hub1", r.typ)
	e.Version, e.ID, e.Time = r.version, r.id, r.at
	if r.dep != "" {
		e.Dependency = r.dep
	}
	b, rej := gh.Decode(consumed(ghEncode(t, e), 0, r.offset), ghRules(t), time.Now())
	if rej != nil {
		t.Fatalf("%s %s (%s) rejected: %v", r.typ, r.version, r.id, rej.Err)
	}
	return b
}

// TestGlobalHubRunsWithoutClocks: the agent's versions start again at 0.0
// when it restarts (pkg/bundle/version/version.go: NewVersion is 0.0;
// Incr adds to the value, Next to the generation), and the restarted
// agent's clock may be behind the old one's. A run is newer than every run
// read before it in its partition whatever ce_time says: an event older
// than the newest one read, with an id never read, starts a run; the same
// id read again is a copy (a producer retry, a late copy) and stale, so it
// can never take the database back.
func TestGlobalHubRunsWithoutClocks(t *testing.T) {
	gh := transport.NewGlobalHub()
	t0 := ghTime
	mc := func(version, id string, offset int64, at time.Time) bundle.Version {
		return ghRead{typ: "managedcluster", version: version, id: id, offset: offset, at: at}.decode(t, gh).Version
	}
	first := mc("0.3", "a", 1, t0)
	later := mc("4.9", "b", 2, t0.Add(20*time.Second))
	if !later.Newer(first) {
		t.Fatalf("4.9 (%v) is not newer than 0.3 (%v) in one run", later, first)
	}
	// The restarted agent's clock is 20 s behind: its first event says it
	// was made before the old run's last one. It is still the newer run.
	restart := mc("0.1", "c", 3, t0.Add(10*time.Second))
	if !restart.Newer(later) {
		t.Fatalf("the restarted agent's 0.1 (%v) is not newer than the old run's 4.9 (%v)", restart, later)
	}
	// A late copy of the old run's first event (same id) is older than
	// the new run, and so is a copy of its last one: upstream's manager,
	// resetting on any generation 0, would take the first back
	// (manager/pkg/status/conflator/element_complete.go: InitGen resets).
	if v := mc("0.3", "a", 4, t0); !restart.Newer(v) {
		t.Fatalf("a late copy of the old run's first event maps to %v, not older than the new run's %v", v, restart)
	}
	if v := mc("4.9", "b", 5, t0.Add(20*time.Second)); !restart.Newer(v) {
		t.Fatalf("a late copy of the old run's last event maps to %v, not older than the new run's %v", v, restart)
	}
	// Frames of one resync share one extversion
	// (agent/pkg/status/emitters/object_emitter.go: Resync never calls
	// Incr or Next): each maps to the same version, which the type takes
	// again (TakesEqual), not stale.
	f1 := mc("1.4", "f1", 6, t0.Add(time.Minute))
	f2 := mc("1.4", "f2", 7, t0.Add(time.Minute))
	meta := mc("1.4", "f3", 8, t0.Add(time.Minute))
	if f1 != f2 || f2 != meta || !f1.Newer(restart) {
		t.Fatalf("resync frames map to %v, %v, %v; want one version newer than %v", f1, f2, meta, restart)
	}
	// A late copy of one of an old run's start frames, long after (more
	// events than the ids read last are kept for), is still a copy.
	gh2 := transport.NewGlobalHub()
	mc2 := func(version, id string, offset int64) bundle.Version {
		return ghRead{typ: "managedcluster", version: version, id: id, offset: offset, at: t0}.decode(t, gh2).Version
	}
	mc2("0.3", "s1", 1)
	mc2("0.3", "s2", 2)
	mc2("4.9", "u1", 3)
	newRun := mc2("0.1", "n1", 4)
	for i := range 80 {
		mc2("1."+strconv.Itoa(2+i), "n-"+strconv.Itoa(i), int64(5+i))
	}
	if v := mc2("0.3", "s2", 200); !newRun.Newer(v) {
		t.Fatalf("a late copy of an old run's second start frame, 80 events later, maps to %v, not older than the new run's %v", v, newRun)
	}
	info := bundle.TypeInfo{Name: "globalhub.managedcluster", Kind: bundle.Stream, TakesEqual: true}
	if info.Stale(f2, f1) || !info.Stale(restart, f1) {
		t.Fatal("a type taking equal versions must take an equal one and drop an older one")
	}
}

// TestGlobalHubCopyOfRunStartFrame: a run's start-up resync is several
// frames with one extversion, 0.0 (agent/pkg/status/emitters/
// object_emitter.go: Resync sends every frame before it calls Next, and
// NewVersion is 0.0), and the manager applies each (element_hybrid.go
// takes generation ≥ processed). A late copy of the first frame read after
// the later ones carries that same version; it must be stale, as every
// other copy is, or the type, which takes equal versions, writes the first
// frame's objects again over what the later frames and events said. Found
// by the full-size global-hub bench (hub-0095: a local policy's
// metadata.generation 5, want 6; hub-0795: a cluster's labels 126, want
// 128): the copy of a run's first event kept its version.
func TestGlobalHubCopyOfRunStartFrame(t *testing.T) {
	for _, typ := range []string{"managedcluster", "policy.localspec"} {
		t.Run(typ, func(t *testing.T) {
			gh := transport.NewGlobalHub()
			read := func(version, id string, offset int64) bundle.Version {
				return ghRead{typ: typ, version: version, id: id, offset: offset, at: ghTime}.decode(t, gh).Version
			}
			read("3.7", "old-run", 1)
			f1 := read("0.0", "frame-1", 2)
			f2 := read("0.0", "frame-2", 3)
			meta := read("0.0", "frame-meta", 4)
			if f1 != f2 || f2 != meta {
				t.Fatalf("the start frames map to %v, %v, %v; want one version", f1, f2, meta)
			}
			info := bundle.TypeInfo{Name: bundle.GlobalHubPrefix + typ, Kind: bundle.Stream, TakesEqual: true}
			if v := read("0.0", "frame-1", 5); !info.Stale(v, meta) {
				t.Fatalf("a copy of the run's first frame, read after the others, maps to %v: taken after %v", v, meta)
			}
			if v := read("1.1", "next", 6); !v.Newer(meta) {
				t.Fatalf("the run's next event maps to %v, not newer than its frames' %v", v, meta)
			}
		})
	}
}

// TestGlobalHubRestoreAndReplay: a bridge that starts again restores the
// run from stb.bundle_versions (version, where the event was read, the
// runs' first ids). Events it reads again, at or before that offset, are
// not restarts (their ids are new to it); a late copy of a run's first
// event is known by its stored id; a real restart is still newer.
func TestGlobalHubRestoreAndReplay(t *testing.T) {
	t0 := ghTime
	before := transport.NewGlobalHub()
	var last *bundle.Bundle
	for i, r := range []ghRead{
		{typ: "managedcluster", version: "0.2", id: "r1-0", offset: 10, at: t0},
		{typ: "managedcluster", version: "5.6", id: "r1-1", offset: 11, at: t0},
		{typ: "managedcluster", version: "0.1", id: "r2-0", offset: 12, at: t0.Add(-time.Minute)},
		{typ: "managedcluster", version: "3.2", id: "r2-1", offset: 13, at: t0},
	} {
		last = r.decode(t, before)
		if i == 2 && last.RunID != "r2-0" {
			t.Fatalf("the restart's bundle carries run id %q, want r2-0", last.RunID)
		}
	}
	gh := transport.NewGlobalHub()
	gh.RestoreRuns("hub1", dbsyncers.GHManagedCluster, last.Version, last.Origin, []string{"r1-0", "r2-0"}, nil)
	gh.RestoreRuns("hub1", "compliance", bundle.Version{Incarnation: 99}, bundle.Origin{}, nil, nil) // not a global-hub type: ignored
	for _, r := range []ghRead{
		{typ: "managedcluster", version: "5.6", id: "r1-1", offset: 11, at: t0},
		{typ: "managedcluster", version: "0.1", id: "r2-0", offset: 12, at: t0},
	} {
		if v := r.decode(t, gh).Version; v.Compare(last.Version) >= 0 {
			t.Fatalf("%s read again at offset %d maps to %v, not older than the stored %v", r.id, r.offset, v, last.Version)
		}
	}
	if v := (ghRead{typ: "managedcluster", version: "3.2", id: "r2-1", offset: 14, at: t0}).decode(t, gh).Version; v != last.Version {
		t.Fatalf("a copy of the stored event maps to %v, want %v", v, last.Version)
	}
	if v := (ghRead{typ: "managedcluster", version: "0.2", id: "r1-0", offset: 15, at: t0}).decode(t, gh).Version; !last.Version.Newer(v) {
		t.Fatalf("a late copy of an earlier run's first event maps to %v, not older than %v", v, last.Version)
	}
	if v := (ghRead{typ: "managedcluster", version: "4.1", id: "r2-2", offset: 16, at: t0}).decode(t, gh).Version; !v.Newer(last.Version) {
		t.Fatalf("the run's next event maps to %v, not newer than %v", v, last.Version)
	}
	if v := (ghRead{typ: "managedcluster", version: "0.0", id: "r3-0", offset: 17, at: t0.Add(-time.Hour)}).decode(t, gh).Version; !v.Newer(last.Version) {
		t.Fatalf("a restart maps to %v, not newer than %v", v, last.Version)
	}

	// localcompliance's generation moves only after a send
	// (agent/pkg/status/generic/generic_emitter.go: PostSend calls Next),
	// so its runs start at generation 0: a late copy of an earlier event
	// of the run, whose original this process never read, is stale, not
	// a restart (which would take the compliance back and leave the
	// complete compliance waiting on the wrong run).
	lc := ghRead{typ: "policy.localcompliance", version: "6.9", id: "lc-9", offset: 30, at: t0}.decode(t, before)
	gh.RestoreRuns("hub1", dbsyncers.GHLocalCompliance, lc.Version, lc.Origin, []string{"lc-0"}, nil)
	if v := (ghRead{typ: "policy.localcompliance", version: "3.5", id: "lc-5", offset: 31, at: t0}).decode(t, gh).Version; !lc.Version.Newer(v) {
		t.Fatalf("a copy of an earlier localcompliance maps to %v, not older than %v", v, lc.Version)
	}
	if v := (ghRead{typ: "policy.localcompliance", version: "0.1", id: "lc-r", offset: 32, at: t0}).decode(t, gh).Version; !v.Newer(lc.Version) {
		t.Fatalf("a restart of localcompliance maps to %v, not newer than %v", v, lc.Version)
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
			if rej.Skipped && rej.Reason == "" && rej.Err != nil {
				return // a type known and not stored
			}
			if rej.Reason == "" || rej.Err == nil {
				t.Fatalf("reject without reason or error: %+v", rej)
			}
			return
		}
		if b.Hub == "" || (b.Payload != nil) != (b.Type == dbsyncers.GHHubInfo) || b.Size != len(b.Raw) || b.Size > transport.GlobalHubMaxBundleBytes(rules.MaxBundleBytes) {
			t.Fatalf("bundle breaks the rules: %+v", b)
		}
		if h, ok := strings.CutPrefix(topic, transport.GlobalHubTopicPrefix); ok && strings.HasPrefix(b.Type, bundle.GlobalHubPrefix) && h != b.Hub {
			t.Fatalf("bundle of hub %q from topic %q", b.Hub, topic)
		}
	})
}

// TestGlobalHubRestoredResyncFrames: a periodic resync (every 6 h,
// agent/pkg/status/emitters/object_emitter.go) sends its frames at one
// extversion, the run's newest, and the manager applies each
// (element_hybrid.go). A late copy of its first frame read after the
// others, just after a restart of the bridge (whose ids read last are
// gone), must still be a copy: the frames' ids are stored with the
// version. Without them the copy was taken at that version and wrote the
// first frame over the later ones (TestGlobalHubAgent, with the bridge
// restarted after its first commit, ended once with hub-009's local
// policy one generation behind).
func TestGlobalHubRestoredResyncFrames(t *testing.T) {
	before := transport.NewGlobalHub()
	var frames []int64
	var last *bundle.Bundle
	for _, r := range []ghRead{
		{typ: "policy.localspec", version: "0.0", id: "start", offset: 10, at: ghTime},
		{typ: "policy.localspec", version: "2.5", id: "update", offset: 11, at: ghTime},
		{typ: "policy.localspec", version: "3.7", id: "resync-1", offset: 12, at: ghTime},
		{typ: "policy.localspec", version: "3.7", id: "resync-2", offset: 13, at: ghTime},
	} {
		last = r.decode(t, before)
		if last.StartFrame != 0 {
			frames = append(frames, last.StartFrame)
		}
	}
	info := bundle.TypeInfo{Name: dbsyncers.GHLocalSpec, Kind: bundle.Stream, TakesEqual: true}
	for _, withFrames := range []bool{true, false} {
		gh := transport.NewGlobalHub()
		restored := frames
		if !withFrames {
			restored = nil
		}
		gh.RestoreRuns("hub1", dbsyncers.GHLocalSpec, last.Version, last.Origin, []string{"start"}, restored)
		v := (ghRead{typ: "policy.localspec", version: "3.7", id: "resync-1", offset: 20, at: ghTime}).decode(t, gh).Version
		if stale := info.Stale(v, last.Version); stale != withFrames {
			t.Errorf("frames restored %v: a late copy of the resync's first frame maps to %v against the stored %v (stale %v)", withFrames, v, last.Version, stale)
		}
	}
}

// TestGlobalHubRestoredStartFrames: a resync the agent sends when it starts
// is several frames at the run's first version
// (agent/pkg/status/emitters/object_emitter.go); the frames other than the
// first carry StartFrame, which stb.bundle_versions keeps. A bridge
// that starts again and restores them takes a late copy of such a frame of
// an earlier run for a copy: stale, not a restart of the agent that would
// take the clusters back (seen: a managed cluster's labels taken back by
// a copy of an earlier run's resync frame read just after a restart of
// the bridge on the shared backlog).
func TestGlobalHubRestoredStartFrames(t *testing.T) {
	t0 := ghTime
	before := transport.NewGlobalHub()
	var frames []int64
	var last *bundle.Bundle
	for _, r := range []ghRead{
		{typ: "managedcluster", version: "0.0", id: "r1-start", offset: 10, at: t0},
		{typ: "managedcluster", version: "0.0", id: "r1-frame", offset: 11, at: t0},
		{typ: "managedcluster", version: "2.5", id: "r1-update", offset: 12, at: t0},
		{typ: "managedcluster", version: "0.0", id: "r2-start", offset: 13, at: t0},
		{typ: "managedcluster", version: "0.0", id: "r2-frame", offset: 14, at: t0},
		{typ: "managedcluster", version: "3.9", id: "r2-update", offset: 15, at: t0},
	} {
		last = r.decode(t, before)
		if strings.HasSuffix(r.id, "-start") != (last.StartFrame == 0) {
			t.Fatalf("%s: StartFrame %d", r.id, last.StartFrame)
		}
		if last.StartFrame != 0 {
			frames = append(frames, last.StartFrame)
		}
	}
	for _, withFrames := range []bool{true, false} {
		gh := transport.NewGlobalHub()
		restored := frames
		if !withFrames {
			restored = nil
		}
		gh.RestoreRuns("hub1", dbsyncers.GHManagedCluster, last.Version, last.Origin, []string{"r1-start", "r2-start"}, restored)
		v := (ghRead{typ: "managedcluster", version: "0.0", id: "r1-frame", offset: 20, at: t0}).decode(t, gh).Version
		if stale := !v.Newer(last.Version); stale != withFrames {
			t.Errorf("frames restored %v: a late copy of an earlier run's frame maps to %v against the stored %v", withFrames, v, last.Version)
		}
	}
}
