package sim

import (
	"context"
	"errors"
	"strconv"
	"strings"
	"testing"
	"time"

	"github.com/twmb/franz-go/pkg/kgo"
	"go.uber.org/zap"

	"github.com/stbridge/stb/pkg/broker"
	"github.com/stbridge/stb/pkg/bundle"
	"github.com/stbridge/stb/pkg/transport"
)

// TestKafkaPublisherSharedTopic: on the shared topic of several
// partitions the global-hub agent's messages are keyed by their full
// event type, and the publisher sends each key to one partition, so one
// hub's types spread over the partitions while each type keeps its order
// in one; the headers carry what each message says.
func TestKafkaPublisherSharedTopic(t *testing.T) {
	const partitions = 4
	b, err := broker.Start(broker.Config{Topics: []string{GlobalHubSharedTopic}, Partitions: partitions}, zap.NewNop())
	if err != nil {
		t.Fatal(err)
	}
	t.Cleanup(b.Close)
	pub, err := NewKafkaPublisher(PublisherConfig{Brokers: b.Addr()}, zap.NewNop())
	if err != nil {
		t.Fatal(err)
	}
	defer pub.Close()
	cfg := Config{Agent: AgentGlobalHub, Hubs: 3, Clusters: 5, Generations: 8, Seed: 81, Topic: GlobalHubSharedTopic,
		RestartProbability: 0.2, GlobalHub: GlobalHubConfig{FrameBytes: 1500, ChunkBytes: 1000, SendMode: SendModeMixed}}
	ctx, cancel := context.WithTimeout(context.Background(), time.Minute)
	defer cancel()
	exp, err := Run(ctx, cfg, pub, nil)
	if err != nil {
		t.Fatal(err)
	}

	cl, err := kgo.NewClient(kgo.SeedBrokers(b.Addr()), kgo.ConsumeTopics(GlobalHubSharedTopic),
		kgo.ConsumeResetOffset(kgo.NewOffset().AtStart()))
	if err != nil {
		t.Fatal(err)
	}
	defer cl.Close()
	partitionOf := map[string]int32{}
	used := map[int32]bool{}
	var read, chunks, single int
	for read < exp.Messages {
		fetches := cl.PollFetches(ctx)
		if err := fetches.Err0(); err != nil {
			t.Fatalf("after %d of %d records: %v", read, exp.Messages, err)
		}
		fetches.EachRecord(func(r *kgo.Record) {
			read++
			h := map[string]string{}
			for _, kv := range r.Headers {
				h[kv.Key] = string(kv.Value)
			}
			key := string(r.Key)
			if h["ce_type"] != key || !strings.HasPrefix(key, transport.GlobalHubEventTypePrefix) {
				t.Fatalf("record keyed %q of type %q", key, h["ce_type"])
			}
			if p, ok := partitionOf[key]; ok && p != r.Partition {
				t.Fatalf("%s in partitions %d and %d", key, p, r.Partition)
			}
			partitionOf[key] = r.Partition
			used[r.Partition] = true
			if size, ok := h["ce_extsize"]; ok {
				chunks++
				n, err := strconv.Atoi(size)
				if _, err2 := strconv.Atoi(h["ce_extoffset"]); err != nil || err2 != nil || n <= 1000 || len(r.Value) > 1000 {
					t.Fatalf("chunk headers %v of a %d-byte value", h, len(r.Value))
				}
			}
			if h["ce_sendmode"] == SendModeSingle {
				single++
			}
			if h["ce_extversion"] == "" || h["ce_source"] == "" || h["ce_id"] == "" || h["ce_time"] == "" {
				t.Fatalf("headers %v", h)
			}
		})
	}
	if len(used) < 2 || chunks == 0 || single == 0 {
		t.Errorf("%d partitions used by %d types, %d chunks, %d single events", len(used), len(partitionOf), chunks, single)
	}
}

// TestKafkaPublisherGivesUpOnDeadBrokers: a simulation pointed at an
// address where no broker listens ends with an error naming the brokers
// once BrokerTimeout has passed, instead of waiting for ever.
func TestKafkaPublisherGivesUpOnDeadBrokers(t *testing.T) {
	const dead = "127.0.0.1:1" // nothing listens on port 1
	pub, err := NewKafkaPublisher(PublisherConfig{Brokers: dead, BrokerTimeout: 500 * time.Millisecond}, zap.NewNop())
	if err != nil {
		t.Fatal(err)
	}
	defer pub.Close()
	ctx, cancel := context.WithTimeout(context.Background(), 2*time.Minute) // a bound on a hang, not a figure
	defer cancel()
	m := Message{Hub: "hub1", Type: "managedclusters", Version: bundle.Version{Incarnation: 1, Generation: 1}, Topic: "status", Data: []byte(`{}`)}
	if err := pub.Publish(ctx, m); err != nil {
		t.Fatalf("first publish: %v (queued before any broker is tried)", err)
	}
	err = pub.Flush(ctx)
	if !errors.Is(err, ErrBrokersUnreachable) || !strings.Contains(err.Error(), dead) || ctx.Err() != nil {
		t.Fatalf("flush: %v (context %v), want ErrBrokersUnreachable naming %s before the context ends", err, ctx.Err(), dead)
	}
	if err := pub.Publish(ctx, m); !errors.Is(err, ErrBrokersUnreachable) {
		t.Fatalf("publish after the timeout: %v, want ErrBrokersUnreachable", err)
	}
}
