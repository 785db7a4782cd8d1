package bridge

import (
	"context"
	"fmt"
	"time"

	"github.com/confluentinc/confluent-kafka-go/v2/kafka"
	"github.com/prometheus/client_golang/prometheus"
	"go.uber.org/zap"

	"github.com/stbridge/stb/conflation"
	"github.com/stbridge/stb/pkg/transport"
)

// resyncPublisher sends the resync requests of the conflation units to
// --resync-topic (README, "Resync requests"). The units' WakeAll hands
// them to send, which must not block (it runs on the dispatcher's wake
// loop): send only queues them, and run, which the bridge's Run owns,
// encodes and publishes them. A full queue drops what does not fit,
// counted as dropped: the unit asks again after --resync-interval.
type resyncPublisher struct {
	pub    messagePublisher
	topic  string
	prefix string
	logger *zap.Logger
	sent   *resyncCounters
	queue  chan conflation.Resync
}

// messagePublisher is what the resync publisher needs of
// transport.Publisher.
type messagePublisher interface {
	PublishMessage(ctx context.Context, msg *kafka.Message) error
	Flush(ctx context.Context) error
	Close()
}

// resyncCounters count the requests handed to Kafka, those that could not
// be, and those dropped because the queue was full; registered whether or
// not --resync-topic is set, so that dashboards always find them.
type resyncCounters struct {
	queued, failed, dropped prometheus.Counter
}

func newResyncCounters(reg prometheus.Registerer) (*resyncCounters, error) {
	vec := prometheus.NewCounterVec(prometheus.CounterOpts{
		Namespace: "stb", Subsystem: "resync", Name: "requests_total",
		Help: "Resync requests handed to Kafka (queued), not (failed), or dropped because the bridge's queue of requests to send was full (dropped); all stay 0 without --resync-topic.",
	}, []string{"result"})
	if err := reg.Register(vec); err != nil {
		return nil, fmt.Errorf("register resync metrics: %w", err)
	}
	return &resyncCounters{queued: vec.WithLabelValues("queued"), failed: vec.WithLabelValues("failed"),
		dropped: vec.WithLabelValues("dropped")}, nil
}

// resyncSendTimeout bounds the hand-over of one request to librdkafka's
// queue.
const resyncSendTimeout = time.Second

// resyncQueueLength bounds the requests waiting to be sent: a WakeAll pass
// asks at most once per hub and type per --resync-interval, so more than
// this waiting means Kafka does not take them.
const resyncQueueLength = 1024

func newResyncPublisher(cfg Config, logger *zap.Logger, counters *resyncCounters) (*resyncPublisher, error) {
	pub, err := transport.NewPublisher(transport.PublisherConfig{
		Brokers: cfg.Reader.Brokers, TypePrefix: cfg.Reader.TypePrefix, Properties: cfg.Reader.Properties,
	}, logger)
	if err != nil {
		return nil, err
	}
	return newResyncSender(pub, cfg.ResyncTopic, cfg.Reader.TypePrefix, logger, counters, resyncQueueLength), nil
}

func newResyncSender(pub messagePublisher, topic, prefix string, logger *zap.Logger, counters *resyncCounters, queue int) *resyncPublisher {
	return &resyncPublisher{pub: pub, topic: topic, prefix: prefix, logger: logger, sent: counters,
		queue: make(chan conflation.Resync, queue)}
}

// send is conflation.Config.OnResync: it queues the requests for run and
// never blocks.
func (r *resyncPublisher) send(rs []conflation.Resync) {
	for _, x := range rs {
		select {
		case r.queue <- x:
		default:
			r.sent.dropped.Inc()
			r.logger.Warn("resync request dropped: too many waiting to be sent; asked again after --resync-interval",
				zap.String("hub", x.Hub), zap.String("type", x.Type))
		}
	}
}

// run publishes the queued requests until ctx ends; what is still queued
// then is dropped (the units ask again after a restart).
func (r *resyncPublisher) run(ctx context.Context) error {
	for {
		select {
		case <-ctx.Done():
			return nil
		case x := <-r.queue:
			r.publish(ctx, x)
		}
	}
}

// publish hands one request to Kafka, within resyncSendTimeout.
func (r *resyncPublisher) publish(ctx context.Context, x conflation.Resync) {
	req := transport.ResyncRequest{Hub: x.Hub, BundleType: x.Type, Reason: "dependency_missing",
		WaitingType: x.WaitingType, WaitingVersion: x.Waiting.String()}
	if x.HasDependency {
		req.Dependency = x.Dependency.String()
	}
	if x.HasProcessed {
		req.Processed = x.Processed.String()
	}
	msg, err := transport.EncodeResync(r.topic, r.prefix, req, time.Now())
	if err == nil {
		sctx, cancel := context.WithTimeout(ctx, resyncSendTimeout)
		err = r.pub.PublishMessage(sctx, msg)
		cancel()
	}
	if err != nil {
		r.sent.failed.Inc()
		r.logger.Warn("resync request not sent", zap.String("hub", x.Hub), zap.String("type", x.Type), zap.Error(err))
		return
	}
	r.sent.queued.Inc()
	r.logger.Info("resync requested", zap.String("hub", x.Hub), zap.String("type", x.Type),
		zap.String("waiting", x.WaitingType+" "+req.WaitingVersion), zap.String("needs", req.Dependency))
}

func (r *resyncPublisher) close() {
	ctx, cancel := context.WithTimeout(context.Background(), 2*time.Second)
	defer cancel()
	_ = r.pub.Flush(ctx)
	r.pub.Close()
}
