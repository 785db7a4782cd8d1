package sim

import (
	"context"
	"errors"
	"fmt"
	"strconv"
	"strings"
	"sync"
	"sync/atomic"
	"time"

	"github.com/confluentinc/confluent-kafka-go/v2/kafka"
	"go.uber.org/zap"

	"github.com/stbridge/stb/pkg/bundle"
)

// PublisherConfig configures a KafkaPublisher. The defaults make one
// publisher push tens of thousands of messages a second: records wait a
// few milliseconds to share a batch, and batches are large and compressed.
type PublisherConfig struct {
	// Brokers is the bootstrap list.
	Brokers string
	// TypePrefix precedes the bundle type of STB's own messages; "" means
	// DefaultTypePrefix. The global-hub agent's messages have the agent's
	// own prefix.
	TypePrefix string
	// Linger is librdkafka's linger.ms; 0 means 5ms.
	Linger time.Duration
	// BatchMessages is librdkafka's batch.num.messages; 0 means 10,000.
	BatchMessages int
	// Compression is librdkafka's compression.type; "" means lz4.
	Compression string
	// MaxMessageBytes is librdkafka's message.max.bytes; 0 means 16 MiB.
	// The broker must accept as much.
	MaxMessageBytes int
	// BrokerTimeout is how long every broker may stay unreachable, with no
	// message delivered meanwhile, before Publish and Flush give up with
	// an error naming the brokers; 0 means DefaultBrokerTimeout.
	BrokerTimeout time.Duration
	// Properties are extra librdkafka properties, applied last; the
	// partitioner is consistent_random (kafkaPartitioner) unless they set
	// one.
	Properties map[string]string
}

// DefaultBrokerTimeout is PublisherConfig.BrokerTimeout's default: long
// enough for a broker's restart, short enough that a simulation pointed
// at the wrong address says so instead of waiting for ever.
const DefaultBrokerTimeout = 30 * time.Second

// kafkaPartitioner is librdkafka's partitioner the publisher uses: a
// message goes to the partition its key hashes to (CRC32), so all
// messages of one key share a partition. It is librdkafka's default, and
// the global-hub agent's producer (confluent-kafka-go, no partitioner
// set) uses it: on a shared topic of several partitions each of a hub's
// event types has one partition, and its types spread over them.
const kafkaPartitioner = "consistent_random"

// queueFullBackoff is how long PublishMessage waits before trying again
// when the producer's local queue is full: about one linger.
const queueFullBackoff = 5 * time.Millisecond

// owned are the producer properties the publisher sets itself.
var owned = []string{"go.logs.channel.enable", "go.logs.channel", "go.delivery.reports", "go.events.channel.enable"}

func (c PublisherConfig) producerConfig() (*kafka.ConfigMap, error) {
	if strings.TrimSpace(c.Brokers) == "" {
		return nil, errors.New("simulator publisher: brokers: at least one bootstrap address is required")
	}
	if c.BrokerTimeout < 0 {
		return nil, fmt.Errorf("simulator publisher: broker timeout %v must not be negative", c.BrokerTimeout)
	}
	if c.Linger < 0 || c.BatchMessages < 0 || c.MaxMessageBytes < 0 {
		return nil, fmt.Errorf("simulator publisher: linger %v, batch messages %d and max message bytes %d must not be negative",
			c.Linger, c.BatchMessages, c.MaxMessageBytes)
	}
	for _, k := range owned {
		if _, ok := c.Properties[k]; ok {
			return nil, fmt.Errorf("simulator publisher: property %s is set by the publisher; remove it", k)
		}
	}
	def := func(v, d int) int {
		if v == 0 {
			return d
		}
		return v
	}
	linger := c.Linger
	if linger == 0 {
		linger = 5 * time.Millisecond
	}
	compression := c.Compression
	if compression == "" {
		compression = "lz4"
	}
	m := kafka.ConfigMap{
		"bootstrap.servers":  c.Brokers,
		"client.id":          "stb-simulate",
		"partitioner":        kafkaPartitioner,
		"linger.ms":          strconv.FormatInt(linger.Milliseconds(), 10),
		"batch.num.messages": strconv.Itoa(def(c.BatchMessages, 10000)),
		"compression.type":   compression,
		"message.max.bytes":  strconv.Itoa(def(c.MaxMessageBytes, 16<<20)),
		// Retries must not reorder a hub's messages.
		"enable.idempotence":  "true",
		"enable.metrics.push": "false",
		// Delivery reports are only counted: do not copy values back.
		"go.delivery.report.fields": "key",
	}
	for k, v := range c.Properties {
		m[k] = v
	}
	m["go.logs.channel.enable"] = true
	return &m, nil
}

// KafkaPublisher sends the simulator's messages to Kafka as their senders
// do: STB's messages in STB's wire format (EncodeSTB), keyed by hub, and
// the global-hub agent's (types under bundle.GlobalHubPrefix) as that
// agent encodes them (EncodeGH), keyed by their event type. Publishing is
// asynchronous: Flush waits for the delivery reports and returns the first
// delivery error. Run flushes it after the last message; Close releases
// the producer. It is safe for concurrent use, except that Close must not
// overlap the other methods.
type KafkaPublisher struct {
	typePrefix string
	producer   *kafka.Producer
	logger     *zap.Logger
	wg         sync.WaitGroup // delivery reports and log forwarding

	inflight atomic.Int64
	mu       sync.Mutex
	firstErr error // the first delivery error since the last Flush

	brokers       string
	brokerTimeout time.Duration
	// downSince is when librdkafka last said every broker was down
	// (UnixNano), 0 once a message was delivered since.
	downSince atomic.Int64

	closed    atomic.Bool
	closeOnce sync.Once
}

// ErrPublisherClosed is returned by a KafkaPublisher's methods after
// Close.
var ErrPublisherClosed = errors.New("simulator publisher closed")

// NewKafkaPublisher returns a publisher to cfg's brokers.
func NewKafkaPublisher(cfg PublisherConfig, logger *zap.Logger) (*KafkaPublisher, error) {
	cm, err := cfg.producerConfig()
	if err != nil {
		return nil, err
	}
	if logger == nil {
		logger = zap.NewNop()
	}
	producer, err := kafka.NewProducer(cm)
	if err != nil {
		return nil, fmt.Errorf("simulator publisher: create kafka producer: %w", redacted(err, cfg.Properties))
	}
	timeout := cfg.BrokerTimeout
	if timeout == 0 {
		timeout = DefaultBrokerTimeout
	}
	p := &KafkaPublisher{typePrefix: cfg.TypePrefix, producer: producer, logger: logger.With(zap.String("component", "sim-publisher")),
		brokers: cfg.Brokers, brokerTimeout: timeout}
	p.wg.Add(2)
	go func() {
		defer p.wg.Done()
		p.deliveries()
	}()
	go func() {
		defer p.wg.Done()
		for l := range producer.Logs() {
			p.logger.Debug(l.Message, zap.String("librdkafka", l.Tag), zap.Int("level", l.Level))
		}
	}()
	return p, nil
}

// Publish sends m, in the global-hub agent's format when its type is under
// bundle.GlobalHubPrefix, else in STB's.
func (p *KafkaPublisher) Publish(ctx context.Context, m Message) error {
	if strings.HasPrefix(m.Type, bundle.GlobalHubPrefix) {
		return p.PublishGH(ctx, GHMessage{Message: m})
	}
	msg, err := EncodeSTB(m, p.typePrefix)
	if err != nil {
		return err
	}
	return p.PublishMessage(ctx, msg)
}

// PublishGH sends a message of the global-hub agent as its producer does.
func (p *KafkaPublisher) PublishGH(ctx context.Context, m GHMessage) error {
	msg, err := EncodeGH(m)
	if err != nil {
		return err
	}
	return p.PublishMessage(ctx, msg)
}

// PublishMessage queues msg as it is. It returns once the message is
// queued, waiting only while the local queue is full; delivery errors are
// reported by Flush.
func (p *KafkaPublisher) PublishMessage(ctx context.Context, msg *kafka.Message) error {
	if p.closed.Load() {
		return ErrPublisherClosed
	}
	if err := p.unreachable(); err != nil {
		return err
	}
	var timer *time.Timer
	for {
		p.inflight.Add(1)
		err := p.producer.Produce(msg, nil)
		if err == nil {
			return nil
		}
		p.inflight.Add(-1)
		var kerr kafka.Error
		if !errors.As(err, &kerr) || kerr.Code() != kafka.ErrQueueFull {
			return fmt.Errorf("produce: %w", err)
		}
		if timer == nil {
			timer = time.NewTimer(queueFullBackoff)
			defer timer.Stop()
		} else {
			timer.Reset(queueFullBackoff)
		}
		select {
		case <-ctx.Done():
			return fmt.Errorf("produce: local queue full: %w", ctx.Err())
		case <-timer.C:
		}
		if err := p.unreachable(); err != nil {
			return err
		}
	}
}

// deliveries counts delivery reports until the producer closes its events
// channel.
func (p *KafkaPublisher) deliveries() {
	for ev := range p.producer.Events() {
		switch e := ev.(type) {
		case *kafka.Message:
			if err := e.TopicPartition.Error; err != nil {
				p.recordErr(fmt.Errorf("deliver message of %q to %v: %w", e.Key, e.TopicPartition, err))
			} else {
				p.downSince.Store(0)
			}
			p.inflight.Add(-1)
		case kafka.Error:
			if e.Code() == kafka.ErrAllBrokersDown {
				p.downSince.CompareAndSwap(0, time.Now().UnixNano())
			}
			if e.IsFatal() {
				p.recordErr(fmt.Errorf("kafka producer failed: %w", e))
			}
			p.logger.Warn("kafka error", zap.Error(e))
		}
	}
}

// ErrBrokersUnreachable is returned (wrapped) by Publish and Flush once
// every broker stayed unreachable for PublisherConfig.BrokerTimeout with
// nothing delivered.
var ErrBrokersUnreachable = errors.New("no broker reachable")

// unreachable returns an error once every broker has been down for the
// broker timeout with nothing delivered since.
func (p *KafkaPublisher) unreachable() error {
	since := p.downSince.Load()
	if since == 0 {
		return nil
	}
	if down := time.Since(time.Unix(0, since)); down >= p.brokerTimeout {
		return fmt.Errorf("%w: every broker of %q has been down for %v with nothing delivered: check the bootstrap servers (--kafka-brokers) and that Kafka is up",
			ErrBrokersUnreachable, p.brokers, down.Round(time.Second))
	}
	return nil
}

func (p *KafkaPublisher) recordErr(err error) {
	p.mu.Lock()
	defer p.mu.Unlock()
	if p.firstErr == nil {
		p.firstErr = err
	}
}

// Flush waits until every queued message has its delivery report, then
// returns the first delivery error since the previous Flush, if any.
func (p *KafkaPublisher) Flush(ctx context.Context) error {
	if p.closed.Load() {
		return ErrPublisherClosed
	}
	for p.inflight.Load() > 0 {
		if err := ctx.Err(); err != nil {
			return fmt.Errorf("flush: %d messages undelivered: %w", p.inflight.Load(), err)
		}
		if err := p.unreachable(); err != nil {
			return fmt.Errorf("flush: %d messages undelivered: %w", p.inflight.Load(), err)
		}
		if p.producer.Flush(100) == 0 && p.inflight.Load() > 0 {
			// librdkafka is done; the last reports are being counted.
			time.Sleep(time.Millisecond)
		}
	}
	p.mu.Lock()
	err := p.firstErr
	p.firstErr = nil
	p.mu.Unlock()
	return err
}

// Close closes the producer; messages not yet delivered are lost, so call
// Flush first. Safe to call more than once.
func (p *KafkaPublisher) Close() {
	p.closeOnce.Do(func() {
		p.closed.Store(true)
		p.producer.Close()
		p.wg.Wait()
	})
}

// redacted returns err's text with the values of props replaced, so that a
// refused secret (sasl.password) is not logged.
func redacted(err error, props map[string]string) error {
	s := err.Error()
	for _, v := range props {
		if len(v) >= 4 {
			s = strings.ReplaceAll(s, v, "[redacted]")
		}
	}
	return errors.New(s)
}
