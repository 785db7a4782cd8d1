package sim

import (
	"context"

	"github.com/stbridge/stb/pkg/transport"
)

// Message is one bundle as a hub publishes it: the transport's Envelope,
// whose fields map one to one onto the CloudEvent the transport sends
// (docs/design.md, Wire formats). It is that type, not a copy of it, so that a simulated
// message goes to the Kafka publisher as it is (KafkaPublisher). Its Topic
// is Config.Topic, its ID unique per event within one run, its Type the
// short bundle type ("heartbeat", or one under bundle.GlobalHubPrefix for the
// global-hub agent).
type Message = transport.Envelope

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
