package transport

import (
	"context"
	"errors"
	"fmt"
	"sync"
	"sync/atomic"
	"time"

	"github.com/confluentinc/confluent-kafka-go/v2/kafka"
	"github.com/prometheus/client_golang/prometheus"
	"go.uber.org/zap"

	"github.com/stbridge/stb/pkg/bundle"
	"github.com/stbridge/stb/pkg/committer"
)

// Sink receives accepted bundles; the conflation manager implements it.
// Insert must not block: it runs on the reader's poll loop.
type Sink interface {
	Insert(b *bundle.Bundle)
}

// Offsets loads stored positions; committer.PGStore implements it.
type Offsets interface {
	Load(ctx context.Context, topic string, partition int32) (committer.Position, bool, error)
}

// Deps are the reader's collaborators.
type Deps struct {
	Decoder   Decoder
	Sink      Sink
	Committer *committer.Committer
	Offsets   Offsets
	// Rejects receives rejected messages; nil only logs and counts them.
	Rejects Rejects
	// Buffer reports the payload bytes held downstream, for backpressure
	// (Config.MaxBufferedBytes); the conflation manager implements it.
	Buffer Buffer
	// BeforeAssign, optional, runs in the rebalance callback before newly
	// assigned partitions are read. Another replica may have had them and
	// written what this bridge has not seen; the bridge refreshes what its
	// units know of the database from it (DESIGN.md §10). An error is
	// logged and the partitions are read anyway.
	BeforeAssign func(ctx context.Context) error
	// AfterRevoke, optional, runs in the rebalance callback for each
	// revoked partition, after its final commit and before librdkafka
	// hands it to another member: the bridge drops the partition's bundles
	// no worker has taken and waits (until ctx ends) for those in flight,
	// so that the new owner's writes never overlap this bridge's
	// (DESIGN.md §10). p is the partition's tracker.
	AfterRevoke func(ctx context.Context, p *committer.Partition)
	Logger      *zap.Logger
	Registerer  prometheus.Registerer
}

// Buffer reports how many payload bytes are held downstream.
type Buffer interface {
	HeldBytes() int64
}

// ErrClosed is returned by Run on a closed reader.
var ErrClosed = errors.New("transport reader closed")

// clusterIDAttemptTimeout bounds one attempt to read the cluster id. The
// client call behind it cannot be cancelled, only timed out, so Run retries
// short attempts rather than making one unbounded call.
const clusterIDAttemptTimeout = 5 * time.Second

// Stats are cheap running totals for a progress line.
type Stats struct {
	Read, Accepted, Rejected uint64
}

// Reader reads bundles from Kafka into a Sink. Run drives it; Close
// releases the consumer. In the shutdown sequence, cancelling Run's context
// is step 1 (stop reading) and Close comes last, after the final commit.
type Reader struct {
	cfg      Config
	rules    Rules
	deps     Deps
	logger   *zap.Logger
	metrics  *metrics
	consumer *kafka.Consumer
	logsDone chan struct{} // closed when the log forwarder has exited

	read, accepted, rejected atomic.Uint64

	// closing tells the poll loop to stop and the rebalance callback that
	// Close is revoking the partitions.
	closing atomic.Bool
	// runMu is held by Run for its whole life and by Close while closing
	// the consumer, which must never happen under a running Poll. The
	// fields below it are used only by whoever holds runMu: the poll loop
	// and the rebalance callback, which librdkafka calls from inside Poll
	// (or from inside Consumer.Close).
	runMu     sync.Mutex
	ran       bool
	runCtx    context.Context
	clusterID string
	parts     map[partitionKey]*committer.Partition
	topics    map[string]*topicCounters
	rejectsBy map[string]prometheus.Counter
	fatal     error // ends Run: an assignment failed or the client is dead
	paused    bool  // backpressure paused every assigned partition

	// The poll loop registers each message with its partition and hands
	// it to the decoding goroutine through decodeQ, so that polling
	// (librdkafka copying messages into Go) and decoding run on two cores.
	// pending counts messages sent and not yet decoded and handed on:
	// Add on the poll loop, Wait under runMu (the revocation), Done on the
	// decoding goroutine. queuedBytes is their data, counted by
	// backpressure like the bytes the units hold.
	decodeQ     chan polled
	pending     sync.WaitGroup
	queuedBytes atomic.Int64

	wm    watermarks
	stats *statsMetrics

	// kafkaMu keeps CommitKafka, which the committer calls from its own
	// goroutine, off the consumer once Close has begun closing it.
	// Lock order: runMu, then kafkaMu (CommitKafka may run inside the
	// rebalance callback, under runMu). No I/O under kafkaMu's write lock.
	kafkaMu     sync.RWMutex
	kafkaClosed bool

	closeOnce sync.Once
	closeErr  error
}

// polled is a message the poll loop registered with its partition, on its
// way to the decoding goroutine.
type polled struct {
	msg *kafka.Message
	p   *committer.Partition
	tc  *topicCounters
}

// decodeQueueLength bounds the messages between the poll loop and the
// decoding goroutine: enough to ride out a slow message, few enough that
// their bytes stay small next to --max-buffered-bytes.
const decodeQueueLength = 256

type partitionKey struct {
	topic     string
	partition int32
}

// NewReader creates the consumer; nothing is read until Run.
func NewReader(cfg Config, deps Deps) (*Reader, error) {
	cfg = cfg.withDefaults()
	if err := cfg.Validate(); err != nil {
		return nil, fmt.Errorf("transport config: %w", err)
	}
	switch {
	case deps.Decoder == nil:
		return nil, errors.New("transport reader: a Decoder is required")
	case deps.Sink == nil:
		return nil, errors.New("transport reader: a Sink is required")
	case deps.Committer == nil:
		return nil, errors.New("transport reader: a Committer is required")
	case deps.Offsets == nil:
		return nil, errors.New("transport reader: an Offsets store is required")
	}
	base := deps.Logger
	if base == nil {
		base = zap.NewNop()
	}
	logger := base.With(zap.String("component", "transport"))
	m, err := newMetrics(deps.Registerer)
	if err != nil {
		return nil, err
	}
	sm := newStatsMetrics()
	if deps.Registerer != nil {
		for _, c := range sm.collectors() {
			if err := deps.Registerer.Register(c); err != nil {
				return nil, fmt.Errorf("register kafka statistics metrics: %w", err)
			}
		}
	}
	consumer, err := kafka.NewConsumer(cfg.consumerConfig())
	if err != nil {
		return nil, fmt.Errorf("create kafka consumer: %w", err)
	}
	r := &Reader{
		cfg: cfg,
		rules: Rules{
			TypePrefix:     cfg.TypePrefix,
			VerifySource:   cfg.VerifySource,
			MaxBundleBytes: cfg.MaxBundleBytes,
			Decoder:        deps.Decoder,
		},
		deps:      deps,
		logger:    logger,
		metrics:   m,
		stats:     sm,
		consumer:  consumer,
		logsDone:  make(chan struct{}),
		parts:     map[partitionKey]*committer.Partition{},
		topics:    map[string]*topicCounters{},
		rejectsBy: map[string]prometheus.Counter{},
	}
	for _, reason := range Reasons {
		r.rejectsBy[reason] = m.rejected.WithLabelValues(reason)
	}
	go func() {
		defer close(r.logsDone)
		forwardLogs(consumer.Logs(), base.With(zap.String("component", "librdkafka")))
	}()
	return r, nil
}

// Run subscribes and reads until ctx ends or Close is called, and returns
// nil then; it returns an error only when reading cannot go on. It returns
// after everything it started has finished. Run may be called once.
func (r *Reader) Run(ctx context.Context) error {
	r.runMu.Lock()
	defer r.runMu.Unlock()
	if r.closing.Load() {
		return ErrClosed
	}
	if r.ran {
		return errors.New("transport reader: Run called twice")
	}
	r.ran = true
	r.runCtx = ctx

	id, err := r.fetchClusterID(ctx)
	if err != nil {
		if ctx.Err() != nil || errors.Is(err, ErrClosed) {
			return nil // stopped before Kafka answered: not a failure
		}
		return err
	}
	r.clusterID = id
	r.deps.Committer.SetClusterID(id)

	if err := r.consumer.SubscribeTopics(r.cfg.Topics, r.rebalance); err != nil {
		return fmt.Errorf("subscribe to %v: %w", r.cfg.Topics, err)
	}
	r.logger.Info("reading", zap.Strings("topics", r.cfg.Topics), zap.String("group", r.cfg.GroupID),
		zap.String("clusterId", id))

	r.decodeQ = make(chan polled, decodeQueueLength)
	decoded := make(chan struct{})
	go func() {
		defer close(decoded)
		r.decodeLoop(ctx)
	}()
	// Everything polled is decoded and handed on before Run returns.
	defer func() {
		close(r.decodeQ)
		<-decoded
	}()

	pollMs := int(r.cfg.PollTimeout.Milliseconds())
	for ctx.Err() == nil && !r.closing.Load() && r.fatal == nil {
		switch ev := r.consumer.Poll(pollMs).(type) {
		case nil:
		case *kafka.Message:
			if ev.TopicPartition.Error != nil {
				r.kafkaError(ev.TopicPartition.Error, zap.Stringer("partition", ev.TopicPartition))
				continue
			}
			r.handle(ctx, ev)
		case kafka.Error:
			r.kafkaError(ev)
		case *kafka.Stats:
			r.onStats(ev.String())
		case kafka.PartitionEOF:
			r.logger.Debug("end of partition", zap.Stringer("partition", kafka.TopicPartition(ev)))
		default:
			r.logger.Debug("kafka event", zap.Stringer("event", ev))
		}
		r.backpressure()
	}
	return r.fatal
}

// backpressure pauses every assigned partition while too many bytes are
// held downstream and resumes them below 80 % of the limit. Pausing in
// librdkafka also drops what it had prefetched for those partitions, so
// reading resumes right after the last message handed out.
func (r *Reader) backpressure() {
	limit := r.cfg.MaxBufferedBytes
	if limit <= 0 || r.deps.Buffer == nil {
		return
	}
	held := r.deps.Buffer.HeldBytes() + r.queuedBytes.Load()
	switch {
	case !r.paused && held > limit:
		parts, err := r.consumer.Assignment()
		if err != nil {
			r.kafkaError(err)
			return
		}
		if err := r.consumer.Pause(parts); err != nil {
			r.kafkaError(err)
			return
		}
		r.paused = true
		r.metrics.pauses.Inc()
		r.metrics.paused.Set(float64(len(parts)))
		r.logger.Info("buffer full; pausing partitions", zap.Int64("bufferedBytes", held), zap.Int64("limit", limit), zap.Int("partitions", len(parts)))
	case r.paused && held < limit/10*8:
		parts, err := r.consumer.Assignment()
		if err != nil {
			r.kafkaError(err)
			return
		}
		if err := r.consumer.Resume(parts); err != nil {
			r.kafkaError(err)
			return
		}
		r.paused = false
		r.metrics.resumes.Inc()
		r.metrics.paused.Set(0)
		r.logger.Info("buffer drained; resuming partitions", zap.Int64("bufferedBytes", held), zap.Int("partitions", len(parts)))
	}
}

// fetchClusterID asks the brokers for the cluster id, retrying until they
// answer or ctx ends: stored positions are only trusted for the cluster
// they were read from.
func (r *Reader) fetchClusterID(ctx context.Context) (string, error) {
	admin, err := kafka.NewAdminClientFromConsumer(r.consumer)
	if err != nil {
		return "", fmt.Errorf("admin client: %w", err)
	}
	defer admin.Close()
	for {
		attempt, cancel := context.WithTimeout(ctx, clusterIDAttemptTimeout)
		id, err := admin.ClusterID(attempt)
		cancel()
		if err == nil {
			return id, nil
		}
		if ctx.Err() != nil {
			return "", ctx.Err()
		}
		if r.closing.Load() {
			return "", ErrClosed
		}
		r.logger.Warn("kafka cluster id not available yet; retrying",
			zap.String("brokers", r.cfg.Brokers), zap.Error(err))
	}
}

// handle registers one message with its partition and queues it for the
// decoding goroutine. It runs on the poll loop for every message: no
// logging and no allocation.
func (r *Reader) handle(ctx context.Context, msg *kafka.Message) {
	r.read.Add(1)
	tp := msg.TopicPartition
	if tp.Topic == nil {
		// A consumed message always has its topic; do not trust that
		// with a panic.
		r.logger.Warn("message without a topic; skipped", zap.Stringer("partition", tp))
		return
	}
	topic := *tp.Topic
	p := r.parts[partitionKey{topic, tp.Partition}]
	if p == nil {
		// Only possible if librdkafka delivered a message of a partition
		// it did not assign through our callback. Not registering the
		// offset leaves it to whoever owns the partition.
		r.logger.Warn("message from a partition not assigned to the reader; skipped",
			zap.String("topic", topic), zap.Int32("partition", tp.Partition), zap.Int64("offset", int64(tp.Offset)))
		return
	}
	// Registered before anyone can call Done for it.
	p.Read(int64(tp.Offset))

	tc := r.topics[topic]
	if tc == nil {
		tc = r.metrics.forTopic(topic)
		r.topics[topic] = tc
	}
	size := int64(len(msg.Value))
	r.pending.Add(1)
	r.queuedBytes.Add(size)
	select {
	case r.decodeQ <- polled{msg, p, tc}:
	case <-ctx.Done():
		// Stopping: the message stays read and not done, so the committed
		// position stays before it and a restart reads it again.
		r.queuedBytes.Add(-size)
		r.pending.Done()
	}
}

// decodeLoop decodes the queued messages in the order they were polled
// (so each partition's bundles reach the sink in offset order) until the
// queue is closed.
func (r *Reader) decodeLoop(ctx context.Context) {
	for it := range r.decodeQ {
		r.decode(ctx, it)
		r.queuedBytes.Add(-int64(len(it.msg.Value)))
		r.pending.Done()
	}
}

// decode turns one message into a bundle for the sink, or rejects it. No
// logging and no allocation beyond the decoding on the accepted path.
func (r *Reader) decode(ctx context.Context, it polled) {
	b, rej := Decode(it.msg, r.rules, time.Now())
	if rej != nil {
		r.reject(ctx, it.p, rej, it.tc)
		return
	}
	r.accepted.Add(1)
	it.tc.accepted.Inc()
	b.Track(it.p)
	r.deps.Sink.Insert(b)
}

// reject logs, counts and dead-letters a message, then marks it done so the
// partition's committed position moves past it.
func (r *Reader) reject(ctx context.Context, p *committer.Partition, rej *Reject, tc *topicCounters) {
	r.rejected.Add(1)
	tc.rejected.Inc()
	r.rejectsBy[rej.Reason].Inc()
	fields := []zap.Field{
		zap.String("reason", rej.Reason),
		zap.String("topic", rej.Origin.Topic),
		zap.Int32("partition", rej.Origin.Partition),
		zap.Int64("offset", rej.Origin.Offset),
		zap.Error(rej.Err),
	}
	if rej.Hub != "" {
		fields = append(fields, zap.String("hub", rej.Hub))
	}
	if rej.Type != "" {
		fields = append(fields, zap.String("type", rej.Type))
	}
	r.logger.Warn("message rejected", fields...)
	if r.deps.Rejects != nil {
		if err := r.deps.Rejects.Reject(ctx, *rej); err != nil {
			r.logger.Error("dead letter not stored; the offset stays uncommitted so a restart rejects the message again",
				append(fields, zap.NamedError("deadLetterError", err))...)
			return
		}
	}
	p.Done(rej.Origin)
}

// kafkaError logs and counts an error the client reported. librdkafka
// recovers from all but fatal ones by itself.
func (r *Reader) kafkaError(err error, fields ...zap.Field) {
	var kerr kafka.Error
	if !errors.As(err, &kerr) {
		r.metrics.kafkaErrors.WithLabelValues("unknown").Inc()
		r.logger.Warn("kafka error", append(fields, zap.Error(err))...)
		return
	}
	r.metrics.kafkaErrors.WithLabelValues(kerr.Code().String()).Inc()
	fields = append(fields, zap.Error(kerr), zap.Stringer("code", kerr.Code()))
	switch {
	case kerr.IsFatal():
		r.logger.Error("fatal kafka error; the reader stops", fields...)
		r.fatal = fmt.Errorf("kafka client failed: %w", kerr)
	case kerr.Code() == kafka.ErrAssignmentLost:
		r.logger.Warn("partition assignment lost; the group will reassign", fields...)
	default:
		r.logger.Warn("kafka error", fields...)
	}
}

// Stats returns running totals; safe to call at any time.
func (r *Reader) Stats() Stats {
	return Stats{Read: r.read.Load(), Accepted: r.accepted.Load(), Rejected: r.rejected.Load()}
}

// CommitKafka commits positions to the consumer group, so that standard lag
// tools see the bridge's progress; wire it as the committer's OnCommit.
// Postgres stays the source of truth, so a failure is only logged. It is
// safe to call from any goroutine, and does nothing once Close has begun.
func (r *Reader) CommitKafka(ps []committer.Position) {
	if len(ps) == 0 {
		return
	}
	tps := make([]kafka.TopicPartition, len(ps))
	for i, p := range ps {
		topic := p.Topic
		tps[i] = kafka.TopicPartition{Topic: &topic, Partition: p.Partition, Offset: kafka.Offset(p.Offset)}
	}
	r.kafkaMu.RLock()
	defer r.kafkaMu.RUnlock()
	if r.kafkaClosed {
		return
	}
	if _, err := r.consumer.CommitOffsets(tps); err != nil {
		code := "unknown"
		var kerr kafka.Error
		if errors.As(err, &kerr) {
			code = kerr.Code().String()
		}
		r.metrics.kafkaErrors.WithLabelValues(code).Inc()
		r.logger.Warn("committing positions to the consumer group failed; lag tools will lag behind",
			zap.Int("partitions", len(tps)), zap.Error(err))
	}
}

// Close stops Run, if it is running, and closes the consumer, which leaves
// the group. The shutdown sequence calls it after the final commit, so the
// revocation that closing triggers does not commit again. Safe to call more
// than once.
func (r *Reader) Close() error {
	r.closeOnce.Do(func() {
		r.closing.Store(true)
		r.runMu.Lock() // Run's loop sees closing within one poll
		defer r.runMu.Unlock()
		r.kafkaMu.Lock()
		r.kafkaClosed = true
		r.kafkaMu.Unlock()
		if err := r.consumer.Close(); err != nil {
			r.closeErr = fmt.Errorf("close kafka consumer: %w", err)
		}
		<-r.logsDone
	})
	return r.closeErr
}
