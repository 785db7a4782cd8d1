package sim

import (
	"context"
	"strings"

	"go.uber.org/zap"

	"github.com/stbridge/stb/pkg/bundle"
	"github.com/stbridge/stb/pkg/transport"
)

// KafkaPublisher sends the simulator's messages through the transport's
// Kafka publisher: STB's binary-mode CloudEvents keyed by hub, and the
// global-hub agent's (types under bundle.GlobalHubPrefix) as that agent encodes
// them, keyed by their event type. Run flushes it after the last message;
// Close releases the producer.
type KafkaPublisher struct{ *transport.Publisher }

// kafkaPartitioner is librdkafka's partitioner the publisher uses: a
// message goes to the partition its key hashes to (CRC32), so all
// messages of one key share a partition. It is librdkafka's default, and
// the global-hub agent's producer (confluent-kafka-go, no partitioner
// set) uses it: on a shared topic of several partitions each of a hub's
// event types has one partition, and its types spread over them.
const kafkaPartitioner = "consistent_random"

// NewKafkaPublisher returns a publisher to cfg's brokers.
func NewKafkaPublisher(cfg transport.PublisherConfig, logger *zap.Logger) (*KafkaPublisher, error) {
	if _, set := cfg.Properties["partitioner"]; !set {
		props := make(map[string]string, len(cfg.Properties)+1)
		for k, v := range cfg.Properties {
			props[k] = v
		}
		props["partitioner"] = kafkaPartitioner
		cfg.Properties = props
	}
	pub, err := transport.NewPublisher(cfg, logger)
	if err != nil {
		return nil, err
	}
	return &KafkaPublisher{pub}, nil
}

// Publish sends m.
func (p *KafkaPublisher) Publish(ctx context.Context, m Message) error {
	if strings.HasPrefix(m.Type, bundle.GlobalHubPrefix) {
		return p.PublishGH(ctx, GHMessage{Message: m})
	}
	return p.Publisher.Publish(ctx, m)
}

// PublishGH sends a message of the global-hub agent as its producer does.
func (p *KafkaPublisher) PublishGH(ctx context.Context, m GHMessage) error {
	e := transport.GlobalHubEvent{
		Topic: m.Topic, Hub: m.Hub, Type: strings.TrimPrefix(m.Type, bundle.GlobalHubPrefix), ID: m.ID,
		Version:  m.Version.String(), // the agent's "<generation>.<value>"
		SendMode: m.SendMode, Extensions: m.Extensions, ChunkSize: m.ChunkSize, ChunkEnd: m.ChunkEnd,
		Time: m.Time, Data: m.Data,
	}
	if m.Dependency != nil {
		e.Dependency = m.Dependency.String()
	}
	msg, err := transport.EncodeGlobalHub(e)
	if err != nil {
		return err
	}
	return p.Publisher.PublishMessage(ctx, msg)
}
