package bridge

import (
	"context"
	"fmt"
	"time"

	"github.com/prometheus/client_golang/prometheus"
	"go.uber.org/zap"

	"github.com/stbridge/stb/conflation"
	"github.com/stbridge/stb/pkg/transport"
)

// resyncPublisher sends the resync requests of the conflation units to
// --resync-topic (README, "Resync requests").
type resyncPublisher struct {
	pub    *transport.Publisher
	topic  string
	prefix string
	logger *zap.Logger
	sent   *resyncCounters
}

// resyncCounters count the requests handed to Kafka and those that could
// not be; registered whether or not --resync-topic is set, so that
// dashboards always find them.
type resyncCounters struct {
	queued, failed prometheus.Counter
}

func newResyncCounters(reg prometheus.Registerer) (*resyncCounters, error) {
	vec := prometheus.NewCounterVec(prometheus.CounterOpts{
		Namespace: "stb", Subsystem: "resync", Name: "requests_total",
		Help: "Resync requests handed to Kafka (queued) or not (failed); both stay 0 without --resync-topic.",
	}, []string{"result"})
	if err := reg.Register(vec); err != nil {
		return nil, fmt.Errorf("register resync metrics: %w", err)
	}
	return &resyncCounters{queued: vec.WithLabelValues("queued"), failed: vec.WithLabelValues("failed")}, nil
}

// resyncSendTimeout bounds the hand-over of one request to librdkafka's
// queue: the caller is the dispatcher's wake loop.
const resyncSendTimeout = time.Second

func newResyncPublisher(cfg Config, logger *zap.Logger, counters *resyncCounters) (*resyncPublisher, error) {
	pub, err := transport.NewPublisher(transport.PublisherConfig{
		Brokers: cfg.Reader.Brokers, TypePrefix: cfg.Reader.TypePrefix, Properties: cfg.Reader.Properties,
	}, logger)
	if err != nil {
		return nil, err
	}
	return &resyncPublisher{pub: pub, topic: cfg.ResyncTopic, prefix: cfg.Reader.TypePrefix, logger: logger, sent: counters}, nil
}

// send is conflation.Config.OnResync.
func (r *resyncPublisher) send(rs []conflation.Resync) {
	now := time.Now()
	for _, x := range rs {
		req := transport.ResyncRequest{Hub: x.Hub, BundleType: x.Type, Reason: "dependency_missing",
			WaitingType: x.WaitingType, WaitingVersion: x.Waiting.String()}
		if x.HasDependency {
			req.Dependency = x.Dependency.String()
		}
		if x.HasProcessed {
			req.Processed = x.Processed.String()
		}
		msg, err := transport.EncodeResync(r.topic, r.prefix, req, now)
		if err == nil {
			ctx, cancel := context.WithTimeout(context.Background(), resyncSendTimeout)
			err = r.pub.PublishMessage(ctx, msg)
			cancel()
		}
		if err != nil {
			r.sent.failed.Inc()
			r.logger.Warn("resync request not sent", zap.String("hub", x.Hub), zap.String("type", x.Type), zap.Error(err))
			continue
		}
		r.sent.queued.Inc()
		r.logger.Info("resync requested", zap.String("hub", x.Hub), zap.String("type", x.Type),
			zap.String("waiting", x.WaitingType+" "+req.WaitingVersion), zap.String("needs", req.Dependency))
	}
}

func (r *resyncPublisher) close() {
	ctx, cancel := context.WithTimeout(context.Background(), 2*time.Second)
	defer cancel()
	_ = r.pub.Flush(ctx)
	r.pub.Close()
}
