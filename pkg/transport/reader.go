package transport

import (
	"context"
	"errors"
	"fmt"
	"runtime/debug"
	"sync"
	"sync/atomic"
	"time"

	"github.com/confluentinc/confluent-kafka-go/v2/kafka"
	"github.com/prometheus/client_golang/prometheus"
	"go.uber.org/zap"

	"github.com/stbridge/stb/pkg/bundle"
	"github.com/stbridge/stb/pkg/deadletter"
)

// Sink receives accepted bundles; the conflation manager implements it.
// Insert must not block: it runs on the reader's decoding goroutine, which
// the poll loop feeds.
type Sink interface {
	Insert(b *bundle.Bundle)
}

// Partition is what the reader needs of the tracker of one assigned
// partition; *committer.Partition implements it. Read registers a message
// before it is handed on; the bundle made of it (or its dead letter) calls
// Done once the bridge is finished with it.
type Partition interface {
	bundle.Tracker
	Read(offset int64)
	// Committed is the position last stored in Postgres (-1: none); the
	// reader mirrors it into the Kafka consumer group for lag tools.
	Committed() int64
	// SetHighWatermark records the partition's high watermark, for lag.
	SetHighWatermark(offset int64)
	// Idle is closed once nothing read is outstanding.
	Idle() <-chan struct{}
}

// Positions is what the reader needs of the committer, which tracks the
// assigned partitions and stores their positions.
type Positions interface {
	// SetClusterID records the Kafka cluster id stored beside positions.
	SetClusterID(id string)
	// Assign starts tracking a partition read from start (-1: the broker
	// decides, by auto.offset.reset).
	Assign(topic string, partition int32, start int64) Partition
	// Revoke stores a revoked partition's position a last time and stops
	// tracking it.
	Revoke(ctx context.Context, topic string, partition int32) error
}

// StoredPosition is a partition's position as stored in Postgres, and the
// Kafka cluster it was read from.
type StoredPosition struct {
	Offset    int64
	ClusterID string
}

// Offsets claims a partition's stored position when it is assigned (so
// that a replica that loses it can no longer move it) and returns it;
// committer.PGStore implements it through the bridge.
type Offsets interface {
	Claim(ctx context.Context, topic string, partition int32) (StoredPosition, bool, error)
}

// Dropper forgets what the pipeline holds of a revoked partition: the
// reader calls DropPartition after the partition's final commit, waits
// until the partition is idle (its writes in flight have finished) or the
// revocation timeout ends, and then calls end. conflation.Manager
// implements it.
type Dropper interface {
	DropPartition(topic string, partition int32) (end func())
}

// Deps are the reader's collaborators.
type Deps struct {
	Decoder   Decoder
	Sink      Sink
	Positions Positions
	Offsets   Offsets
	// Rejects receives rejected messages; nil only logs and counts them.
	Rejects Rejects
	// Buffer reports the bytes held downstream (bundle.Bundle.HeldBytes), for backpressure
	// (Config.MaxBufferedBytes); the conflation manager implements it.
	Buffer Buffer
	// BeforeAssign, optional, runs in the rebalance callback before newly
	// assigned partitions are read, with those partitions. Another replica
	// may have had them and written what this bridge has not seen; the
	// bridge refreshes what its units know of the database of the hubs
	// they carry (docs/design.md, Scaling out). Its context ends after
	// Config.AssignTimeout, which bounds the whole callback's database
	// work, so that a database that hangs cannot hold the poll loop past
	// max.poll.interval.ms. An error is logged and the partitions are read
	// anyway.
	BeforeAssign func(ctx context.Context, parts []PartitionID) error
	// Dropper, optional, forgets what is held of revoked partitions so
	// that their new owner, which reads it again, never writes alongside
	// this bridge (docs/design.md, Scaling out).
	Dropper Dropper
	// Families, optional, are the wire profiles read beside STB's format
	// (family.go): the global-hub agent's (GlobalHub), the status
	// families. An event whose type a family owns is its, and a family
	// that is an Assembler has its chunked events assembled first
	// (globalhub_chunks.go). None reads STB's format only.
	Families   []Family
	Logger     *zap.Logger
	Registerer prometheus.Registerer
}

// PartitionID names one Kafka partition.
type PartitionID struct {
	Topic     string
	Partition int32
}

// Buffer reports how many bytes bundles held downstream keep (bundle.Bundle.HeldBytes).
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
	// downSince is when the client said every broker was down (UnixNano),
	// 0 once one answered since (brokers.go).
	downSince atomic.Int64

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
	parts     map[partitionKey]Partition
	// ends are the assigned partitions' high watermarks, for Behind.
	ends ends
	// topics are each topic's message counters, those of its label.
	topics map[string]*topicCounters
	// rejectsBy counts rejects by reason: the read reasons, and
	// rejectOther every other one (a family's own, README "Adding a
	// family"), so that the label set stays bounded whatever a family or
	// decoder returns. Used by the decoding goroutine only.
	rejectsBy   map[deadletter.Reason]prometheus.Counter
	rejectOther prometheus.Counter
	// rejectLog limits the "message rejected" lines a flood of bad
	// messages makes; used by the decoding goroutine only.
	rejectLog logLimit
	fatal     error // ends Run: an assignment failed or the client is dead
	paused    bool  // backpressure paused every assigned partition

	// The poll loop registers each message with its partition and hands
	// it to the decoding goroutine through decodeQ, so that polling
	// (librdkafka copying messages into Go) and decoding run on two cores.
	// It hands them on in batches: batch collects what Poll returns
	// without waiting and goes when Poll finds nothing more or it is full,
	// so a backlog costs one channel send and one wake-up per batch, not
	// per message, and a message that arrives alone waits for one Poll
	// that returns at once. free returns the decoded batches for reuse.
	// pending counts batches sent and not yet decoded and handed on: Add
	// on the poll loop, Wait under runMu (the revocation, after a flush),
	// Done on the decoding goroutine. queuedBytes is what every message
	// polled and not yet decoded will hold as a bundle (heldBytes),
	// counted by backpressure like the bytes the units hold.
	decodeQ     chan []polled
	free        chan []polled
	batch       []polled
	pending     sync.WaitGroup
	queuedBytes atomic.Int64

	// labels names the subscription entry behind each topic read, the
	// `topic` label of the metrics.
	labels *TopicLabels
	stats  *statsMetrics
	// groupStored is, per partition, the position last stored for the
	// consumer group; only the poll loop and the rebalance callback (both
	// under runMu) use it.
	groupStored    map[partitionKey]int64
	lastGroupStore time.Time

	// families are Deps.Families by what they offer.
	families familySet
	// chunks holds, per Assembler family, chunks of its events until they
	// are whole; empty without one. The decoding goroutine uses it, and the
	// revocation while that goroutine is idle. givenUp collects, on the
	// decoding goroutine, the first chunks of the events it gave up, to
	// be dead-lettered once the assembler is done with the message
	// (rejectGivenUp); collect is the function that collects them, made
	// once. lastChunkTick is when the poll loop last made the decoding
	// goroutine look for expired events (tickChunks).
	chunks        []*chunkAssembler
	givenUp       []givenUp
	collect       func(first polled, reason deadletter.Reason, err error)
	lastChunkTick time.Time

	closeOnce sync.Once
	closeErr  error
}

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
	case deps.Positions == nil:
		return nil, errors.New("transport reader: Positions (the committer) are required")
	case deps.Offsets == nil:
		return nil, errors.New("transport reader: an Offsets store is required")
	}
	if err := checkFamilies(deps.Families); err != nil {
		return nil, err
	}
	base := deps.Logger
	if base == nil {
		base = zap.NewNop()
	}
	logger := base.With(zap.String("component", "transport"))
	labels := cfg.TopicLabels()
	m, err := newMetrics(deps.Registerer)
	if err != nil {
		return nil, err
	}
	sm := newStatsMetrics(labels)
	if deps.Registerer != nil {
		if err := deps.Registerer.Register(sm); err != nil {
			return nil, fmt.Errorf("register kafka statistics metrics: %w", err)
		}
	}
	consumer, err := kafka.NewConsumer(cfg.consumerConfig())
	if err != nil {
		return nil, fmt.Errorf("create kafka consumer: %w", RedactError(err, cfg.Properties))
	}
	r := newReader(cfg, deps, logger, m, labels)
	r.stats, r.consumer = sm, consumer
	go func() {
		defer close(r.logsDone)
		forwardLogs(consumer.Logs(), base.With(zap.String("component", "librdkafka")))
	}()
	return r, nil
}

// rejectOtherLabel is the reason label of stb_transport_rejected_total
// under which a reject of any reason but the read reasons is counted.
const rejectOtherLabel = "other"

// newReader is the Reader of a validated, defaulted cfg without its
// consumer: what the poll loop's hand-off and the decoding goroutine use.
func newReader(cfg Config, deps Deps, logger *zap.Logger, m *metrics, labels *TopicLabels) *Reader {
	r := &Reader{
		cfg:      cfg,
		rules:    cfg.Rules(deps.Decoder),
		deps:     deps,
		logger:   logger,
		metrics:  m,
		labels:   labels,
		logsDone: make(chan struct{}),
		parts:    map[partitionKey]Partition{},

		groupStored: map[partitionKey]int64{},
		topics:      map[string]*topicCounters{},
		rejectsBy:   map[deadletter.Reason]prometheus.Counter{},
		rejectOther: m.rejected.WithLabelValues(rejectOtherLabel),
	}
	for _, reason := range deadletter.ReadReasons {
		r.rejectsBy[reason] = m.rejected.WithLabelValues(string(reason))
	}
	r.families = splitFamilies(deps.Families)
	for _, a := range r.families.assemblers {
		r.chunks = append(r.chunks, newChunkAssembler(a, a.MaxEventBytes(cfg.MaxBundleBytes)))
	}
	r.collect = r.collectGivenUp
	return r
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
	r.deps.Positions.SetClusterID(id)

	if err := r.consumer.SubscribeTopics(r.cfg.Topics, r.rebalance); err != nil {
		return fmt.Errorf("subscribe to %v: %w", r.cfg.Topics, err)
	}
	r.logger.Info("reading", zap.Strings("topics", r.cfg.Topics), zap.String("group", r.cfg.GroupID),
		zap.String("clusterId", id))

	r.decodeQ = make(chan []polled, decodeQueueBatches)
	r.free = make(chan []polled, decodeQueueBatches+1)
	r.batch = make([]polled, 0, handoffBatch)
	decoded := make(chan struct{})
	go func() {
		defer close(decoded)
		r.decodeLoop(ctx)
	}()
	// Everything polled is decoded and handed on before Run returns
	// (unless ctx ended: see handOff).
	defer func() {
		r.handOff(ctx)
		close(r.decodeQ)
		<-decoded
	}()

	pollMs := int(r.cfg.PollTimeout.Milliseconds())
	for ctx.Err() == nil && !r.closing.Load() && r.fatal == nil {
		wait := pollMs
		if len(r.batch) > 0 {
			wait = 0 // take what is ready; hand the batch on when nothing is
		}
		switch ev := r.consumer.Poll(wait).(type) {
		case nil:
			r.handOff(ctx)
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
		r.tickChunks(ctx, time.Now())
		r.maybeStoreGroupOffsets()
	}
	return r.fatal
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

// handle registers one message with its partition and adds it to the
// batch for the decoding goroutine. It runs on the poll loop for every
// message: no logging and no allocation.
func (r *Reader) handle(ctx context.Context, msg *kafka.Message) {
	r.read.Add(1)
	r.noteBrokerUp()
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
	r.observeEnd(partitionKey{topic, tp.Partition}, int64(tp.Offset))

	tc := r.topics[topic]
	if tc == nil {
		tc = r.metrics.forTopic(r.labels.Label(topic))
		r.topics[topic] = tc
	}
	held := heldBytes(msg, len(msg.Value))
	r.queuedBytes.Add(int64(held))
	r.batch = append(r.batch, polled{msg: msg, p: p, tc: tc, held: held})
	if len(r.batch) == handoffBatch {
		r.handOff(ctx)
	}
}

// decode turns one message into a bundle for the sink, or rejects it. No
// logging and no allocation beyond the decoding on the accepted path.
//
// Everything done for the message — assembling chunks, decoding, counting
// and dead-lettering a reject, handing a bundle on — is inside one
// recover: a panic anywhere in it (a bug of the bridge's, of a family's or
// of a collaborator's) makes the message a decode_panic dead letter
// (panicked) and reading goes on, where it would stop the bridge at that
// message after every restart. Only the decoder was inside it once: a
// family's own dead-letter reason, which reject had no counter for,
// killed the process at the same offset on every start (issue 34).
func (r *Reader) decode(ctx context.Context, it polled) {
	cur := it // the message a panic dead-letters
	defer func() {
		if v := recover(); v != nil {
			r.panicked(cur, v)
		}
	}()
	for _, c := range r.chunks {
		out, whole := c.add(it, r.collect)
		r.rejectGivenUp()
		if !whole {
			return // a chunk held until its event is whole
		}
		cur, it = out, out
	}
	b, rej := r.decodeMessage(it.msg)
	if rej != nil && rej.Skipped {
		r.metrics.skipped.WithLabelValues(rej.Type).Inc()
		it.p.Done(rej.Origin)
		return
	}
	if rej != nil {
		r.reject(it.p, rej, it.tc)
		return
	}
	r.accepted.Add(1)
	it.tc.accepted.Inc()
	b.Track(it.p)
	r.deps.Sink.Insert(b)
}

// panicked dead-letters, as decode_panic, the message whose handling
// panicked with v, and logs it at error level with the stack. The message
// may have been handed on already (the panic was in the sink, or in the
// dead-letter queue); marking an offset done twice is harmless, and the
// letter keeps a copy of what might otherwise be lost.
func (r *Reader) panicked(it polled, v any) {
	stack := debug.Stack()
	if it.msg == nil || it.p == nil {
		r.logger.Error("handling a message panicked", zap.Any("panic", v), zap.ByteString("stack", stack))
		return
	}
	origin := originOf(it.msg)
	r.logger.Error("handling a message panicked; dead-lettering it", zap.String("topic", origin.Topic),
		zap.Int32("partition", origin.Partition), zap.Int64("offset", origin.Offset),
		zap.Any("panic", v), zap.ByteString("stack", stack))
	r.rejectLast(it.p, newReject(it.msg, origin, deadletter.DecodePanic, fmt.Errorf("panicked: %v", v)), it.tc)
}

// rejectLast is reject for a message whose handling panicked already. If
// dead-lettering it panics too, nothing else can be done for it: it is
// logged at error level and marked done, so that it holds neither the
// reader nor its partition's committed position.
func (r *Reader) rejectLast(p Partition, rej *Reject, tc *topicCounters) {
	defer func() {
		v := recover()
		if v == nil {
			return
		}
		r.logger.Error("dead-lettering a message panicked; it is dropped without a dead letter",
			zap.String("reason", string(rej.Reason)), zap.String("topic", rej.Origin.Topic),
			zap.Int32("partition", rej.Origin.Partition), zap.Int64("offset", rej.Origin.Offset),
			zap.Any("panic", v), zap.ByteString("stack", debug.Stack()))
		p.Done(rej.Origin)
	}()
	r.reject(p, rej, tc)
}

// originOf is where msg was read.
func originOf(msg *kafka.Message) bundle.Origin {
	origin := bundle.Origin{Offset: -1, Partition: -1}
	if tp := msg.TopicPartition; tp.Topic != nil {
		origin = bundle.Origin{Topic: *tp.Topic, Partition: tp.Partition, Offset: int64(tp.Offset)}
	}
	return origin
}

// reject logs and counts a message and hands it to Deps.Rejects, which
// marks it done once its dead letter is stored; only then may the
// partition's committed position move past it. Nothing here waits.
func (r *Reader) reject(p Partition, rej *Reject, tc *topicCounters) {
	r.rejected.Add(1)
	tc.rejected.Inc()
	c := r.rejectsBy[rej.Reason]
	if c == nil {
		c = r.rejectOther // a reason of a family's: the label set stays bounded
	}
	c.Inc()
	if r.rejectLog.allow(time.Now()) {
		fields := []zap.Field{
			zap.String("reason", string(rej.Reason)),
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
		if n := r.rejectLog.takeSuppressed(); n > 0 {
			fields = append(fields, zap.Int64("notLoggedBefore", n))
		}
		r.logger.Warn("message rejected", fields...)
	}
	if r.deps.Rejects == nil {
		p.Done(rej.Origin)
		return
	}
	// Done once the dead letter is stored, by whoever stores it.
	rej.Track(p)
	r.deps.Rejects.Add(rej.Letter, rej.Release)
}

// Stats returns running totals; safe to call at any time.
func (r *Reader) Stats() Stats {
	return Stats{Read: r.read.Load(), Accepted: r.accepted.Load(), Rejected: r.rejected.Load()}
}

// groupStoreInterval is how often the poll loop hands the positions stored
// in Postgres to librdkafka for the consumer group.
const groupStoreInterval = time.Second

// maybeStoreGroupOffsets hands, every groupStoreInterval, the positions
// stored in Postgres to librdkafka, which commits them to the consumer
// group in the background (enable.auto.commit with the offset store left
// to the reader), so that standard lag tools see the bridge's progress.
// Postgres stays the source of truth. Storing is local to the client: the
// poll loop never waits for the broker.
func (r *Reader) maybeStoreGroupOffsets() {
	if time.Since(r.lastGroupStore) < groupStoreInterval {
		return
	}
	r.lastGroupStore = time.Now()
	r.storeGroupOffsets(r.parts)
}

// storeGroupOffsets stores the Postgres positions of parts that moved since
// they were last stored.
func (r *Reader) storeGroupOffsets(parts map[partitionKey]Partition) {
	var tps []kafka.TopicPartition
	for k, p := range parts {
		pos := p.Committed()
		if pos < 0 || pos <= r.groupStored[k] {
			continue
		}
		topic := k.topic
		tps = append(tps, kafka.TopicPartition{Topic: &topic, Partition: k.partition, Offset: kafka.Offset(pos)})
		r.groupStored[k] = pos
	}
	if len(tps) == 0 {
		return
	}
	if _, err := r.consumer.StoreOffsets(tps); err != nil {
		code := "unknown"
		var kerr kafka.Error
		if errors.As(err, &kerr) {
			code = kerr.Code().String()
		}
		r.metrics.kafkaErrors.WithLabelValues(code).Inc()
		r.logger.Warn("storing positions for the consumer group failed; lag tools will lag behind",
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
		if err := r.consumer.Close(); err != nil {
			r.closeErr = fmt.Errorf("close kafka consumer: %w", err)
		}
		<-r.logsDone
	})
	return r.closeErr
}

// rejectLogBurst is how many rejects are logged per second; the others
// are counted (stb_transport_rejected_total) and stored as dead letters,
// and the next line logged says how many were not.
const rejectLogBurst = 10

// logLimit allows rejectLogBurst lines per second and counts the others.
// Not safe for concurrent use.
type logLimit struct {
	second     int64
	n          int
	suppressed int64
}

func (l *logLimit) allow(now time.Time) bool {
	if s := now.Unix(); s != l.second {
		l.second, l.n = s, 0
	}
	if l.n < rejectLogBurst {
		l.n++
		return true
	}
	l.suppressed++
	return false
}

// takeSuppressed returns the lines not logged since the last call.
func (l *logLimit) takeSuppressed() int64 {
	n := l.suppressed
	l.suppressed = 0
	return n
}
