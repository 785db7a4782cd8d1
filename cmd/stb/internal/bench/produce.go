package bench

import (
	"context"
	"encoding/json"
	"errors"
	"fmt"
	"io"
	"strings"
	"time"

	"github.com/confluentinc/confluent-kafka-go/v2/kafka"
	"go.uber.org/zap"

	"github.com/stbridge/stb/pkg/bundle"
	"github.com/stbridge/stb/pkg/sim"
	"github.com/stbridge/stb/pkg/transport"
)

// The producer process, `stb bench produce`: the simulated hubs publish
// from a child process for the same reason the broker runs in one
// (`stb kafka`): simulating, encoding and producing at ten times what the
// database absorbs takes a good share of a core, and producing ahead holds
// the whole window's messages in memory, neither of which may count as
// the bridge's CPU time or peak RSS. The parent side is producer.go.
//
// The protocol, which `stb bench produce --help` also states: the spec is
// one JSON object (produceSpec) on stdin; progress goes to stdout as lines
// "ready N" (producing ahead: N messages built, sending starts now),
// "sent N" (at most every producerProgressEvery) and a last "done N" once
// every message was delivered and the expected state written; errors go
// to stderr and a non-zero exit.

// produceSpec is what the producer process is asked to do.
type produceSpec struct {
	Brokers string     `json:"brokers"`
	Sim     sim.Config `json:"sim"`
	// Poison sends, instead of each simulated message, a reject of the
	// same hub (see poisoned); the expected state it writes is then moot.
	Poison bool `json:"poison,omitempty"`
	// PoisonMix sends each simulated message followed by a reject of the
	// same hub: valid traffic mixed 1:1 with rejects; the expected state
	// is the valid traffic's.
	PoisonMix bool `json:"poisonMix,omitempty"`
	// Ahead builds and encodes every message of the simulation before
	// sending any, prints "ready N", then sends them paced to Sim.Rate,
	// each stamped (ce_time) with the time it is sent: publishing at ten
	// times what the database absorbs then costs the producer only
	// librdkafka's produce, not the simulation and the encoding, which on
	// two shared cores could not keep up (overload).
	Ahead bool `json:"ahead,omitempty"`
	// Expected is the file the producer writes the expected state to.
	Expected string `json:"expected"`
}

// producerProgressEvery is how often the producer reports its count.
const producerProgressEvery = 200 * time.Millisecond

// RunProducer is the producer process (`stb bench produce`): it reads
// its spec as JSON from spec, publishes the simulation, writes the
// expected state to the spec's file, and reports progress to progress as
// "ready N", "sent N" and a final "done N" line.
func RunProducer(ctx context.Context, spec io.Reader, progress io.Writer) error {
	var sp produceSpec
	dec := json.NewDecoder(spec)
	dec.DisallowUnknownFields()
	if err := dec.Decode(&sp); err != nil {
		return fmt.Errorf("producer spec: %w", err)
	}
	if sp.Brokers == "" || sp.Expected == "" {
		return errors.New("producer spec: brokers and expected are required")
	}
	pub, err := sim.NewKafkaPublisher(sim.PublisherConfig{Brokers: sp.Brokers, TypePrefix: transport.DefaultTypePrefix}, zap.NewNop())
	if err != nil {
		return err
	}
	defer pub.Close()
	if sp.Ahead {
		return runAhead(ctx, sp, pub, progress)
	}
	var out sim.Publisher = pub
	if sp.Poison || sp.PoisonMix {
		out = &poisoned{KafkaPublisher: pub, mix: sp.PoisonMix}
	}
	last := time.Now()
	exp, err := sim.Run(ctx, sp.Sim, out, func(sent int) {
		if now := time.Now(); now.Sub(last) >= producerProgressEvery {
			last = now
			fmt.Fprintf(progress, "sent %d\n", sent)
		}
	})
	if err != nil {
		return err
	}
	if err := exp.WriteFile(sp.Expected); err != nil {
		return err
	}
	fmt.Fprintf(progress, "done %d\n", exp.Messages)
	return nil
}

// runAhead is RunProducer for spec.Ahead.
func runAhead(ctx context.Context, spec produceSpec, pub *sim.KafkaPublisher, progress io.Writer) error {
	cfg := spec.Sim
	rate := cfg.Rate
	cfg.Rate, cfg.Duration = 0, 0 // every round, as fast as it builds
	var built encoded
	exp, err := sim.Run(ctx, cfg, &built, nil)
	if err != nil {
		return err
	}
	fmt.Fprintf(progress, "ready %d\n", len(built.msgs))
	start, last := time.Now(), time.Now()
	for i, msg := range built.msgs {
		if rate > 0 {
			// Sleep only when more than a millisecond ahead: the
			// pace holds on average, without a timer per message.
			due := start.Add(time.Duration(float64(i) / rate * float64(time.Second)))
			if d := time.Until(due); d > time.Millisecond {
				select {
				case <-ctx.Done():
					return ctx.Err()
				case <-time.After(d):
				}
			}
		}
		stampTime(msg, time.Now())
		if err := pub.PublishMessage(ctx, msg); err != nil {
			return err
		}
		built.msgs[i] = nil // sent: its memory may go
		if now := time.Now(); now.Sub(last) >= producerProgressEvery {
			last = now
			fmt.Fprintf(progress, "sent %d\n", i+1)
		}
	}
	if err := pub.Flush(ctx); err != nil {
		return fmt.Errorf("flush publisher: %w", err)
	}
	if err := exp.WriteFile(spec.Expected); err != nil {
		return err
	}
	fmt.Fprintf(progress, "done %d\n", exp.Messages)
	return nil
}

// encoded is a sim.Publisher that keeps the messages it is given, encoded
// as the hubs send them, for runAhead to send later.
type encoded struct{ msgs []*kafka.Message }

func (e *encoded) Publish(_ context.Context, m sim.Message) error {
	if strings.HasPrefix(m.Type, bundle.GlobalHubPrefix) {
		return fmt.Errorf("producing ahead is for STB's wire format, not %s", m.Type)
	}
	msg, err := transport.Encode(transport.Envelope(m), transport.DefaultTypePrefix)
	if err != nil {
		return err
	}
	e.msgs = append(e.msgs, msg)
	return nil
}

// stampTime sets the message's ce_time to t, the time a hub sending it now
// would give it.
func stampTime(msg *kafka.Message, t time.Time) {
	v := []byte(t.UTC().Format(time.RFC3339Nano))
	for i := range msg.Headers {
		if msg.Headers[i].Key == "ce_time" {
			msg.Headers[i].Value = v
			return
		}
	}
	msg.Headers = append(msg.Headers, kafka.Header{Key: "ce_time", Value: v})
}

// poisoned publishes a reject instead of every message: every other one
// of the same hub, key and version, of an event type no bridge knows
// (unknown_type, dead-lettered by the reader); the others managedclusters
// bundles whose data is not JSON, from a hub of their own beside the
// message's (poisonHub). The reader takes those (it decodes no payload):
// a newer one of the poison hub replaces an unwritten one unread, and the
// one a worker takes is dead-lettered bad_payload. A hub of their own, as
// the newest bundle of a hub replaces its older ones: a bad one would
// replace a valid one unwritten.
type poisoned struct {
	*sim.KafkaPublisher
	mix bool // send the message too, before its reject
	n   int
}

func (p *poisoned) Publish(ctx context.Context, m sim.Message) error {
	if p.mix {
		if err := p.KafkaPublisher.Publish(ctx, m); err != nil {
			return err
		}
	}
	p.n++
	m.ID += "-poison"
	if p.n%2 == 0 {
		m.Type = poisonType
	} else {
		// managedclusters waits for nothing: the bad data is written,
		// and dead-lettered, without a base the poison hub never sends.
		m.Hub, m.Type, m.Dependency = m.Hub+poisonHub, "managedclusters", nil
		m.Data = []byte(`{"objects":[{"metadata":`)
	}
	return p.KafkaPublisher.Publish(ctx, m)
}

// poisonType is the bundle type of the poison-flood's rejects.
const poisonType = "poison"

// poisonHub ends the names of the hubs the poison-flood's bad data comes
// from.
const poisonHub = "-poison"

// unknownRejects is how many of n poisoned messages are of poisonType.
func unknownRejects(n int64) int64 { return n / 2 }
