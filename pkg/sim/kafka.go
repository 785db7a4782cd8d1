package sim

import (
	"context"

	"go.uber.org/zap"

	"github.com/stbridge/stb/pkg/transport"
)

// KafkaPublisher sends the simulator's messages through the transport's
// Kafka publisher (binary-mode CloudEvents, key = hub). Run flushes it
// after the last message; Close releases the producer.
type KafkaPublisher struct{ *transport.Publisher }

// NewKafkaPublisher returns a publisher to cfg's brokers.
func NewKafkaPublisher(cfg transport.PublisherConfig, logger *zap.Logger) (*KafkaPublisher, error) {
	pub, err := transport.NewPublisher(cfg, logger)
	if err != nil {
		return nil, err
	}
	return &KafkaPublisher{pub}, nil
}

// Publish sends m.
func (p *KafkaPublisher) Publish(ctx context.Context, m Message) error {
	return p.Publisher.Publish(ctx, transport.Envelope(m))
}
