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
	// The decoding goroutine, fed like the reader's (transport.Reader):
	// in batches of up to 64 messages, handed on when full or when a poll
	// finds nothing more, through a queue of 4 batches.
	queue := make(chan []*kafka.Message, 4)
	var rejected int64
	decoded := make(chan struct{})
	go func() {
		defer close(decoded)
		for batch := range queue {
			for _, msg := range batch {
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
		}
	}()
	const batchLen = 64
	batch := make([]*kafka.Message, 0, batchLen)
	handOff := func() {
		if len(batch) > 0 {
			queue <- batch
			batch = make([]*kafka.Message, 0, batchLen)
		}
	}
	drained := false
	drain := func() {
		if !drained {
			drained = true
			handOff()
			close(queue)
			<-decoded
		}
	}
	defer drain()
	res, err := readBacklog(ctx, "read+decode ceiling", brokers, topics, group, total,
		func(msg *kafka.Message) bool {
			batch = append(batch, msg)
			if len(batch) == batchLen {
				handOff()
			}
			return len(batch) > 0
		}, handOff, drain, progress)
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
	res, err := readBacklog(ctx, "raw read ceiling", brokers, topics, group, total, func(msg *kafka.Message) bool {
		for _, h := range msg.Headers {
			if len(h.Value) > 0 {
				sum ^= h.Key[0] ^ h.Value[len(h.Value)-1]
			}
		}
		for i := 0; i < len(msg.Value); i += 64 {
			sum ^= msg.Value[i]
		}
		return false
	}, func() {}, func() {}, progress)
	res.Touched = sum // kept, so that touching the bytes is not optimised away
	return res, err
}

// readBacklog polls a fresh consumer group over topics until total
// messages were read, handing each to handle on the poll loop; handle
// returns whether it holds messages back, and then the next poll does not
// wait and idle runs when it finds nothing (as the reader hands on its
// batch). finish runs after the last one, inside the measured time.
func readBacklog(ctx context.Context, variant, brokers string, topics []string, group string, total int64,
	handle func(*kafka.Message) (holding bool), idle, finish func(), progress func(read int64, elapsed time.Duration),
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
	holding := false
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
		wait := pollMs
		if holding {
			wait = 0
		}
		switch ev := consumer.Poll(wait).(type) {
		case nil:
			if holding {
				idle()
				holding = false
			}
		case *kafka.Message:
			if ev.TopicPartition.Error != nil {
				continue
			}
			if res.Messages == 0 {
				res.FirstMessage = time.Since(start)
			}
			res.Messages++
			res.Bytes += int64(len(ev.Value))
			holding = handle(ev)
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
