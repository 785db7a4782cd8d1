package transport_test

import (
	"fmt"
	"testing"
	"time"

	"github.com/confluentinc/confluent-kafka-go/v2/kafka"
	"go.uber.org/zap"

	"github.com/stbridge/stb/pkg/broker"
)

// The confluent client's per-message cost (issue 22, item 2: "use
// librdkafka's own batching where the client allows it").
//
// confluent-kafka-go reads one event per cgo call: Consumer.Poll asks
// eventPoll for at most one event (kafka/event.go: maxEvents = 1 without
// a channel), and the events channel (go.events.channel.enable, deprecated)
// loops over up to 1,000 events per eventPoll but still makes one
// _rk_queue_poll call per event and then one channel send per event. Each
// message is copied into a new *kafka.Message with its key, value and
// headers (newMessageFromGlueMsg). librdkafka's batch call,
// rd_kafka_consume_batch_queue, is not exposed. These benchmarks measure
// both ways on the same backlog and the bare cost of a poll that finds
// nothing.

const pollBacklog = 20000

func BenchmarkClientPoll(b *testing.B) {
	br, err := broker.Start(broker.Config{Topics: []string{"poll"}, Partitions: 4, ClusterID: "poll-bench"}, zap.NewNop())
	if err != nil {
		b.Fatal(err)
	}
	defer br.Close()
	produceBacklog(b, br.Addr(), "poll", pollBacklog, 1024)

	for _, mode := range []string{"Poll", "EventsChannel"} {
		b.Run(mode, func(b *testing.B) {
			b.ReportAllocs()
			var msgs int
			var took time.Duration
			for i := range b.N {
				n, d := consumeBacklog(b, br.Addr(), fmt.Sprintf("%s-%d", b.Name(), i), mode == "EventsChannel")
				msgs, took = msgs+n, took+d
			}
			b.ReportMetric(float64(took.Nanoseconds())/float64(msgs), "ns/msg")
		})
	}
	b.Run("PollEmpty", func(b *testing.B) {
		c := newBenchConsumer(b, br.Addr(), "poll-empty", false)
		defer c.Close()
		for b.Loop() {
			_ = c.Poll(0) // nothing subscribed: one cgo round trip, no event
		}
	})
}

func newBenchConsumer(b *testing.B, addr, group string, channel bool) *kafka.Consumer {
	b.Helper()
	c, err := kafka.NewConsumer(&kafka.ConfigMap{
		"bootstrap.servers":        addr,
		"group.id":                 group,
		"auto.offset.reset":        "earliest",
		"enable.auto.commit":       false,
		"enable.auto.offset.store": false,
		"enable.metrics.push":      false,
		"go.events.channel.enable": channel,
		"go.events.channel.size":   10000,
	})
	if err != nil {
		b.Fatal(err)
	}
	return c
}

// consumeBacklog reads the whole backlog of topic "poll" in a new group,
// by Poll or from the events channel, and returns how many messages it
// read and how long reading took from the first message on: the
// consumer's start and group join are outside the timing.
func consumeBacklog(b *testing.B, addr, group string, channel bool) (int, time.Duration) {
	b.Helper()
	b.StopTimer()
	c := newBenchConsumer(b, addr, group, channel)
	defer c.Close()
	if err := c.SubscribeTopics([]string{"poll"}, nil); err != nil {
		b.Fatal(err)
	}
	// Wait for the first message before timing, so the join is not timed.
	n := 0
	next := func(timeout time.Duration) *kafka.Message {
		if channel {
			select {
			//lint:ignore SA1019 the deprecated events channel is what this benchmark compares Poll with
			case ev := <-c.Events():
				m, _ := ev.(*kafka.Message)
				return m
			case <-time.After(timeout):
				return nil
			}
		}
		m, _ := c.Poll(int(timeout.Milliseconds())).(*kafka.Message)
		return m
	}
	deadline := time.Now().Add(30 * time.Second)
	for n == 0 {
		if time.Now().After(deadline) {
			b.Fatal("no message within 30 s")
		}
		if m := next(100 * time.Millisecond); m != nil && m.TopicPartition.Error == nil {
			n++
		}
	}
	b.StartTimer()
	start := time.Now()
	for n < pollBacklog {
		if time.Now().After(deadline) {
			b.Fatalf("read %d of %d within 30 s", n, pollBacklog)
		}
		if m := next(100 * time.Millisecond); m != nil && m.TopicPartition.Error == nil {
			n++
		}
	}
	took := time.Since(start)
	b.StopTimer()
	return n, took
}

func produceBacklog(b *testing.B, addr, topic string, n, size int) {
	b.Helper()
	p, err := kafka.NewProducer(&kafka.ConfigMap{
		"bootstrap.servers": addr, "linger.ms": 5, "enable.metrics.push": false, "go.logs.channel.enable": false,
	})
	if err != nil {
		b.Fatal(err)
	}
	defer p.Close()
	value := make([]byte, size)
	reports := make(chan kafka.Event, n)
	for i := range n {
		key := []byte(fmt.Sprintf("hub-%04d", i%1000))
		if err := p.Produce(&kafka.Message{TopicPartition: kafka.TopicPartition{Topic: &topic, Partition: kafka.PartitionAny},
			Key: key, Value: value, Headers: []kafka.Header{{Key: "ce_type", Value: []byte("x")}}}, reports); err != nil {
			b.Fatal(err)
		}
	}
	for range n {
		if m := (<-reports).(*kafka.Message); m.TopicPartition.Error != nil {
			b.Fatal(m.TopicPartition.Error)
		}
	}
}
