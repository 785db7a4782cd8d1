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

	"github.com/stbridge/stb/pkg/sim"
	"github.com/stbridge/stb/pkg/transport"
	"go.uber.org/zap"
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

// benchProducer is a running producer process.
type benchProducer struct {
	cmd      *exec.Cmd
	expected string
	started  time.Time
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
	p := &benchProducer{expected: f.Name(), exited: make(chan struct{})}
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
