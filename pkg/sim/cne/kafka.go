package cne

import (
	"context"

	"github.com/cloudevents/sdk-go/protocol/kafka_confluent/v2"
	"github.com/cloudevents/sdk-go/v2/binding"
	"github.com/confluentinc/confluent-kafka-go/v2/kafka"
	"go.uber.org/zap"

	"github.com/stbridge/stb/pkg/sim"
)

// KafkaPublisher sends the nodes' events as the CloudEvents Kafka binding
// writes them (binary mode: ce_* headers and the data as the value;
// structured: the JSON event as the value), keyed by node, so that a
// node's events share a partition and its order. It is the simulator's
// Kafka producer (sim.KafkaPublisher, partitioning by key); Flush and
// Close are its.
type KafkaPublisher struct{ *sim.KafkaPublisher }

// NewKafkaPublisher returns a publisher to cfg's brokers, partitioning by
// key (librdkafka's consistent_random, as sim.KafkaPublisher).
func NewKafkaPublisher(cfg sim.PublisherConfig, logger *zap.Logger) (*KafkaPublisher, error) {
	p, err := sim.NewKafkaPublisher(cfg, logger)
	if err != nil {
		return nil, err
	}
	return &KafkaPublisher{p}, nil
}

// Publish queues m.
func (p *KafkaPublisher) Publish(ctx context.Context, m Message) error {
	msg, err := Encode(m)
	if err != nil {
		return err
	}
	return p.PublishMessage(ctx, msg)
}

// Encode returns m as a Kafka message.
func Encode(m Message) (*kafka.Message, error) {
	topic := m.Topic
	msg := &kafka.Message{TopicPartition: kafka.TopicPartition{Topic: &topic, Partition: kafka.PartitionAny}, Key: []byte(m.Node)}
	ctx := context.Background()
	if m.Structured {
		ctx = binding.WithForceStructured(ctx)
	}
	if err := kafka_confluent.WriteProducerMessage(ctx, binding.ToMessage(&m.Event), msg); err != nil {
		return nil, err
	}
	return msg, nil
}
