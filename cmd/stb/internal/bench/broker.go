package bench

import (
	"bufio"
	"context"
	"errors"
	"fmt"
	"io"
	"net"
	"os"
	"os/exec"
	"strconv"
	"strings"
	"syscall"
	"time"
)

// benchBrokerStartTimeout bounds the start of the broker process; loading
// a large data directory of an earlier run takes a while.
const benchBrokerStartTimeout = 2 * time.Minute

// benchBroker is the embedded Kafka broker (`stb kafka`, kfake with a
// data directory) run as a child process. In-process, its CPU time and
// memory would count as the bridge's.
type benchBroker struct {
	cmd     *exec.Cmd
	addr    string
	dir     string
	tempDir bool // dir was created here and is removed on close
	exited  chan struct{}
	waitErr error
}

// startBenchBroker starts `stb kafka` on a free port with the topics
// created, and waits until it listens. dataDir "" uses a temporary
// directory.
func startBenchBroker(ctx context.Context, dataDir string, topics []string, partitions int) (*benchBroker, error) {
	b := &benchBroker{dir: dataDir, exited: make(chan struct{})}
	if b.dir == "" {
		dir, err := os.MkdirTemp("", "stb-bench-kafka-")
		if err != nil {
			return nil, err
		}
		b.dir, b.tempDir = dir, true
	}
	port, err := freePort()
	if err != nil {
		b.removeDir()
		return nil, err
	}
	b.addr = net.JoinHostPort("127.0.0.1", strconv.Itoa(port))
	exe, err := os.Executable()
	if err != nil {
		b.removeDir()
		return nil, err
	}
	b.cmd = exec.Command(exe, "kafka", "--port", strconv.Itoa(port), "--data-dir", b.dir,
		"--topics", strings.Join(topics, ","), "--partitions", strconv.Itoa(partitions), "--log-level", "warn")
	b.cmd.SysProcAttr = &syscall.SysProcAttr{Pdeathsig: syscall.SIGKILL} // never outlive the bench
	stderr, err := b.cmd.StderrPipe()
	if err != nil {
		b.removeDir()
		return nil, err
	}
	if err := b.cmd.Start(); err != nil {
		b.removeDir()
		return nil, fmt.Errorf("start broker: %w", err)
	}
	ready := make(chan struct{})
	go func() {
		// The broker says it listens on stderr; everything else it
		// writes there is passed on.
		sc := bufio.NewScanner(stderr)
		signalled := false
		for sc.Scan() {
			line := sc.Text()
			if !signalled && strings.HasPrefix(line, "kafka broker listening on") {
				signalled = true
				close(ready)
				continue
			}
			fmt.Fprintf(os.Stderr, "kafka: %s\n", line)
		}
		_, _ = io.Copy(io.Discard, stderr)
		b.waitErr = b.cmd.Wait()
		close(b.exited)
	}()
	timer := time.NewTimer(benchBrokerStartTimeout)
	defer timer.Stop()
	select {
	case <-ready:
		return b, nil
	case <-b.exited:
		b.removeDir()
		return nil, fmt.Errorf("broker exited at start: %v", b.waitErr)
	case <-timer.C:
		b.close()
		return nil, errors.New("broker did not start in time")
	case <-ctx.Done():
		b.close()
		return nil, ctx.Err()
	}
}

// pid returns the broker's process id, for its CPU time.
func (b *benchBroker) pid() int { return b.cmd.Process.Pid }

// close stops the broker gracefully (it writes its state to the data
// directory) and removes a temporary data directory.
func (b *benchBroker) close() {
	_ = b.cmd.Process.Signal(syscall.SIGTERM)
	select {
	case <-b.exited:
	case <-time.After(30 * time.Second):
		_ = b.cmd.Process.Kill()
		<-b.exited
	}
	b.removeDir()
}

func (b *benchBroker) removeDir() {
	if b.tempDir {
		_ = os.RemoveAll(b.dir)
	}
}

// freePort returns a TCP port on 127.0.0.1 that was free a moment ago.
func freePort() (int, error) {
	ln, err := net.Listen("tcp", "127.0.0.1:0")
	if err != nil {
		return 0, err
	}
	defer ln.Close()
	return ln.Addr().(*net.TCPAddr).Port, nil
}
