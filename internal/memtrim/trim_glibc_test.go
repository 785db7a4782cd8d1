//go:build !musl

package memtrim

import (
	"testing"

	"github.com/confluentinc/confluent-kafka-go/v2/kafka"
)

// TestCHeap: messages a librdkafka producer queues (copied into its C heap,
// no broker to take them) show in the C heap's bytes in use, and go once
// purged and closed.
func TestCHeap(t *testing.T) {
	before, _ := CHeap()
	p, err := kafka.NewProducer(&kafka.ConfigMap{
		"bootstrap.servers":   "127.0.0.1:1", // nothing listens: the messages stay queued
		"message.timeout.ms":  600000,
		"enable.metrics.push": false,
		"log_level":           0,
	})
	if err != nil {
		t.Fatal(err)
	}
	topic := "t"
	const n, size = 20000, 1024 // 20 MiB
	value := make([]byte, size)
	for range n {
		if err := p.Produce(&kafka.Message{TopicPartition: kafka.TopicPartition{Topic: &topic, Partition: kafka.PartitionAny}, Value: value}, nil); err != nil {
			t.Fatal(err)
		}
	}
	during, arenas := CHeap()
	if err := p.Purge(kafka.PurgeQueue | kafka.PurgeInFlight); err != nil {
		t.Fatal(err)
	}
	p.Close()
	after, _ := CHeap()
	if during-before < n*size {
		t.Errorf("the C heap in use grew by %d bytes with %d bytes queued", during-before, n*size)
	}
	if arenas < during {
		t.Errorf("the arenas hold %d bytes, less than the %d in use", arenas, during)
	}
	if during-after < n*size {
		t.Errorf("the C heap in use fell by %d bytes once %d bytes queued were purged", during-after, n*size)
	}
	t.Logf("C heap in use: %d before, %d with the queue, %d after", before, during, after)
}
