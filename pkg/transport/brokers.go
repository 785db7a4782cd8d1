package transport

import (
	"errors"
	"fmt"
	"time"

	"github.com/confluentinc/confluent-kafka-go/v2/kafka"
	"go.uber.org/zap"
)

// Whether any broker can be reached. librdkafka says when every broker it
// knows is down (ErrAllBrokersDown, an error event it recovers from by
// itself) but not when one is back; the reader takes a message read, or a
// statistics document with a broker UP, as the sign. A broker that stays
// down is otherwise seen only once the group's session times out and the
// partitions are revoked, over a minute later.

// noteBrokersDown records that every broker is down, keeping the first
// time it was said.
func (r *Reader) noteBrokersDown(now time.Time) {
	r.downSince.CompareAndSwap(0, now.UnixNano())
}

// noteBrokerUp records that a broker answered.
func (r *Reader) noteBrokerUp() {
	if r.downSince.Load() != 0 {
		r.downSince.Store(0)
	}
}

// BrokersDownFor returns how long every broker has been unreachable as of
// now, 0 when one answered since the client last said they were all down.
// Safe to call from any goroutine; readiness turns it into a 503.
func (r *Reader) BrokersDownFor(now time.Time) time.Duration {
	since := r.downSince.Load()
	if since == 0 {
		return 0
	}
	return max(0, now.Sub(time.Unix(0, since)))
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
	case kerr.Code() == kafka.ErrAllBrokersDown:
		r.noteBrokersDown(time.Now())
		r.logger.Warn("every Kafka broker is unreachable; the client keeps trying (librdkafka counts the bootstrap address and each broker it learned of, so one broker may show as 2)", fields...)
	case kerr.Code() == kafka.ErrAssignmentLost:
		r.logger.Warn("partition assignment lost; the group will reassign", fields...)
	default:
		r.logger.Warn("kafka error", fields...)
	}
}
