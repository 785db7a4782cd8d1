package transport

import (
	"context"
	"encoding/json"
	"errors"
	"fmt"
	"strings"
	"time"

	"github.com/cloudevents/sdk-go/protocol/kafka_confluent/v2"
	"github.com/cloudevents/sdk-go/v2/binding"
	"github.com/cloudevents/sdk-go/v2/event"
	"github.com/confluentinc/confluent-kafka-go/v2/kafka"
	"github.com/google/uuid"
)

// ResyncSuffix ends the CloudEvents type of a resync request: the type is
// the status type prefix, the bundle type wanted and this suffix, after the
// "<group>.<version>.<resource>.<action>" convention of the
// open-cluster-management CloudEvents work
// ("io.stb.status.v1.compliance.resync_request").
const ResyncSuffix = ".resync_request"

// ResyncSource is the source of the requests the bridge sends.
const ResyncSource = "stb"

// ResyncRequest asks a hub's agent to send a complete bundle of one type
// again, with a new generation: the bridge holds a bundle that depends on
// a version of that type it never read (lost, compacted away, or sent
// before the hub was deleted or reset), and cannot apply it. It is sent as
// a CloudEvent in binary mode, keyed by the hub (README, "Resync
// requests").
type ResyncRequest struct {
	// Hub is the hub asked; it is also the event's subject and the key.
	Hub string `json:"hub"`
	// BundleType is the type whose complete bundle is wanted.
	BundleType string `json:"bundleType"`
	// Reason says why: dependency_missing.
	Reason string `json:"reason"`
	// WaitingType and WaitingVersion are the bundle that cannot apply;
	// Dependency is the version of BundleType it needs.
	WaitingType    string `json:"waitingType"`
	WaitingVersion string `json:"waitingVersion"`
	Dependency     string `json:"dependencyVersion,omitempty"`
	// Processed is the newest version of BundleType the database holds
	// for the hub; "" when none.
	Processed string `json:"processedVersion,omitempty"`
}

// EncodeResync returns the Kafka message of a resync request to topic.
func EncodeResync(topic, typePrefix string, r ResyncRequest, at time.Time) (*kafka.Message, error) {
	if r.Hub == "" || r.BundleType == "" {
		return nil, fmt.Errorf("%w: a resync request needs a hub and a bundle type", ErrInvalidEnvelope)
	}
	data, err := json.Marshal(r)
	if err != nil {
		return nil, fmt.Errorf("%w: %w", ErrInvalidEnvelope, err)
	}
	e := event.New(event.CloudEventsVersionV1)
	e.SetID(uuid.NewString())
	e.SetSource(ResyncSource)
	e.SetType(typePrefix + r.BundleType + ResyncSuffix)
	e.SetSubject(r.Hub)
	e.SetTime(at)
	return binaryMessage(&e, topic, []byte(r.Hub), data)
}

// DecodeResync reads a resync request, as an agent does: a CloudEvent
// (binary or structured mode) whose type is typePrefix, a bundle type and
// ResyncSuffix. The type and the subject are the authority; the data
// adds why.
func DecodeResync(msg *kafka.Message, typePrefix string) (ResyncRequest, error) {
	var r ResyncRequest
	if msg == nil {
		return r, errors.New("resync request: nil message")
	}
	if tp := msg.TopicPartition; tp.Topic == nil || tp.Partition < 0 || tp.Offset < 0 {
		// The binding panics on these (a message not read from Kafka, such
		// as one just encoded); they do not matter to a request.
		m := *msg
		if tp.Topic == nil {
			none := ""
			m.TopicPartition.Topic = &none
		}
		m.TopicPartition.Partition, m.TopicPartition.Offset = max(tp.Partition, 0), max(tp.Offset, 0)
		msg = &m
	}
	ev, err := binding.ToEvent(context.Background(), kafka_confluent.NewMessage(msg))
	if err != nil {
		return r, fmt.Errorf("resync request: %w", err)
	}
	typ, prefixed := strings.CutPrefix(ev.Type(), typePrefix)
	typ, suffixed := strings.CutSuffix(typ, ResyncSuffix)
	if !prefixed || !suffixed || typ == "" {
		return r, fmt.Errorf("resync request: type %q is not %s<bundle type>%s", ev.Type(), typePrefix, ResyncSuffix)
	}
	if len(ev.Data()) > 0 {
		if err := json.Unmarshal(ev.Data(), &r); err != nil {
			return r, fmt.Errorf("resync request: data: %w", err)
		}
	}
	r.BundleType = typ
	if s := ev.Subject(); s != "" {
		r.Hub = s
	}
	if r.Hub == "" {
		return r, errors.New("resync request: no hub (subject)")
	}
	return r, nil
}
