package sim

import (
	"context"
	"errors"
	"fmt"
	"strings"
	"time"

	"github.com/cloudevents/sdk-go/protocol/kafka_confluent/v2"
	"github.com/cloudevents/sdk-go/v2/binding"
	"github.com/cloudevents/sdk-go/v2/event"
	"github.com/confluentinc/confluent-kafka-go/v2/kafka"
	"github.com/google/uuid"

	"github.com/stbridge/stb/pkg/bundle"
)

// The simulator writes each sender's wire format from that sender's own
// definition, spelled here and nowhere in the bridge: the bridge reading
// what the simulator sent is then a test of the bridge, not of a constant
// both sides share.

// STB's own wire format, as the README's "Wire format" defines it for a
// hub: a CloudEvents 1.0 event in Kafka binary mode (ce_* headers, the
// JSON data as the value), keyed by the hub's name.
const (
	// DefaultTypePrefix precedes the bundle type in the CloudEvents type,
	// as in "io.stb.status.v1.heartbeat"; a bridge run with another
	// --type-prefix reads the simulator run with the same one
	// (PublisherConfig.TypePrefix).
	DefaultTypePrefix = "io.stb.status.v1."
	// stbExtVersion carries the bundle's "<incarnation>.<generation>";
	// stbExtDependencyVersion the version of the base bundle, for the
	// types that depend on one.
	stbExtVersion           = "extversion"
	stbExtDependencyVersion = "extdependencyversion"
)

// The global-hub agent's wire format (stolostron/multicluster-global-hub).
const (
	// ghEventTypePrefix precedes every event type of the agent
	// (pkg/enum/event_type.go, EventTypePrefix; each type there is
	// this prefix and the short type, as "managedcluster").
	ghEventTypePrefix = "io.open-cluster-management.operator.multiclusterglobalhubs."
	// ghExtVersion and ghExtDependencyVersion carry the emitter's
	// "<generation>.<value>" and the version of the bundle this one
	// depends on (pkg/bundle/version/version.go, ExtVersion and
	// ExtDependencyVersion).
	ghExtVersion           = "extversion"
	ghExtDependencyVersion = "extdependencyversion"
	// ghExtSendMode is the sendmode extension the event emitter sets on
	// the event types, "batch" or "single" (pkg/constants/constants.go,
	// CloudEventExtensionSendMode, set in agent/pkg/status/generic's
	// EventEmitter.createCloudEvent).
	ghExtSendMode = "sendmode"
	// ghExtChunkSize and ghExtChunkOffset are set on every chunk of an
	// event whose data the producer split: the whole data's length, and
	// where this chunk ends in it (pkg/transport/type.go, ChunkSizeKey
	// and ChunkOffsetKey; pkg/transport/producer/generic_producer.go,
	// SendEvent).
	ghExtChunkSize   = "extsize"
	ghExtChunkOffset = "extoffset"
	// ghExtMigrationID, ghExtMigrationStage and ghExtClusterName are the
	// extensions of a managedclustermigration event: the migration's id
	// and stage, which its data does not carry, and the hub the message is
	// for (pkg/bundle/migration, the comment above MigrationSourceBundle:
	// migrationid, migrationstage, clustername; that file also names
	// expiretime, which the simulator does not send).
	ghExtMigrationID    = "migrationid"
	ghExtMigrationStage = "migrationstage"
	ghExtClusterName    = "clustername"
)

// ErrInvalidMessage is returned by EncodeSTB and EncodeGH for a message
// that cannot make a valid event.
var ErrInvalidMessage = errors.New("invalid simulated message")

// EncodeSTB returns m as a hub sends it in STB's own wire format, with
// typePrefix ("" is DefaultTypePrefix) before the bundle type.
func EncodeSTB(m Message, typePrefix string) (*kafka.Message, error) {
	switch {
	case m.Topic == "":
		return nil, fmt.Errorf("%w: no topic", ErrInvalidMessage)
	case m.Hub == "":
		return nil, fmt.Errorf("%w: no hub", ErrInvalidMessage)
	case m.Type == "":
		return nil, fmt.Errorf("%w: no bundle type", ErrInvalidMessage)
	}
	if typePrefix == "" {
		typePrefix = DefaultTypePrefix
	}
	ev := newEvent(m.ID, m.Hub, typePrefix+m.Type, m.Time)
	ev.SetExtension(stbExtVersion, m.Version.String())
	if m.Dependency != nil {
		ev.SetExtension(stbExtDependencyVersion, m.Dependency.String())
	}
	return binaryMessage(ev, m.Topic, []byte(m.Hub), m.Data)
}

// EncodeGH returns m as the global-hub agent's producer sends it: a
// CloudEvents 1.0 event in binary mode whose Kafka key is the full event
// type, not the hub (pkg/transport/producer/generic_producer.go, SendEvent:
// WithMessageKey(evt.Type()) when the caller set no key), so that on a
// topic of several partitions a hub's types spread over them while each
// type stays in one. The version is the agent's "<generation>.<value>",
// which Message carries as bundle.Version's "<incarnation>.<generation>".
func EncodeGH(m GHMessage) (*kafka.Message, error) {
	short, ok := strings.CutPrefix(m.Type, bundle.GlobalHubPrefix)
	switch {
	case !ok || short == "":
		return nil, fmt.Errorf("%w: %q is not a global-hub agent's type (%s…)", ErrInvalidMessage, m.Type, bundle.GlobalHubPrefix)
	case m.Topic == "" || m.Hub == "":
		return nil, fmt.Errorf("%w: a global-hub event needs a topic and a hub", ErrInvalidMessage)
	case m.ChunkSize < 0 || m.ChunkEnd < 0 || (m.ChunkSize > 0 && (m.ChunkEnd > m.ChunkSize || m.ChunkEnd < len(m.Data))):
		return nil, fmt.Errorf("%w: chunk of %d bytes ending at %d of %d", ErrInvalidMessage, len(m.Data), m.ChunkEnd, m.ChunkSize)
	}
	typ := ghEventTypePrefix + short
	ev := newEvent(m.ID, m.Hub, typ, m.Time)
	ev.SetExtension(ghExtVersion, m.Version.String())
	if m.Dependency != nil {
		ev.SetExtension(ghExtDependencyVersion, m.Dependency.String())
	}
	if m.SendMode != "" {
		ev.SetExtension(ghExtSendMode, m.SendMode)
	}
	for k, v := range m.Extensions {
		ev.SetExtension(k, v)
	}
	if m.ChunkSize > 0 {
		// Integers, which the CloudEvents binding writes as decimal
		// strings, as the producer sets them.
		ev.SetExtension(ghExtChunkSize, m.ChunkSize)
		ev.SetExtension(ghExtChunkOffset, m.ChunkEnd)
	}
	return binaryMessage(ev, m.Topic, []byte(typ), m.Data)
}

// newEvent returns a CloudEvents 1.0 event with id ("" a random UUID, as
// the senders' CloudEvents clients give every send), source, type and time
// (zero: now).
func newEvent(id, source, typ string, at time.Time) *event.Event {
	if id == "" {
		id = uuid.NewString()
	}
	if at.IsZero() {
		at = time.Now()
	}
	ev := event.New(event.CloudEventsVersionV1)
	ev.SetID(id)
	ev.SetSource(source)
	ev.SetType(typ)
	ev.SetTime(at)
	return &ev
}

// binaryMessage sets ev's JSON data and writes it as a binary-mode Kafka
// message to topic under key, with the CloudEvents confluent binding.
func binaryMessage(ev *event.Event, topic string, key, data []byte) (*kafka.Message, error) {
	if err := ev.SetData(event.ApplicationJSON, data); err != nil {
		return nil, fmt.Errorf("%w: %w", ErrInvalidMessage, err)
	}
	if err := ev.Validate(); err != nil {
		return nil, fmt.Errorf("%w: %w", ErrInvalidMessage, err)
	}
	msg := &kafka.Message{TopicPartition: kafka.TopicPartition{Topic: &topic, Partition: kafka.PartitionAny}, Key: key}
	ctx := binding.WithForceBinary(context.Background())
	if err := kafka_confluent.WriteProducerMessage(ctx, binding.ToMessage(ev), msg); err != nil {
		return nil, fmt.Errorf("encode event %s: %w", ev.ID(), err)
	}
	return msg, nil
}
