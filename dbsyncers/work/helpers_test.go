package work_test

import (
	"context"
	"encoding/json"
	"fmt"
	"testing"
	"time"

	"github.com/cloudevents/sdk-go/protocol/kafka_confluent/v2"
	"github.com/cloudevents/sdk-go/v2/binding"
	"github.com/cloudevents/sdk-go/v2/event"
	"github.com/confluentinc/confluent-kafka-go/v2/kafka"

	"github.com/stbridge/stb/dbsyncers"
	"github.com/stbridge/stb/dbsyncers/work"
	"github.com/stbridge/stb/pkg/bundle"
	"github.com/stbridge/stb/pkg/transport"
)

// agentStatus describes one status event of a work agent; statusEvent
// builds it as sdk-go builds it.
type agentStatus struct {
	typ        string // default work.UpdateRequest
	cluster    string
	source     string // originalsource
	resourceID string
	generation int64
	seq        string // sequenceid; "" leaves it out
	conditions []map[string]any
	noHash     bool
	noMeta     bool
	ext        map[string]any // set last: overrides, or nil to delete
	data       *string        // raw data instead of the status
}

var baseTime = time.Date(2026, 5, 6, 7, 8, 9, 0, time.UTC)

// statusEvent builds the event the agent codec sends for a ManifestWork's
// status: open-cluster-management-io/sdk-go
// pkg/cloudevents/clients/work/agent/codec/manifestbundle.go (Encode) with
// pkg/cloudevents/generic/types/types.go (EventBuilder.NewEvent): a
// CloudEvents 1.0 event with id, type, time, source (the agent), the
// extensions clustername, originalsource, resourceid, resourceversion
// (an int64 set with SetExtension, which CloudEvents keeps as an Integer),
// sequenceid (snowflake node 1, in decimal), statushash (sha256 hex of the
// work's status) and metadata (the work's ObjectMeta as JSON), and data a
// payload.ManifestBundleStatus {conditions, resourceStatus}
// (pkg/cloudevents/clients/work/payload/manifestbundle.go) whose
// resourceStatus items are work/v1 ManifestCondition.
func statusEvent(t testing.TB, s agentStatus) event.Event {
	t.Helper()
	if s.typ == "" {
		s.typ = work.UpdateRequest
	}
	ev := event.New()
	ev.SetID(fmt.Sprintf("%s-%s-%s", s.resourceID, s.seq, s.typ))
	ev.SetType(s.typ)
	ev.SetTime(baseTime)
	ev.SetSource(s.cluster + "-work-agent")
	ev.SetExtension(work.ExtClusterName, s.cluster)
	ev.SetExtension(work.ExtOriginalSource, s.source)
	ev.SetExtension(work.ExtResourceID, s.resourceID)
	ev.SetExtension(work.ExtResourceVersion, s.generation)
	if s.seq != "" {
		ev.SetExtension(work.ExtSequenceID, s.seq)
	}
	if !s.noHash {
		ev.SetExtension(work.ExtStatusHash, "9f86d081884c7d659a2feaa0c55ad015a3bf4f1b2b0b822cd15d6c15b0f00a08")
	}
	if !s.noMeta {
		ev.SetExtension(work.ExtMetadata, fmt.Sprintf(`{"name":%q,"namespace":%q,"uid":%q,"generation":%d,"labels":{"cloudevents.open-cluster-management.io/originalsource":%q}}`,
			s.resourceID, s.cluster, s.resourceID, s.generation, s.source))
	}
	for k, v := range s.ext {
		if v == nil {
			if err := ev.Context.SetExtension(k, nil); err != nil {
				t.Fatal(err)
			}
			continue
		}
		ev.SetExtension(k, v)
	}
	if s.data != nil {
		if err := ev.SetData(event.ApplicationJSON, []byte(*s.data)); err != nil {
			t.Fatal(err)
		}
		return ev
	}
	conds := s.conditions
	if conds == nil {
		conds = []map[string]any{{"type": "Applied", "status": "True", "reason": "AppliedManifestComplete",
			"message": "Apply manifest complete", "lastTransitionTime": "2026-05-06T07:08:09Z", "observedGeneration": s.generation}}
	}
	status := map[string]any{
		"conditions": conds,
		"resourceStatus": []map[string]any{{
			"resourceMeta": map[string]any{"ordinal": 0, "group": "apps", "version": "v1", "kind": "Deployment",
				"resource": "deployments", "name": "web", "namespace": "default"},
			"statusFeedback": map[string]any{"values": []map[string]any{
				{"name": "ReadyReplicas", "fieldValue": map[string]any{"type": "Integer", "integer": 3}},
				{"name": "status", "fieldValue": map[string]any{"type": "JsonRaw", "jsonRaw": `{"replicas":3}`}},
			}},
			"conditions": []map[string]any{{"type": "Available", "status": "True", "reason": "MinimumReplicasAvailable",
				"message": "", "lastTransitionTime": "2026-05-06T07:08:09Z"}},
		}},
	}
	if err := ev.SetData(event.ApplicationJSON, status); err != nil {
		t.Fatal(err)
	}
	return ev
}

// deleted is the condition the agent client's deleteWork adds before it
// publishes the last status of a work (sdk-go
// pkg/cloudevents/clients/work/agent/client/manifestwork.go:
// common.ResourceDeleted, "Deleted", True, reason ManifestsDeleted).
var deleted = []map[string]any{{"type": "Deleted", "status": "True", "reason": "ManifestsDeleted",
	"message": "The manifests are deleted from the cluster c1", "lastTransitionTime": "2026-05-06T07:09:00Z"}}

// message encodes ev as the confluent client would produce it (binary
// mode unless structured) and marks it consumed at partition and offset of
// topic agentevents, the topic of sdk-go's Kafka transport.
func message(t testing.TB, ev event.Event, structured bool, partition int32, offset int64) *kafka.Message {
	t.Helper()
	ctx := context.Background()
	if structured {
		ctx = binding.WithForceStructured(ctx)
	}
	topic := "agentevents"
	msg := &kafka.Message{TopicPartition: kafka.TopicPartition{Topic: &topic}}
	if err := kafka_confluent.WriteProducerMessage(ctx, binding.ToMessage(&ev), msg); err != nil {
		t.Fatal(err)
	}
	msg.TopicPartition.Partition = partition
	msg.TopicPartition.Offset = kafka.Offset(offset)
	msg.Timestamp = baseTime.Add(time.Second)
	return msg
}

// registry returns the registry of the family's types.
func registry(t testing.TB) *dbsyncers.Registry {
	t.Helper()
	r, err := dbsyncers.NewRegistry(work.Syncers()...)
	if err != nil {
		t.Fatal(err)
	}
	return r
}

// read decodes msg as the reader does with the family on.
func read(t testing.TB, msg *kafka.Message) (*bundle.Bundle, *transport.Reject) {
	t.Helper()
	rules := transport.Rules{TypePrefix: transport.DefaultTypePrefix, MaxBundleBytes: 1 << 20, Decoder: registry(t)}
	return transport.DecodeFamilies(msg, rules, []transport.Family{work.NewFamily()}, baseTime.Add(2*time.Second))
}

// mustRead reads msg into a decoded bundle, failing on a reject.
func mustRead(t testing.TB, msg *kafka.Message) *bundle.Bundle {
	t.Helper()
	b, rej := read(t, msg)
	if rej != nil {
		t.Fatalf("rejected: %v", rej)
	}
	if err := registry(t).DecodeBundle(b); err != nil {
		t.Fatalf("decode: %v", err)
	}
	return b
}

// statusOf returns the one status of a decoded bundle.
func statusOf(t testing.TB, b *bundle.Bundle) *work.Status {
	t.Helper()
	p, ok := b.Payload.(*work.Payload)
	if !ok || len(p.Statuses) != 1 {
		t.Fatalf("payload %#v, want one status", b.Payload)
	}
	return p.Statuses[0]
}

func ptr(s string) *string { return &s }

// jsonEq reports whether two JSON texts hold the same value.
func jsonEq(a, b []byte) bool {
	var x, y any
	if json.Unmarshal(a, &x) != nil || json.Unmarshal(b, &y) != nil {
		return false
	}
	return fmt.Sprint(x) == fmt.Sprint(y)
}
