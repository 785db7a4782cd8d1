package broker_test

import (
	"context"
	"fmt"
	"slices"
	"testing"
	"time"

	"github.com/confluentinc/confluent-kafka-go/v2/kafka"
	"go.uber.org/zap/zaptest"

	"github.com/stbridge/stb/pkg/broker"
)

func startBroker(t *testing.T, cfg broker.Config) *broker.Broker {
	t.Helper()
	b, err := broker.Start(cfg, zaptest.NewLogger(t))
	if err != nil {
		t.Fatalf("start broker: %v", err)
	}
	t.Cleanup(b.Close)
	return b
}

// produce writes n records keyed and valued "<prefix>-<i>" and waits for
// every delivery report.
func produce(t *testing.T, addr, topic, prefix string, n int) {
	t.Helper()
	p, err := kafka.NewProducer(&kafka.ConfigMap{
		"bootstrap.servers":      addr,
		"linger.ms":              1,
		"enable.metrics.push":    false,
		"enable.idempotence":     true,
		"message.timeout.ms":     20000,
		"go.logs.channel.enable": false,
	})
	if err != nil {
		t.Fatalf("new producer: %v", err)
	}
	defer p.Close()
	reports := make(chan kafka.Event, n)
	for i := range n {
		v := fmt.Sprintf("%s-%d", prefix, i)
		err := p.Produce(&kafka.Message{
			TopicPartition: kafka.TopicPartition{Topic: &topic, Partition: kafka.PartitionAny},
			Key:            []byte(v),
			Value:          []byte(v),
		}, reports)
		if err != nil {
			t.Fatalf("produce: %v", err)
		}
	}
	for range n {
		select {
		case ev := <-reports:
			if m := ev.(*kafka.Message); m.TopicPartition.Error != nil {
				t.Fatalf("delivery: %v", m.TopicPartition.Error)
			}
		case <-time.After(30 * time.Second):
			t.Fatal("timed out waiting for delivery reports")
		}
	}
}

// consume reads n records through a consumer group and returns their values
// in the order read, with the cluster id the consumer sees.
func consume(t *testing.T, addr, topic string, n int) (values []string, clusterID string) {
	t.Helper()
	c, err := kafka.NewConsumer(&kafka.ConfigMap{
		"bootstrap.servers":        addr,
		"group.id":                 "broker-test-" + t.Name(),
		"auto.offset.reset":        "earliest",
		"enable.auto.commit":       false,
		"enable.auto.offset.store": false,
		"fetch.queue.backoff.ms":   10,
		"enable.metrics.push":      false,
	})
	if err != nil {
		t.Fatalf("new consumer: %v", err)
	}
	defer c.Close()
	admin, err := kafka.NewAdminClientFromConsumer(c)
	if err != nil {
		t.Fatalf("admin client: %v", err)
	}
	defer admin.Close()
	ctx, cancel := context.WithTimeout(context.Background(), 10*time.Second)
	defer cancel()
	if clusterID, err = admin.ClusterID(ctx); err != nil {
		t.Fatalf("cluster id: %v", err)
	}
	if err := c.SubscribeTopics([]string{topic}, nil); err != nil {
		t.Fatalf("subscribe: %v", err)
	}
	deadline := time.Now().Add(30 * time.Second)
	for len(values) < n {
		if time.Now().After(deadline) {
			t.Fatalf("read %d of %d records before the deadline", len(values), n)
		}
		switch ev := c.Poll(100).(type) {
		case *kafka.Message:
			if ev.TopicPartition.Error != nil {
				t.Fatalf("consume: %v", ev.TopicPartition.Error)
			}
			values = append(values, string(ev.Value))
		case kafka.Error:
			t.Logf("consumer error: %v", ev)
		}
	}
	return values, clusterID
}

func TestConfluentClientsOverTCP(t *testing.T) {
	b := startBroker(t, broker.Config{Topics: []string{"status"}, Partitions: 3, ClusterID: "test-cluster"})
	if b.ClusterID() != "test-cluster" {
		t.Fatalf("ClusterID() = %q, want test-cluster", b.ClusterID())
	}

	produce(t, b.Addr(), "status", "rec", 30)
	got, clusterID := consume(t, b.Addr(), "status", 30)

	if clusterID != "test-cluster" {
		t.Errorf("consumer sees cluster id %q, want test-cluster", clusterID)
	}
	slices.Sort(got)
	want := make([]string, 30)
	for i := range want {
		want[i] = fmt.Sprintf("rec-%d", i)
	}
	slices.Sort(want)
	if !slices.Equal(got, want) {
		t.Errorf("consumed %v, want %v", got, want)
	}
}

func TestDataDirSurvivesRestart(t *testing.T) {
	dir := t.TempDir()
	cfg := broker.Config{DataDir: dir, Topics: []string{"status"}, Partitions: 1}

	first := startBroker(t, cfg)
	id := first.ClusterID()
	if id == "" {
		t.Fatal("no cluster id generated")
	}
	produce(t, first.Addr(), "status", "kept", 5)
	first.Close()
	first.Close() // idempotent

	second := startBroker(t, cfg)
	if second.ClusterID() != id {
		t.Errorf("cluster id after restart = %q, want %q", second.ClusterID(), id)
	}
	got, _ := consume(t, second.Addr(), "status", 5)
	want := []string{"kept-0", "kept-1", "kept-2", "kept-3", "kept-4"}
	if !slices.Equal(got, want) {
		t.Errorf("after restart read %v, want %v", got, want)
	}
}

func TestFreshBrokersGetDistinctClusterIDs(t *testing.T) {
	a := startBroker(t, broker.Config{})
	b := startBroker(t, broker.Config{})
	if a.ClusterID() == b.ClusterID() {
		t.Errorf("two fresh brokers share cluster id %q", a.ClusterID())
	}
}

func TestConfigValidate(t *testing.T) {
	for name, cfg := range map[string]broker.Config{
		"port":       {Port: 70000},
		"partitions": {Partitions: -1},
		"topic":      {Topics: []string{""}},
		"max bytes":  {MaxMessageBytes: -5},
	} {
		t.Run(name, func(t *testing.T) {
			if err := cfg.Validate(); err == nil {
				t.Error("Validate accepted an invalid config")
			}
			if _, err := broker.Start(cfg, nil); err == nil {
				t.Error("Start accepted an invalid config")
			}
		})
	}
}
