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
	// Type is the type after GlobalHubTypePrefix, as "managedcluster".
	Type string
	// ID identifies the event; "" generates a random UUID.
	ID string
	// Version is the agent's extversion, "<generation>.<value>";
	// Dependency, when not "", its extdependencyversion.
	Version, Dependency string
	// SendMode, when not "", is the sendmode extension ("batch" or
	// "single") the agent sets on event types.
	SendMode string
	// Time is when the agent sent the event; zero means now.
	Time time.Time
	// Data is the JSON data, sent as is.
	Data []byte
	// Extensions are other extensions the agent sets on some types
	// (managedclustermigration's migrationid, migrationstage,
	// clustername), sent as strings.
	Extensions map[string]string
}

// EncodeGlobalHub turns e into a Kafka message as the agent's producer
// makes it: a CloudEvents 1.0 event in binary mode whose Kafka key is the
// full event type (not the hub).
func EncodeGlobalHub(e GlobalHubEvent) (*kafka.Message, error) {
	if e.Topic == "" || e.Hub == "" || e.Type == "" || e.Version == "" {
		return nil, fmt.Errorf("%w: a global-hub event needs a topic, hub, type and version", ErrInvalidEnvelope)
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
	ev.SetType(GlobalHubTypePrefix + e.Type)
	ev.SetTime(e.Time)
	ev.SetExtension(ExtVersion, e.Version)
	if e.Dependency != "" {
		ev.SetExtension(ExtDependencyVersion, e.Dependency)
	}
	if e.SendMode != "" {
		ev.SetExtension(ExtSendMode, e.SendMode)
	}
	for name, v := range e.Extensions {
		ev.SetExtension(name, v)
	}
	return binaryMessage(&ev, e.Topic, []byte(GlobalHubTypePrefix+e.Type), e.Data)
}

// ChunkGlobalHub cuts e's data into chunks of at most limit bytes as the
// agent's producer does: each chunk is the same event (same id and
// attributes) with extsize, the whole data's length, and extoffset, where
// the chunk ends in the data. Data of at most limit bytes is one message
// without them.
func ChunkGlobalHub(e GlobalHubEvent, limit int) ([]*kafka.Message, error) {
	if limit <= 0 {
		return nil, fmt.Errorf("%w: chunk limit %d", ErrInvalidEnvelope, limit)
	}
	if e.ID == "" {
		e.ID = uuid.NewString()
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
		part.Data = data[start:end]
		m, err := EncodeGlobalHub(part)
		if err != nil {
			return nil, err
		}
		m.Headers = append(m.Headers,
			kafka.Header{Key: headerSize, Value: fmt.Appendf(nil, "%d", len(data))},
			kafka.Header{Key: headerOffset, Value: fmt.Appendf(nil, "%d", end)})
		out = append(out, m)
	}
	return out, nil
}
