package sim

import (
	"context"
	"time"

	"github.com/stbridge/stb/pkg/bundle"
)

// Message is one bundle as a hub publishes it. Its fields map one to one
// onto the CloudEvent a hub sends in STB's own wire format (EncodeSTB) or,
// for a Type under bundle.GlobalHubPrefix, the global-hub agent's
// (GHMessage, EncodeGH). Its Topic is Config.Topic, its ID unique per event
// within one run, its Type the short bundle type ("heartbeat", or one
// under bundle.GlobalHubPrefix for the global-hub agent).
//
// It is the simulator's own type, not the bridge's envelope: the simulator
// writes the wire format from the senders' definitions, so that the bridge
// reading it is a test of the bridge. Its fields are those of the bridge's
// transport.Envelope, in the same order, so a caller that has a Message
// and wants the bridge's publisher may convert it.
type Message struct {
	// Topic is the Kafka topic to send to.
	Topic string
	// Hub is the hub's name: the event source and, in STB's format, the
	// Kafka key.
	Hub string
	// Type is the short bundle type, such as "heartbeat".
	Type string
	// ID identifies the event; "" generates a random UUID.
	ID string
	// Version is the hub's version of this bundle (extversion).
	Version bundle.Version
	// Dependency is the version of the base bundle (extdependencyversion),
	// nil for types that do not name one.
	Dependency *bundle.Version
	// Time is when the hub produced the bundle; zero means now.
	Time time.Time
	// Data is the JSON payload, sent as is.
	Data []byte
}

// Publisher sends messages. Run calls it from one goroutine, in order; a
// publisher may buffer, but must keep each hub's messages in order.
type Publisher interface {
	Publish(ctx context.Context, msg Message) error
}

// Flusher is implemented by publishers that buffer. Run calls Flush once
// after the last message, so that Expected describes only messages that
// were delivered.
type Flusher interface {
	Flush(ctx context.Context) error
}

// PublisherFunc adapts a function to Publisher.
type PublisherFunc func(ctx context.Context, msg Message) error

// Publish calls f.
func (f PublisherFunc) Publish(ctx context.Context, msg Message) error { return f(ctx, msg) }

// GHMessage is one Kafka message of the global-hub agent (Config.Agent
// AgentGlobalHub): a Message whose Type is under bundle.GlobalHubPrefix, whose
// Version is the agent's extversion ("<generation>.<value>" as
// bundle.Version's "<incarnation>.<generation>") and Dependency its
// extdependencyversion, with what only that agent's events carry. Its ID
// is the CloudEvent's; a copy of a message is the same GHMessage again.
type GHMessage struct {
	Message
	// SendMode is the sendmode extension of the event types ("batch" or
	// "single"), "" for the others.
	SendMode string
	// Extensions are the other string extensions: migrationid,
	// migrationstage and clustername of managedclustermigration.
	Extensions map[string]string
	// ChunkSize and ChunkEnd are extsize and extoffset when Data is one
	// chunk of an event's data: the whole data's length, and where this
	// chunk ends in it. Both are 0 for an event sent whole.
	ChunkSize, ChunkEnd int
}

// needsGH reports whether m says more than its Message.
func (m GHMessage) needsGH() bool {
	return m.SendMode != "" || len(m.Extensions) > 0 || m.ChunkSize > 0
}

// GHPublisher is implemented by publishers that send the global-hub
// agent's messages with everything they carry (KafkaPublisher). Run hands
// a publisher without it only the Message, and fails on a message that
// needs more.
type GHPublisher interface {
	PublishGH(ctx context.Context, msg GHMessage) error
}
