package work

import (
	"context"
	"crypto/sha256"
	"encoding/hex"
	"encoding/json"
	"fmt"
	"strconv"
	"strings"
	"time"

	"github.com/cloudevents/sdk-go/protocol/kafka_confluent/v2"
	"github.com/cloudevents/sdk-go/v2/binding"
	"github.com/cloudevents/sdk-go/v2/event"
	"github.com/confluentinc/confluent-kafka-go/v2/kafka"
)

// The work agent's status events, spelled from open-cluster-management-io
// sdk-go, not from the bridge: an agent sends what the sdk-go it is built
// with writes, and the bridge must read that.
const (
	// dataType is the CloudEvents data type of ManifestWork bundles
	// (pkg/cloudevents/clients/work/payload, ManifestBundleEventDataType:
	// group io.open-cluster-management.works, version v1alpha1, resource
	// manifestbundles; types.CloudEventsDataType.String joins them with
	// dots).
	dataType = "io.open-cluster-management.works.v1alpha1.manifestbundles"
	// UpdateRequest and ResyncResponse are the types of a status report
	// and of a status sent again because a source asked: the data type,
	// the subresource and the action (pkg/cloudevents/generic/types/
	// types.go, CloudEventsType.String; SubResourceStatus "status",
	// UpdateRequestAction "update_request", ResyncResponseAction
	// "resync_response").
	UpdateRequest  = dataType + ".status.update_request"
	ResyncResponse = dataType + ".status.resync_response"
)

// The CloudEvents extensions the agent codec sets on a status
// (pkg/cloudevents/generic/types/types.go; set by EventBuilder.NewEvent
// and pkg/cloudevents/clients/work/agent/codec/manifestbundle.go Encode).
const (
	extResourceID      = "resourceid"      // ExtensionResourceID: the work's UID
	extResourceVersion = "resourceversion" // ExtensionResourceVersion: the work's generation, an integer
	extSequenceID      = "sequenceid"      // ExtensionStatusUpdateSequenceID: a snowflake id in decimal
	extClusterName     = "clustername"     // ExtensionClusterName: the work's namespace
	extOriginalSource  = "originalsource"  // ExtensionOriginalSource: the work's originalsource label
	extStatusHash      = "statushash"      // ExtensionStatusHash
	extWorkMeta        = "metadata"        // ExtensionWorkMeta: the work's ObjectMeta as JSON
)

// originalSourceLabel is the label of a work that names its source
// (pkg/cloudevents/clients/common, CloudEventsOriginalSourceLabelKey).
const originalSourceLabel = "cloudevents.open-cluster-management.io/originalsource"

// The agent codec's sequence ids are those of a bwmarrin/snowflake
// generator of node 1 (codec/manifestbundle.go, init: snowflake.NewNode(1)),
// with snowflake's defaults: the epoch of Twitter's snowflake in
// milliseconds, 10 bits of node and 12 of step.
const (
	snowflakeEpoch = 1288834974657
	snowflakeNode  = 1
)

// SequenceID returns the sequence id the agent codec's generator makes at
// time t for the step-th id of that millisecond, in decimal as the
// sequenceid extension carries it (snowflake.ID.String): 41 bits of
// milliseconds since the epoch, then the node, then the step.
func SequenceID(t time.Time, step int64) string {
	ms := t.UnixMilli() - snowflakeEpoch
	return strconv.FormatInt(ms<<22|snowflakeNode<<12|step&0xfff, 10)
}

// Status is one status report of a resource, the fields the agent codec
// puts in its event (open-cluster-management-io/sdk-go
// pkg/cloudevents/clients/work/agent/codec/manifestbundle.go Encode).
type Status struct {
	Type       string // UpdateRequest or ResyncResponse
	ID         string // the CloudEvents id (sdk-go: a UUID)
	Cluster    string
	Source     string // originalsource
	ResourceID string
	Generation int64
	SequenceID string
	Deleted    bool
	Time       time.Time
	// Padding is the number of bytes of status feedback to add, so that
	// statuses have the size of real ones (Maestro measures ~20 KB).
	Padding int
}

// Data returns the event's data, a ManifestBundleStatus as sdk-go's
// payload package declares it, and its sha256 in hex (the statushash
// extension; sdk-go hashes the work's status, which is the same content).
func (s Status) Data() ([]byte, string) {
	conds := []map[string]any{
		{"type": "Applied", "status": "True", "reason": "AppliedManifestComplete", "message": "Apply manifest complete",
			"lastTransitionTime": s.Time.UTC().Format(time.RFC3339), "observedGeneration": s.Generation},
		{"type": "Available", "status": "True", "reason": "ResourcesAvailable", "message": "All resources are available",
			"lastTransitionTime": s.Time.UTC().Format(time.RFC3339), "observedGeneration": s.Generation},
	}
	if s.Deleted {
		// The agent client's deleteWork (clients/work/agent/client/
		// manifestwork.go) sets common.ResourceDeleted.
		conds = append(conds, map[string]any{"type": "Deleted", "status": "True", "reason": "ManifestsDeleted",
			"message": "The manifests are deleted from the cluster " + s.Cluster, "lastTransitionTime": s.Time.UTC().Format(time.RFC3339)})
	}
	var manifests []map[string]any
	for i := 0; i == 0 || 600*i < s.Padding; i++ {
		manifests = append(manifests, map[string]any{
			"resourceMeta": map[string]any{"ordinal": i, "group": "apps", "version": "v1", "kind": "Deployment",
				"resource": "deployments", "name": fmt.Sprintf("web-%d", i), "namespace": "default"},
			"statusFeedback": map[string]any{"values": []map[string]any{
				{"name": "ReadyReplicas", "fieldValue": map[string]any{"type": "Integer", "integer": 3}},
				{"name": "generation", "fieldValue": map[string]any{"type": "Integer", "integer": s.Generation}},
				{"name": "image", "fieldValue": map[string]any{"type": "String", "string": "quay.io/example/web:" + s.SequenceID}},
				{"name": "status", "fieldValue": map[string]any{"type": "JsonRaw", "jsonRaw": `{"replicas":3,"updatedReplicas":3,"conditions":[{"type":"Progressing","status":"True"}]}`}},
			}},
			"conditions": []map[string]any{{"type": "Available", "status": "True", "reason": "MinimumReplicasAvailable",
				"message": "Deployment has minimum availability.", "lastTransitionTime": s.Time.UTC().Format(time.RFC3339)}},
		})
	}
	data, err := json.Marshal(map[string]any{"conditions": conds, "resourceStatus": manifests})
	if err != nil {
		panic(err) // maps of strings and numbers
	}
	sum := sha256.Sum256(data)
	return data, hex.EncodeToString(sum[:])
}

// Event returns the status as the agent codec builds its CloudEvent: see
// Status.
func (s Status) Event() (event.Event, string) {
	ev := event.New()
	ev.SetID(s.ID)
	ev.SetType(s.Type)
	ev.SetTime(s.Time)
	ev.SetSource(s.Cluster + "-work-agent")
	ev.SetExtension(extClusterName, s.Cluster)
	ev.SetExtension(extOriginalSource, s.Source)
	ev.SetExtension(extResourceID, s.ResourceID)
	ev.SetExtension(extResourceVersion, s.Generation)
	ev.SetExtension(extSequenceID, s.SequenceID)
	data, hash := s.Data()
	ev.SetExtension(extStatusHash, hash)
	ev.SetExtension(extWorkMeta, fmt.Sprintf(`{"name":%q,"namespace":%q,"uid":%q,"generation":%d,"labels":{%q:%q}}`,
		s.ResourceID, s.Cluster, s.ResourceID, s.Generation, originalSourceLabel, s.Source))
	if err := ev.SetData(event.ApplicationJSON, data); err != nil {
		panic(err) // bytes are always accepted
	}
	return ev, hash
}

// Message encodes ev for topic as sdk-go's Kafka transport produced it:
// the CloudEvents confluent binding, binary mode (ce_* headers) unless
// structured, keyed "<originalsource>@<cluster>" (generic/options/kafka/
// agentoptions.go WithContext).
func Message(ev event.Event, topic string, structured bool) (*kafka.Message, error) {
	ctx := context.Background()
	if structured {
		ctx = binding.WithForceStructured(ctx)
	}
	msg := &kafka.Message{TopicPartition: kafka.TopicPartition{Topic: &topic, Partition: kafka.PartitionAny}}
	if err := kafka_confluent.WriteProducerMessage(ctx, binding.ToMessage(&ev), msg); err != nil {
		return nil, fmt.Errorf("encode %s: %w", ev.Type(), err)
	}
	src, _ := ev.Extensions()[extOriginalSource].(string)
	cluster, _ := ev.Extensions()[extClusterName].(string)
	msg.Key = []byte(src + "@" + cluster)
	return msg, nil
}

// clusterName is the name of cluster i of a run.
func clusterName(prefix string, i int) string {
	return fmt.Sprintf("%s-%03d", strings.TrimSuffix(prefix, "-"), i)
}
