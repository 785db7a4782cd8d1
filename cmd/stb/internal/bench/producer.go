package bench

import (
	"bufio"
	"context"
	"encoding/json"
	"fmt"
	"os"
	"os/exec"
	"strconv"
	"strings"
	"sync/atomic"
	"syscall"
	"time"

	"github.com/confluentinc/confluent-kafka-go/v2/kafka"
	"go.uber.org/zap"

	"github.com/stbridge/stb/pkg/sim"
	"github.com/stbridge/stb/pkg/transport"
)

// The simulated hubs publish from a child process (`stb bench
// --internal-producer SPEC`), for the same reason the broker runs in one:
// encoding and producing at ten times what the database absorbs takes a
// good share of a core, which must not count as the bridge's CPU time or
// memory.

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

// RunProducer is the producer process: it publishes the
// simulation, writes the expected state, and reports "sent N" lines and a
// final "done N" on stdout.
func RunProducer(ctx context.Context, specJSON string) error {
	var spec produceSpec
	if err := json.Unmarshal([]byte(specJSON), &spec); err != nil {
		return fmt.Errorf("producer spec: %w", err)
	}
	pub, err := sim.NewKafkaPublisher(transport.PublisherConfig{Brokers: spec.Brokers, TypePrefix: transport.DefaultTypePrefix}, zap.NewNop())
	if err != nil {
		return err
	}
	defer pub.Close()
	if spec.Ahead {
		return runAhead(ctx, spec, pub)
	}
	var out sim.Publisher = pub
	if spec.Poison || spec.PoisonMix {
		out = &poisoned{KafkaPublisher: pub, mix: spec.PoisonMix}
	}
	last := time.Now()
	exp, err := sim.Run(ctx, spec.Sim, out, func(sent int) {
		if now := time.Now(); now.Sub(last) >= producerProgressEvery {
			last = now
			fmt.Printf("sent %d\n", sent)
		}
	})
	if err != nil {
		return err
	}
	if err := exp.WriteFile(spec.Expected); err != nil {
		return err
	}
	fmt.Printf("done %d\n", exp.Messages)
	return nil
}

// runAhead is RunProducer for spec.Ahead.
func runAhead(ctx context.Context, spec produceSpec, pub *sim.KafkaPublisher) error {
	cfg := spec.Sim
	rate := cfg.Rate
	cfg.Rate, cfg.Duration = 0, 0 // every round, as fast as it builds
	var built encoded
	exp, err := sim.Run(ctx, cfg, &built, nil)
	if err != nil {
		return err
	}
	fmt.Printf("ready %d\n", len(built.msgs))
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
			fmt.Printf("sent %d\n", i+1)
		}
	}
	if err := pub.Flush(ctx); err != nil {
		return fmt.Errorf("flush publisher: %w", err)
	}
	if err := exp.WriteFile(spec.Expected); err != nil {
		return err
	}
	fmt.Printf("done %d\n", exp.Messages)
	return nil
}

// encoded is a sim.Publisher that keeps the messages it is given, encoded
// as the hubs send them, for runAhead to send later.
type encoded struct{ msgs []*kafka.Message }

func (e *encoded) Publish(_ context.Context, m sim.Message) error {
	if strings.HasPrefix(m.Type, sim.GHTypePrefix) {
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

// benchProducer is a running producer process.
type benchProducer struct {
	cmd      *exec.Cmd
	expected string
	started  time.Time
	// ready is closed when a producer producing ahead has built its
	// messages and starts sending (readyAt); never for the others.
	ready    chan struct{}
	readyAt  time.Time
	sent     atomic.Int64
	exited   chan struct{}
	finished atomic.Bool // it printed "done": everything was delivered
	waitErr  error
	stderr   strings.Builder
	lastCPU  atomic.Int64 // CPU time, refreshed by cpu() while it runs
}

// poisoned publishes a reject instead of every message, of the same hub,
// key and version: every other one an event type no bridge knows
// (unknown_type), the others the message's own type with data that is not
// JSON (bad_payload), which costs the reader a decode.
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
		m.Data = []byte(`{"objects":[{"metadata":`)
	}
	return p.KafkaPublisher.Publish(ctx, m)
}

// poisonType is the bundle type of the poison-flood's rejects.
const poisonType = "poison"

// startProducer starts a producer process doing spec (its Expected is set
// here).
func startProducer(spec produceSpec) (*benchProducer, error) {
	f, err := os.CreateTemp("", "stb-bench-expected-*.json")
	if err != nil {
		return nil, err
	}
	_ = f.Close()
	spec.Expected = f.Name()
	specJSON, err := json.Marshal(spec)
	if err != nil {
		return nil, err
	}
	exe, err := os.Executable()
	if err != nil {
		return nil, err
	}
	p := &benchProducer{expected: f.Name(), exited: make(chan struct{}), ready: make(chan struct{})}
	p.cmd = exec.Command(exe, "bench", "--internal-producer", string(specJSON))
	p.cmd.SysProcAttr = &syscall.SysProcAttr{Pdeathsig: syscall.SIGKILL}
	p.cmd.Stderr = &p.stderr
	stdout, err := p.cmd.StdoutPipe()
	if err != nil {
		return nil, err
	}
	if err := p.cmd.Start(); err != nil {
		return nil, fmt.Errorf("start producer: %w", err)
	}
	p.started = time.Now()
	go func() {
		sc := bufio.NewScanner(stdout)
		for sc.Scan() {
			word, n, _ := strings.Cut(sc.Text(), " ")
			v, err := strconv.ParseInt(n, 10, 64)
			if err != nil {
				continue
			}
			if word == "ready" {
				p.readyAt = time.Now()
				close(p.ready)
				continue
			}
			p.sent.Store(v)
			if word == "done" {
				p.finished.Store(true)
			}
		}
		p.waitErr = p.cmd.Wait()
		if ps := p.cmd.ProcessState; ps != nil {
			p.lastCPU.Store(int64(ps.UserTime() + ps.SystemTime()))
		}
		close(p.exited)
	}()
	return p, nil
}

// Sent returns the number of messages published so far.
func (p *benchProducer) Sent() int64 { return p.sent.Load() }

// cpu returns the producer's CPU time so far.
func (p *benchProducer) cpu() time.Duration {
	select {
	case <-p.exited:
	default:
		if c := cpuOf(p.cmd.Process.Pid); c > 0 {
			p.lastCPU.Store(int64(c))
		}
	}
	return time.Duration(p.lastCPU.Load())
}

// wait waits for the producer to finish and returns the expected state it
// wrote.
func (p *benchProducer) wait(ctx context.Context) (*sim.Expected, error) {
	select {
	case <-p.exited:
	case <-ctx.Done():
		p.stop()
		return nil, ctx.Err()
	}
	defer os.Remove(p.expected)
	if p.waitErr != nil || !p.finished.Load() {
		return nil, fmt.Errorf("producer failed (%v): %s", p.waitErr, strings.TrimSpace(p.stderr.String()))
	}
	return sim.ReadExpected(p.expected)
}

// stop ends the producer before it has sent everything.
func (p *benchProducer) stop() {
	select {
	case <-p.exited:
		return
	default:
	}
	_ = p.cmd.Process.Signal(syscall.SIGTERM)
	select {
	case <-p.exited:
	case <-time.After(10 * time.Second):
		_ = p.cmd.Process.Kill()
		<-p.exited
	}
	_ = os.Remove(p.expected)
}

// done is closed when the producer has exited.
func (p *benchProducer) done() <-chan struct{} { return p.exited }
