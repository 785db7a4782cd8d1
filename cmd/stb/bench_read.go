package main

import (
	"context"
	"errors"
	"fmt"
	"runtime/pprof"
	"time"

	"github.com/confluentinc/confluent-kafka-go/v2/kafka"

	"github.com/stbridge/stb/pkg/transport"
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
}

// readAndDecode is the read ceiling: a confluent consumer in a fresh
// group with the reader's librdkafka settings, polling on one goroutine and
// calling transport.Decode on every message on another, like the reader,
// writing nothing. It reads until it has seen total messages. Accepted
// bundles go to keep when it is not nil.
func readAndDecode(ctx context.Context, brokers string, topics []string, group string, total int64,
	rules transport.Rules, keep *finalState, progress func(read int64, elapsed time.Duration),
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
		return readResult{}, fmt.Errorf("read ceiling consumer: %w", err)
	}
	defer consumer.Close()
	defer pprof.SetGoroutineLabels(ctx)
	pprof.SetGoroutineLabels(pprof.WithLabels(ctx, pprof.Labels("variant", "read+decode ceiling")))
	start := time.Now()
	if err := consumer.SubscribeTopics(topics, nil); err != nil {
		return readResult{}, fmt.Errorf("read ceiling subscribe: %w", err)
	}
	var res readResult
	// The decoding goroutine, fed like the reader's (transport.Reader).
	queue := make(chan *kafka.Message, 256)
	var rejected int64
	decoded := make(chan struct{})
	go func() {
		defer close(decoded)
		for msg := range queue {
			b, rej := transport.Decode(msg, rules, time.Now())
			if rej != nil {
				rejected++
				continue
			}
			if keep != nil {
				keep.add(b)
			}
		}
	}()
	drain := func() {
		if queue != nil {
			close(queue)
			<-decoded
			queue = nil
			res.Rejected = rejected
		}
	}
	defer drain()
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
			queue <- ev
		case kafka.Error:
			if ev.IsFatal() {
				return res, fmt.Errorf("read ceiling: %w", ev)
			}
		}
	}
	drain()
	res.Elapsed = time.Since(start)
	if res.Rejected > 0 {
		return res, errors.New("read ceiling: some messages were rejected; the backlog is not what the bench produced")
	}
	return res, nil
}
