package transport

import (
	"fmt"
	"time"

	"github.com/cloudevents/sdk-go/v2/event"
	"github.com/confluentinc/confluent-kafka-go/v2/kafka"
	"github.com/google/uuid"
)

// GlobalHubEvent is one event as the global-hub agent sends it, for
// simulators and tests of the global-hub profile.
type GlobalHubEvent struct {
	Topic string
	// Hub is the event's source.
	Hub string
	// Type is the type after GlobalHubEventTypePrefix, as "managedcluster".
	Type string
	// ID identifies the event; "" generates a random UUID, as the
	// agent's CloudEvents client does for every send (WithUUIDs).
	ID string
	// Version is the agent's extversion, "<generation>.<value>";
	// Dependency, when not "", its extdependencyversion.
	Version, Dependency string
	// SendMode, when not "", is the sendmode extension ("batch" or
	// "single") the agent sets on event types.
	SendMode string
	// Extensions are other string extensions, set as they are:
	// managedclustermigration's migrationid, migrationstage and
	// clustername.
	Extensions map[string]string
	// ChunkSize and ChunkEnd, when ChunkSize is positive, mark Data as one
	// chunk of the event's data: extsize, the whole data's length, and
	// extoffset, where this chunk ends in it.
	ChunkSize, ChunkEnd int
	// Time is when the agent sent the event; zero means now.
	Time time.Time
	// Data is the JSON data, sent as is.
	Data []byte
}

// EncodeGlobalHub turns e into a Kafka message as the agent's producer
// makes it: a CloudEvents 1.0 event in binary mode whose Kafka key is the
// full event type (not the hub), so that on a topic of several partitions
// a hub's types spread over them while each type stays in one
// (pkg/transport/producer/generic_producer.go: WithMessageKey(evt.Type())).
func EncodeGlobalHub(e GlobalHubEvent) (*kafka.Message, error) {
	if e.Topic == "" || e.Hub == "" || e.Type == "" || e.Version == "" {
		return nil, fmt.Errorf("%w: a global-hub event needs a topic, hub, type and version", ErrInvalidEnvelope)
	}
	if e.ChunkSize < 0 || e.ChunkEnd < 0 || (e.ChunkSize > 0 && (e.ChunkEnd > e.ChunkSize || e.ChunkEnd < len(e.Data))) {
		return nil, fmt.Errorf("%w: chunk of %d bytes ending at %d of %d", ErrInvalidEnvelope, len(e.Data), e.ChunkEnd, e.ChunkSize)
	}
	if e.ID == "" {
		e.ID = uuid.NewString()
	}
	if e.Time.IsZero() {
		e.Time = time.Now()
	}
	ev := event.New(event.CloudEventsVersionV1)
	ev.SetID(e.ID)
	ev.SetSource(e.Hub)
	ev.SetType(GlobalHubEventTypePrefix + e.Type)
	ev.SetTime(e.Time)
	ev.SetExtension(ExtVersion, e.Version)
	if e.Dependency != "" {
		ev.SetExtension(ExtDependencyVersion, e.Dependency)
	}
	if e.SendMode != "" {
		ev.SetExtension(ExtSendMode, e.SendMode)
	}
	for k, v := range e.Extensions {
		ev.SetExtension(k, v)
	}
	if e.ChunkSize > 0 {
		// Integers, written as decimal strings (types.Format), as the
		// producer sets them.
		ev.SetExtension(ExtChunkSize, e.ChunkSize)
		ev.SetExtension(ExtChunkOffset, e.ChunkEnd)
	}
	return binaryMessage(&ev, e.Topic, []byte(GlobalHubEventTypePrefix+e.Type), e.Data)
}

// ChunkGlobalHub cuts e's data into chunks of at most limit bytes as the
// agent's producer does (generic_producer.go, splitPayloadIntoChunks): the
// chunks are sent one after the other, each with extsize, the whole data's
// length, and extoffset, where the chunk ends in the data. Every send of
// the agent's CloudEvents client gets a new id and the time of the send,
// so with e.ID "" each chunk has an id of its own, and with e.Time zero a
// time of its own; a given ID or time is set on every chunk (as an older
// producer, @02cc2d4, set the id). Data of at most limit bytes is one
// message without extsize and extoffset.
func ChunkGlobalHub(e GlobalHubEvent, limit int) ([]*kafka.Message, error) {
	if limit <= 0 {
		return nil, fmt.Errorf("%w: chunk limit %d", ErrInvalidEnvelope, limit)
	}
	if len(e.Data) <= limit {
		m, err := EncodeGlobalHub(e)
		return []*kafka.Message{m}, err
	}
	var out []*kafka.Message
	data := e.Data
	for end := 0; end < len(data); {
		start := end
		end = min(start+limit, len(data))
		part := e
		part.Data, part.ChunkSize, part.ChunkEnd = data[start:end], len(data), end
		m, err := EncodeGlobalHub(part)
		if err != nil {
			return nil, err
		}
		out = append(out, m)
	}
	return out, nil
}
