package bench

import (
	"context"
	"errors"
	"fmt"
	"runtime/pprof"
	"time"

	"github.com/confluentinc/confluent-kafka-go/v2/kafka"
)

// readPollTimeout is the consumer poll timeout of the read ceiling, the
// same as the bridge's reader.
const readPollTimeout = 100 * time.Millisecond

// readResult is what reading and decoding a backlog took.
type readResult struct {
	// Elapsed runs from subscribing (the group join included, as for the
	// bridge) to the last message decoded.
	Elapsed time.Duration
	// FirstMessage runs from subscribing to the first message.
	FirstMessage time.Duration
	Messages     int64
	Rejected     int64
	Bytes        int64
	// Touched is what the raw read computed from the bytes it touched.
	Touched byte
}

// readAndDecode is the read+decode ceiling: a confluent consumer in a
// fresh group with the reader's librdkafka settings, polling on one
// goroutine and calling transport.Decode on every message on another, like
// the reader, then decoding its payload, which the bridge does only for
// the bundles it writes (the workers decode them), writing nothing. It
// reads until it has seen total messages. Accepted bundles go to keep
// when it is not nil.
func readAndDecode(ctx context.Context, brokers string, topics []string, group string, total int64,
	dec decoder, keep *finalState, progress func(read int64, elapsed time.Duration),
) (readResult, error) {
	// The decoding goroutine, fed like the reader's (transport.Reader).
	queue := make(chan *kafka.Message, 256)
	var rejected int64
	decoded := make(chan struct{})
	go func() {
		defer close(decoded)
		for msg := range queue {
			b, rej := dec.decode(msg, dec.rules, time.Now())
			if rej != nil {
				if !rej.Skipped { // a type known and not stored is no reject
					rejected++
				}
				continue
			}
			if err := b.Decode(dec.rules.Decoder.Decode); err != nil {
				rejected++
				continue
			}
			if keep != nil {
				keep.add(b)
			}
		}
	}()
	drained := false
	drain := func() {
		if !drained {
			drained = true
			close(queue)
			<-decoded
		}
	}
	defer drain()
	res, err := readBacklog(ctx, "read+decode ceiling", brokers, topics, group, total,
		func(msg *kafka.Message) { queue <- msg }, drain, progress)
	res.Rejected = rejected
	if err == nil && res.Rejected > 0 {
		err = errors.New("read ceiling: some messages were rejected; the backlog is not what the bench produced")
	}
	return res, err
}

// readRaw is the raw read ceiling: the same consumer polling the backlog
// and touching every message's value and headers, decoding nothing — what
// librdkafka and its copy into Go cost alone.
func readRaw(ctx context.Context, brokers string, topics []string, group string, total int64,
	progress func(read int64, elapsed time.Duration),
) (readResult, error) {
	var sum byte
	res, err := readBacklog(ctx, "raw read ceiling", brokers, topics, group, total, func(msg *kafka.Message) {
		for _, h := range msg.Headers {
			if len(h.Value) > 0 {
				sum ^= h.Key[0] ^ h.Value[len(h.Value)-1]
			}
		}
		for i := 0; i < len(msg.Value); i += 64 {
			sum ^= msg.Value[i]
		}
	}, func() {}, progress)
	res.Touched = sum // kept, so that touching the bytes is not optimised away
	return res, err
}

// readBacklog polls a fresh consumer group over topics until total
// messages were read, handing each to handle on the poll loop; finish runs
// after the last one, inside the measured time.
func readBacklog(ctx context.Context, variant, brokers string, topics []string, group string, total int64,
	handle func(*kafka.Message), finish func(), progress func(read int64, elapsed time.Duration),
) (readResult, error) {
	consumer, err := kafka.NewConsumer(&kafka.ConfigMap{
		"bootstrap.servers":        brokers,
		"group.id":                 group,
		"client.id":                "stb-bench-read",
		"auto.offset.reset":        "earliest",
		"enable.auto.commit":       "false",
		"enable.auto.offset.store": "false",
		"fetch.queue.backoff.ms":   "10",
		"enable.metrics.push":      "false",
		"log_level":                "4",
	})
	if err != nil {
		return readResult{}, fmt.Errorf("%s consumer: %w", variant, err)
	}
	defer consumer.Close()
	defer pprof.SetGoroutineLabels(ctx)
	pprof.SetGoroutineLabels(pprof.WithLabels(ctx, pprof.Labels("variant", variant)))
	start := time.Now()
	if err := consumer.SubscribeTopics(topics, nil); err != nil {
		return readResult{}, fmt.Errorf("%s subscribe: %w", variant, err)
	}
	var res readResult
	tick := time.NewTicker(time.Second)
	defer tick.Stop()
	pollMs := int(readPollTimeout.Milliseconds())
	for res.Messages < total {
		if err := ctx.Err(); err != nil {
			return res, err
		}
		select {
		case <-tick.C:
			if progress != nil {
				progress(res.Messages, time.Since(start))
			}
		default:
		}
		switch ev := consumer.Poll(pollMs).(type) {
		case *kafka.Message:
			if ev.TopicPartition.Error != nil {
				continue
			}
			if res.Messages == 0 {
				res.FirstMessage = time.Since(start)
			}
			res.Messages++
			res.Bytes += int64(len(ev.Value))
			handle(ev)
		case kafka.Error:
			if ev.IsFatal() {
				return res, fmt.Errorf("%s: %w", variant, ev)
			}
		}
	}
	finish()
	res.Elapsed = time.Since(start)
	return res, nil
}
