package transport

import (
	"context"
	"fmt"
	"slices"
	"strings"

	"github.com/confluentinc/confluent-kafka-go/v2/kafka"
	"go.uber.org/zap"
)

// rebalance is the consumer's rebalance callback. librdkafka calls it from
// inside Poll (or Consumer.Close), so it runs under runMu like the poll loop.
func (r *Reader) rebalance(c *kafka.Consumer, ev kafka.Event) error {
	switch e := ev.(type) {
	case kafka.AssignedPartitions:
		r.assign(c, e.Partitions)
	case kafka.RevokedPartitions:
		r.revoke(c, e.Partitions)
	}
	return nil
}

// cooperative reports whether the group hands out partitions incrementally
// (cooperative-sticky, or the KIP-848 protocol) rather than all at once.
func cooperative(c *kafka.Consumer) bool {
	return c.GetRebalanceProtocol() == "COOPERATIVE"
}

// assign starts each newly assigned partition where its stored position
// says, registers it with the committer, and hands the assignment to
// librdkafka. Its database work (BeforeAssign, the claims) shares one
// deadline, Config.AssignTimeout.
func (r *Reader) assign(c *kafka.Consumer, parts []kafka.TopicPartition) {
	ctx, cancel := context.WithTimeout(r.baseContext(), r.cfg.AssignTimeout)
	defer cancel()

	if r.deps.BeforeAssign != nil && len(parts) > 0 {
		ids := make([]PartitionID, 0, len(parts))
		for _, tp := range parts {
			if tp.Topic != nil {
				ids = append(ids, PartitionID{Topic: *tp.Topic, Partition: tp.Partition})
			}
		}
		if err := r.deps.BeforeAssign(ctx, ids); err != nil {
			r.logger.Error("refreshing state before reading newly assigned partitions failed; bundles that depend on what another replica wrote may wait for their dependency",
				zap.Int("partitions", len(parts)), zap.Error(err))
		}
	}
	assigned := make([]kafka.TopicPartition, 0, len(parts))
	for _, tp := range parts {
		if tp.Topic == nil {
			continue
		}
		topic := *tp.Topic
		offset, start := r.startOffset(ctx, topic, tp.Partition)
		tp.Offset = offset
		assigned = append(assigned, tp)
		k := partitionKey{topic, tp.Partition}
		r.parts[k] = r.deps.Positions.Assign(topic, tp.Partition, start)
		r.groupStored[k] = start
	}

	var err error
	if cooperative(c) {
		err = c.IncrementalAssign(assigned)
	} else {
		err = c.Assign(assigned)
	}
	if err != nil {
		// The consumer would sit in the group reading nothing; better to
		// stop and let the process be restarted.
		r.fatal = fmt.Errorf("assign %d partitions: %w", len(assigned), err)
		r.logger.Error("assigning partitions failed", zap.Error(err))
		return
	}
	if r.paused {
		// Backpressure is on: new partitions wait like the others.
		if err := c.Pause(assigned); err != nil {
			r.logger.Warn("pausing newly assigned partitions failed", zap.Error(err))
		}
	}
	r.metrics.assigned.Set(float64(len(r.parts)))
}

// startOffset decides where a partition starts: at the position stored for
// it when that position was read from this same Kafka cluster, else at
// auto.offset.reset. start is what the committer is told: the offset, or -1
// when the broker decides.
func (r *Reader) startOffset(ctx context.Context, topic string, partition int32) (offset kafka.Offset, start int64) {
	fields := []zap.Field{zap.String("topic", topic), zap.Int32("partition", partition)}
	pos, ok, err := r.deps.Offsets.Claim(ctx, topic, partition)
	switch {
	case err != nil:
		// Not auto.offset.reset: replaying a whole topic because the
		// database hiccuped would be far worse. The group's committed
		// offset trails the stored position (it is committed after it),
		// so starting there replays a little and skips nothing.
		r.metrics.assignments.WithLabelValues(startGroup).Inc()
		r.logger.Warn("stored position unavailable; starting at the consumer group's committed offset",
			append(fields, zap.Error(err))...)
		return kafka.OffsetStored, -1
	case !ok:
		r.logger.Info("no stored position; starting at auto.offset.reset",
			append(fields, zap.String("autoOffsetReset", r.cfg.AutoOffsetReset))...)
	case !r.sameKafka(pos.ClusterID):
		r.logger.Warn("stored position is from another Kafka cluster; ignoring it and starting at auto.offset.reset",
			append(fields, zap.Int64("storedOffset", pos.Offset), zap.String("storedClusterId", pos.ClusterID),
				zap.String("clusterId", r.clusterID), zap.String("brokers", r.cfg.Brokers),
				zap.String("autoOffsetReset", r.cfg.AutoOffsetReset))...)
	case pos.Offset < 0:
		r.logger.Warn("stored position is negative; starting at auto.offset.reset",
			append(fields, zap.Int64("storedOffset", pos.Offset))...)
	case r.outOfRange(topic, partition, pos.Offset):
		// Logged and counted by outOfRange.
	default:
		// Resume AT the stored offset, whoever stored it. STB stores the
		// next offset to read. Upstream's manager stores the offset of a
		// bundle it has processed or still holds, not that offset + 1
		// (manager/pkg/status/conflator/conflation_committer.go
		// getPositionsToCommit takes TransportPosition() as it is, and
		// pkg/bundle/metadata's ThresholdMetadata sets it to the
		// message's own offset), and resumes at it itself
		// (pkg/transport/consumer/generic_consumer.go getInitOffset). So a
		// row upstream left makes STB read at most one message again:
		// the bundle at that offset, which upstream may already have
		// written. That is harmless. Once STB's version fence
		// (stb.bundle_versions) holds that bundle's version or a newer
		// one for its hub and type, the bundle is stale and skipped. At
		// the takeover itself, with the fence still empty, it is applied
		// over what upstream wrote from it: its state is written again as
		// it was, and the rows of the event tables it inserts again hit
		// their unique constraints and ON CONFLICT DO NOTHING. Starting
		// at offset + 1 instead could skip a bundle upstream only held and
		// never wrote.
		r.metrics.assignments.WithLabelValues(startStored).Inc()
		r.logger.Info("resuming at stored position", append(fields, zap.Int64("offset", pos.Offset),
			zap.String("storedClusterId", pos.ClusterID))...)
		return kafka.Offset(pos.Offset), pos.Offset
	}
	r.metrics.assignments.WithLabelValues(startReset).Inc()
	// Explicitly, not kafka.OffsetStored: Postgres is the truth. With no
	// usable row (a new or wiped database, another cluster) the group's
	// committed offset could skip data the database never saw.
	if r.cfg.AutoOffsetReset == "latest" {
		return kafka.OffsetEnd, -1
	}
	return kafka.OffsetBeginning, -1
}

// sameKafka reports whether a stored position's owner identity (the
// ownerIdentity of its status.transport row) names the Kafka this reader
// reads. STB writes the cluster id. Upstream's manager writes, and only
// trusts on start, its config.GetKafkaOwnerIdentity(), which is the
// KafkaConfig.ClusterID of its transport secret
// (pkg/transport/controller/controller.go ReconcileKafkaCredential):
//
//   - with the built-in Kafka, the Strimzi Kafka's status.clusterId, the
//     id the brokers report (operator/pkg/controllers/transporter/protocol/
//     strimzi_transporter.go; the Kafka resource's UID before Strimzi has
//     set it, which no reader can match);
//   - with a Kafka the user brings, the bootstrap_server of the transport
//     secret (operator/pkg/controllers/transporter/protocol/
//     byo_transporter.go GetConnCredential; pkg/transport's EventPosition:
//     "byo kafka, use the kafka bootstrapserver as the identity").
//
// So an identity equal to the configured bootstrap servers is trusted
// too: the same list of addresses, in any order, spaces aside. An empty
// identity never is (generic_consumer.go getInitOffset skips it as well).
func (r *Reader) sameKafka(owner string) bool {
	if strings.TrimSpace(owner) == "" {
		return false
	}
	return owner == r.clusterID || sameBootstrap(owner, r.cfg.Brokers)
}

// sameBootstrap reports whether two bootstrap lists ("host:port,…") hold
// the same addresses: compared as sets, spaces trimmed, host names case
// folded. An empty list matches nothing.
func sameBootstrap(a, b string) bool {
	set := func(s string) []string {
		var out []string
		for _, addr := range strings.Split(s, ",") {
			if addr = strings.ToLower(strings.TrimSpace(addr)); addr != "" {
				out = append(out, addr)
			}
		}
		slices.Sort(out)
		return slices.Compact(out)
	}
	as, bs := set(a), set(b)
	return len(as) > 0 && slices.Equal(as, bs)
}

// outOfRange reports whether a stored offset lies outside the partition's
// log (past its end, say after the topic was recreated, or before its
// start after retention deleted what it pointed at); such a partition
// restarts at auto.offset.reset. When the watermarks cannot be read the
// stored offset is trusted, and librdkafka's own auto.offset.reset handles
// it if it turns out out of range.
func (r *Reader) outOfRange(topic string, partition int32, offset int64) bool {
	low, high, err := r.consumer.QueryWatermarkOffsets(topic, partition, int(r.cfg.AssignTimeout.Milliseconds()))
	if err != nil {
		r.logger.Warn("could not read the partition's watermarks; trusting the stored position",
			zap.String("topic", topic), zap.Int32("partition", partition), zap.Error(err))
		return false
	}
	if offset >= low && offset <= high {
		return false
	}
	r.metrics.outOfRange.Inc()
	r.logger.Warn("stored position is outside the log; starting at auto.offset.reset",
		zap.String("topic", topic), zap.Int32("partition", partition), zap.Int64("storedOffset", offset),
		zap.Int64("low", low), zap.Int64("high", high), zap.String("autoOffsetReset", r.cfg.AutoOffsetReset))
	return true
}

// revoke commits each revoked partition a last time, forgets it, and hands
// it back to librdkafka.
//
// As docs/design.md (Scaling out) has it: the final commit stores a position behind
// everything this bridge still holds of the partition, which is stored for
// the consumer group too; then the Dropper drops what no worker has taken and
// the reader waits until what is in flight has finished (the partition is
// idle), so the new owner, which reads all of it again, never writes
// alongside it.
func (r *Reader) revoke(c *kafka.Consumer, parts []kafka.TopicPartition) {
	if c.AssignmentLost() {
		// Another member may already own them, and have claimed their
		// rows in status.transport: then the store refuses the final
		// commit below (the committer's LostError), so this replica cannot
		// move the new owner's resume point. Either way it would only
		// store positions whose data this replica has written.
		r.logger.Warn("partition assignment lost", zap.Int("partitions", len(parts)))
	}
	// The final positions must account for every message polled so far:
	// hand on the batch being collected and wait until the decoding
	// goroutine has handed them all on (or dead-lettered them). During
	// Close, Run has already drained it.
	r.handOff(r.baseContext())
	r.pending.Wait()
	// During Close the shutdown sequence has made the final commit already
	// and may have closed the database pool since.
	commit := !r.closing.Load()
	ctx, cancel := context.WithTimeout(r.baseContext(), r.cfg.RevokeTimeout)
	defer cancel()
	for _, tp := range parts {
		if tp.Topic == nil {
			continue
		}
		topic := *tp.Topic
		k := partitionKey{topic, tp.Partition}
		p := r.parts[k]
		if commit {
			if err := r.deps.Positions.Revoke(ctx, topic, tp.Partition); err != nil {
				r.logger.Warn("final commit of revoked partition failed; it will replay from the last stored position",
					zap.String("topic", topic), zap.Int32("partition", tp.Partition), zap.Error(err))
			}
		}
		r.dropChunks(topic, tp.Partition) // after the final commit, which stays before them
		if p != nil {
			// librdkafka commits what is stored when it unassigns.
			r.storeGroupOffsets(map[partitionKey]Partition{k: p})
		}
		if p != nil && commit && r.deps.Dropper != nil {
			end := r.deps.Dropper.DropPartition(topic, tp.Partition)
			select {
			case <-p.Idle():
			case <-ctx.Done():
				r.logger.Warn("writes of a revoked partition still in flight at the revocation timeout; they are fenced by version against the new owner's",
					zap.String("topic", topic), zap.Int32("partition", tp.Partition))
			}
			end()
		}
		delete(r.parts, k)
		r.ends.forget(k)
		delete(r.groupStored, k)
		r.stats.forget(k) // its series go with it
		r.logger.Info("partition revoked", zap.String("topic", topic), zap.Int32("partition", tp.Partition))
	}

	var err error
	if cooperative(c) {
		err = c.IncrementalUnassign(parts)
	} else {
		err = c.Unassign()
	}
	if err != nil {
		r.logger.Warn("unassigning partitions failed", zap.Error(err))
	}
	r.metrics.assigned.Set(float64(len(r.parts)))
}

// baseContext is the context of the callbacks' I/O: Run's, without its
// cancellation, so that a final commit is bounded by its own timeout and
// not cut short by the shutdown that caused it.
func (r *Reader) baseContext() context.Context {
	if r.runCtx == nil {
		return context.Background()
	}
	return context.WithoutCancel(r.runCtx)
}
