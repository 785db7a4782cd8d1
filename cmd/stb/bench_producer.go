package main

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
	// Expected is the file the producer writes the expected state to.
	Expected string `json:"expected"`
}

// producerProgressEvery is how often the producer reports its count.
const producerProgressEvery = 200 * time.Millisecond

// runInternalProducer is the producer process: it publishes the
// simulation, writes the expected state, and reports "sent N" lines and a
// final "done N" on stdout.
func runInternalProducer(ctx context.Context, specJSON string) error {
	var spec produceSpec
	if err := json.Unmarshal([]byte(specJSON), &spec); err != nil {
		return fmt.Errorf("producer spec: %w", err)
	}
	logger, err := newLogger("warn", "console")
	if err != nil {
		return err
	}
	pub, err := newKafkaPublisher(simFlags{brokers: spec.Brokers, prefix: transport.DefaultTypePrefix}, logger)
	if err != nil {
		return err
	}
	defer pub.Close()
	last := time.Now()
	exp, err := sim.Run(ctx, spec.Sim, pub, func(sent int) {
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

// startProducer starts a producer process publishing spec.Sim to brokers.
func startProducer(brokers string, cfg sim.Config) (*benchProducer, error) {
	f, err := os.CreateTemp("", "stb-bench-expected-*.json")
	if err != nil {
		return nil, err
	}
	_ = f.Close()
	spec, err := json.Marshal(produceSpec{Brokers: brokers, Sim: cfg, Expected: f.Name()})
	if err != nil {
		return nil, err
	}
	exe, err := os.Executable()
	if err != nil {
		return nil, err
	}
	p := &benchProducer{expected: f.Name(), exited: make(chan struct{})}
	p.cmd = exec.Command(exe, "bench", "--internal-producer", string(spec))
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
