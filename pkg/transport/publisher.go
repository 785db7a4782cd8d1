package transport

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
)

// Publisher defaults, tuned so that one publisher pushes tens of thousands
// of bundles a second: records wait a few milliseconds to share a batch,
// and batches are large and compressed.
const (
	DefaultLinger          = 5 * time.Millisecond
	DefaultBatchMessages   = 10000
	DefaultCompression     = "lz4"
	DefaultMaxMessageBytes = 16 << 20
)

// queueFullBackoff is how long Publish waits before retrying when the
// producer's local queue is full: about one linger, the time it takes a
// batch to leave.
const queueFullBackoff = 5 * time.Millisecond

// flushSlice bounds one wait inside Flush, so that Flush notices its
// context ending.
const flushSlice = 100 * time.Millisecond

// PublisherConfig configures a Publisher.
type PublisherConfig struct {
	// Brokers is the bootstrap list.
	Brokers string
	// TypePrefix precedes the bundle type; "" means DefaultTypePrefix.
	TypePrefix string
	// Linger is librdkafka's linger.ms; 0 means DefaultLinger.
	Linger time.Duration
	// BatchMessages is librdkafka's batch.num.messages; 0 means
	// DefaultBatchMessages.
	BatchMessages int
	// Compression is librdkafka's compression.type; "" means
	// DefaultCompression.
	Compression string
	// MaxMessageBytes is librdkafka's message.max.bytes; 0 means
	// DefaultMaxMessageBytes. The broker must accept as much.
	MaxMessageBytes int
	// Properties are extra librdkafka properties, applied last.
	Properties map[string]string
}

func (c PublisherConfig) withDefaults() PublisherConfig {
	if c.TypePrefix == "" {
		c.TypePrefix = DefaultTypePrefix
	}
	if c.Linger == 0 {
		c.Linger = DefaultLinger
	}
	if c.BatchMessages == 0 {
		c.BatchMessages = DefaultBatchMessages
	}
	if c.Compression == "" {
		c.Compression = DefaultCompression
	}
	if c.MaxMessageBytes == 0 {
		c.MaxMessageBytes = DefaultMaxMessageBytes
	}
	return c
}

// Validate checks the configuration with defaults applied.
func (c *PublisherConfig) Validate() error {
	d := c.withDefaults()
	var errs []error
	if strings.TrimSpace(d.Brokers) == "" {
		errs = append(errs, errors.New("brokers: at least one bootstrap address is required"))
	}
	if d.Linger < 0 {
		errs = append(errs, fmt.Errorf("linger must not be negative, got %v", d.Linger))
	}
	if d.BatchMessages < 0 {
		errs = append(errs, fmt.Errorf("batch messages must not be negative, got %d", d.BatchMessages))
	}
	if d.MaxMessageBytes < 0 {
		errs = append(errs, fmt.Errorf("max message bytes must not be negative, got %d", d.MaxMessageBytes))
	}
	for _, k := range []string{"go.logs.channel.enable", "go.logs.channel", "go.delivery.reports", "go.events.channel.enable"} {
		if _, ok := d.Properties[k]; ok {
			errs = append(errs, fmt.Errorf("property %s is set by the publisher", k))
		}
	}
	return errors.Join(errs...)
}

func (c PublisherConfig) producerConfig() *kafka.ConfigMap {
	m := kafka.ConfigMap{
		"bootstrap.servers":  c.Brokers,
		"client.id":          "stb-publisher",
		"linger.ms":          strconv.FormatInt(c.Linger.Milliseconds(), 10),
		"batch.num.messages": strconv.Itoa(c.BatchMessages),
		"compression.type":   c.Compression,
		"message.max.bytes":  strconv.Itoa(c.MaxMessageBytes),
		// Retries must not reorder a hub's bundles.
		"enable.idempotence":  "true",
		"enable.metrics.push": "false",
		// Delivery reports are only counted: do not copy values back.
		"go.delivery.report.fields": "key",
	}
	for k, v := range c.Properties {
		m[k] = v
	}
	m["go.logs.channel.enable"] = true
	return &m
}

// PublisherStats are running totals of a Publisher.
type PublisherStats struct {
	Published, Delivered, Failed uint64
}

// Publisher writes envelopes to Kafka asynchronously and counts their
// delivery reports. It is safe for concurrent use, except that Close must
// not overlap the other methods.
type Publisher struct {
	cfg      PublisherConfig
	producer *kafka.Producer
	logger   *zap.Logger
	wg       sync.WaitGroup // delivery report and log forwarders

	published, delivered, failed atomic.Uint64
	inflight                     atomic.Int64

	mu       sync.Mutex
	firstErr error // first delivery error since the last Flush

	closed    atomic.Bool // the producer must not be touched once closed
	closeOnce sync.Once
}

// ErrPublisherClosed is returned by a Publisher's methods after Close.
var ErrPublisherClosed = errors.New("publisher closed")

// NewPublisher creates the producer.
func NewPublisher(cfg PublisherConfig, logger *zap.Logger) (*Publisher, error) {
	cfg = cfg.withDefaults()
	if err := cfg.Validate(); err != nil {
		return nil, fmt.Errorf("publisher config: %w", err)
	}
	if logger == nil {
		logger = zap.NewNop()
	}
	base := logger
	logger = base.With(zap.String("component", "publisher"))
	producer, err := kafka.NewProducer(cfg.producerConfig())
	if err != nil {
		return nil, fmt.Errorf("create kafka producer: %w", RedactError(err, cfg.Properties))
	}
	p := &Publisher{cfg: cfg, producer: producer, logger: logger}
	p.wg.Add(2)
	go func() {
		defer p.wg.Done()
		p.deliveries()
	}()
	go func() {
		defer p.wg.Done()
		forwardLogs(producer.Logs(), base.With(zap.String("component", "librdkafka")))
	}()
	return p, nil
}

// Publish encodes env and queues it for sending. It returns once the
// message is queued, waiting only while the local queue is full; delivery
// errors are reported by Flush.
func (p *Publisher) Publish(ctx context.Context, env Envelope) error {
	msg, err := Encode(env, p.cfg.TypePrefix)
	if err != nil {
		return err
	}
	return p.PublishMessage(ctx, msg)
}

// PublishMessage queues a message as is: for raw or deliberately malformed
// input (tests, fault injection).
func (p *Publisher) PublishMessage(ctx context.Context, msg *kafka.Message) error {
	if p.closed.Load() {
		return ErrPublisherClosed
	}
	var timer *time.Timer
	for {
		p.inflight.Add(1)
		err := p.producer.Produce(msg, nil)
		if err == nil {
			p.published.Add(1)
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
	}
}

// deliveries counts delivery reports until the producer closes its events
// channel.
func (p *Publisher) deliveries() {
	for ev := range p.producer.Events() {
		switch e := ev.(type) {
		case *kafka.Message:
			if err := e.TopicPartition.Error; err != nil {
				p.failed.Add(1)
				p.recordErr(fmt.Errorf("deliver message of %q to %v: %w", e.Key, e.TopicPartition, err))
			} else {
				p.delivered.Add(1)
			}
			p.inflight.Add(-1)
		case kafka.Error:
			if e.IsFatal() {
				p.recordErr(fmt.Errorf("kafka producer failed: %w", e))
			}
			p.logger.Warn("kafka error", zap.Error(e), zap.Stringer("code", e.Code()))
		}
	}
}

func (p *Publisher) recordErr(err error) {
	p.mu.Lock()
	first := p.firstErr == nil
	if first {
		p.firstErr = err
	}
	p.mu.Unlock()
	if first {
		// Later failures are counted, not logged: a dead broker fails
		// every queued message at once.
		p.logger.Warn("delivery failed", zap.Error(err))
	}
}

// Flush waits until every queued message has its delivery report, then
// returns the first delivery error since the previous Flush, if any.
func (p *Publisher) Flush(ctx context.Context) error {
	if p.closed.Load() {
		return ErrPublisherClosed
	}
	for p.inflight.Load() > 0 {
		if err := ctx.Err(); err != nil {
			return fmt.Errorf("flush: %d messages undelivered: %w", p.inflight.Load(), err)
		}
		if p.producer.Flush(int(flushSlice.Milliseconds())) == 0 && p.inflight.Load() > 0 {
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

// Stats returns running totals.
func (p *Publisher) Stats() PublisherStats {
	return PublisherStats{Published: p.published.Load(), Delivered: p.delivered.Load(), Failed: p.failed.Load()}
}

// Close closes the producer; messages not yet delivered are lost, so call
// Flush first. Safe to call more than once.
func (p *Publisher) Close() {
	p.closeOnce.Do(func() {
		p.closed.Store(true)
		p.producer.Close()
		p.wg.Wait()
	})
}
