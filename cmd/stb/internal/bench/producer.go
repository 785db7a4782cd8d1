package bench

import (
	"bufio"
	"bytes"
	"context"
	"encoding/json"
	"fmt"
	"io"
	"os"
	"os/exec"
	"strconv"
	"strings"
	"sync/atomic"
	"syscall"
	"time"

	"github.com/stbridge/stb/pkg/sim"
)

// The parent side of a producer process (produce.go is the child): it
// starts `stb bench produce` with the spec on stdin, follows its progress
// lines, and reads the expected state it wrote.

// produceCommand returns the command line of a producer process: this
// executable's `stb bench produce`. Tests run their own binary instead.
func produceCommand() ([]string, error) {
	exe, err := os.Executable()
	if err != nil {
		return nil, err
	}
	return []string{exe, "bench", "produce"}, nil
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

// startProducer starts a producer process, the command line argv (see
// produceCommand), doing spec (its Expected is set here).
func startProducer(argv []string, spec produceSpec) (*benchProducer, error) {
	f, err := os.CreateTemp("", "stb-bench-expected-*.json")
	if err != nil {
		return nil, err
	}
	_ = f.Close()
	spec.Expected = f.Name()
	specJSON, err := json.Marshal(spec)
	if err != nil {
		_ = os.Remove(f.Name())
		return nil, err
	}
	p := &benchProducer{expected: f.Name(), exited: make(chan struct{}), ready: make(chan struct{})}
	p.cmd = exec.Command(argv[0], argv[1:]...)
	p.cmd.Stdin = bytes.NewReader(specJSON)
	p.cmd.SysProcAttr = &syscall.SysProcAttr{Pdeathsig: syscall.SIGKILL}
	p.cmd.Stderr = &p.stderr
	stdout, err := p.cmd.StdoutPipe()
	if err != nil {
		_ = os.Remove(f.Name())
		return nil, err
	}
	if err := p.cmd.Start(); err != nil {
		_ = os.Remove(f.Name())
		return nil, fmt.Errorf("start producer: %w", err)
	}
	p.started = time.Now()
	go func() {
		sc := bufio.NewScanner(stdout)
		for sc.Scan() {
			p.progress(sc.Text())
		}
		_, _ = io.Copy(io.Discard, stdout)
		p.waitErr = p.cmd.Wait()
		if ps := p.cmd.ProcessState; ps != nil {
			p.lastCPU.Store(int64(ps.UserTime() + ps.SystemTime()))
		}
		close(p.exited)
	}()
	return p, nil
}

// progress takes one line the producer printed: "ready N", "sent N" or
// "done N" (see produce.go); anything else is ignored.
func (p *benchProducer) progress(line string) {
	word, n, _ := strings.Cut(line, " ")
	v, err := strconv.ParseInt(n, 10, 64)
	if err != nil {
		return
	}
	switch word {
	case "ready":
		if p.readyAt.IsZero() {
			p.readyAt = time.Now()
			close(p.ready)
		}
	case "sent":
		p.sent.Store(v)
	case "done":
		p.sent.Store(v)
		p.finished.Store(true)
	}
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
