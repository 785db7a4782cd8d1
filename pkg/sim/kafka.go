package sim

import (
	"context"
	"strings"

	"go.uber.org/zap"

	"github.com/stbridge/stb/pkg/transport"
)

// KafkaPublisher sends the simulator's messages through the transport's
// Kafka publisher: STB's binary-mode CloudEvents keyed by hub, and the
// global-hub agent's (types under GHTypePrefix) as that agent encodes
// them. Run flushes it after the last message; Close releases the
// producer.
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
	short, gh := strings.CutPrefix(m.Type, GHTypePrefix)
	if !gh {
		return p.Publisher.Publish(ctx, transport.Envelope(m))
	}
	e := transport.GlobalHubEvent{
		Topic: m.Topic, Hub: m.Hub, Type: short, ID: m.ID,
		Version: m.Version.String(), // the agent's "<generation>.<value>"
		Time:    m.Time, Data: m.Data,
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
