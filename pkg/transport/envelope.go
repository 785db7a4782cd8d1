package transport

import (
	"context"
	"errors"
	"fmt"
	"time"

	"github.com/cloudevents/sdk-go/protocol/kafka_confluent/v2"
	"github.com/cloudevents/sdk-go/v2/binding"
	"github.com/cloudevents/sdk-go/v2/event"
	"github.com/confluentinc/confluent-kafka-go/v2/kafka"
	"github.com/google/uuid"

	"github.com/stbridge/stb/pkg/bundle"
)

// DefaultTypePrefix precedes the bundle type in the CloudEvents type, as in
// "io.stb.status.v1.heartbeat".
const DefaultTypePrefix = "io.stb.status.v1."

// CloudEvents extension attributes of a bundle.
const (
	// ExtVersion carries the bundle's version, "<incarnation>.<generation>".
	ExtVersion = "extversion"
	// ExtDependencyVersion carries the version of the base bundle this one
	// builds on, for types that depend on one.
	ExtDependencyVersion = "extdependencyversion"
)

// ErrInvalidEnvelope is returned by Encode for an envelope that cannot make
// a valid event.
var ErrInvalidEnvelope = errors.New("invalid envelope")

// Envelope is one bundle as a hub sends it: the one type for it, which the
// simulator publishes as sim.Message and Encode makes a CloudEvent of.
type Envelope struct {
	// Topic is the Kafka topic to send to.
	Topic string
	// Hub is the hub's name: the event source and the Kafka key.
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

// Encode turns env into a Kafka message carrying a CloudEvents 1.0 event in
// binary mode (attributes as ce_* headers, data as the value), keyed by hub.
func Encode(env Envelope, typePrefix string) (*kafka.Message, error) {
	switch {
	case env.Topic == "":
		return nil, fmt.Errorf("%w: no topic", ErrInvalidEnvelope)
	case env.Hub == "":
		return nil, fmt.Errorf("%w: no hub", ErrInvalidEnvelope)
	case env.Type == "":
		return nil, fmt.Errorf("%w: no bundle type", ErrInvalidEnvelope)
	}
	if env.ID == "" {
		env.ID = uuid.NewString()
	}
	if env.Time.IsZero() {
		env.Time = time.Now()
	}

	e := event.New(event.CloudEventsVersionV1)
	e.SetID(env.ID)
	e.SetSource(env.Hub)
	e.SetType(typePrefix + env.Type)
	e.SetTime(env.Time)
	e.SetExtension(ExtVersion, env.Version.String())
	if env.Dependency != nil {
		e.SetExtension(ExtDependencyVersion, env.Dependency.String())
	}
	return binaryMessage(&e, env.Topic, []byte(env.Hub), env.Data)
}

// binaryMessage sets ev's data and writes it as a binary-mode Kafka
// message to topic under key. A []byte is taken as already encoded: no
// copy, no re-marshalling.
func binaryMessage(ev *event.Event, topic string, key, data []byte) (*kafka.Message, error) {
	if err := ev.SetData(event.ApplicationJSON, data); err != nil {
		return nil, fmt.Errorf("%w: %w", ErrInvalidEnvelope, err)
	}
	if err := ev.Validate(); err != nil {
		return nil, fmt.Errorf("%w: %w", ErrInvalidEnvelope, err)
	}
	msg := &kafka.Message{
		TopicPartition: kafka.TopicPartition{Topic: &topic, Partition: kafka.PartitionAny},
		Key:            key,
	}
	ctx := binding.WithForceBinary(context.Background())
	if err := kafka_confluent.WriteProducerMessage(ctx, binding.ToMessage(ev), msg); err != nil {
		return nil, fmt.Errorf("encode event %s: %w", ev.ID(), err)
	}
	return msg, nil
}
