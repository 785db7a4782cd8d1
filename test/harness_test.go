package test

import (
	"bytes"
	"context"
	"fmt"
	"net"
	"os"
	"os/exec"
	"path/filepath"
	"strconv"
	"strings"
	"sync"
	"syscall"
	"testing"
	"time"

	"github.com/jackc/pgx/v5/pgxpool"
	"go.uber.org/zap"

	"github.com/stbridge/stb/pkg/broker"
	"github.com/stbridge/stb/pkg/db/dbtest"
	"github.com/stbridge/stb/pkg/sim"
)

// stbBin is the binary under test, built once by TestMain.
var stbBin string

func TestMain(m *testing.M) {
	dir, err := os.MkdirTemp("", "stb-e2e-")
	if err != nil {
		fmt.Fprintln(os.Stderr, err)
		os.Exit(1)
	}
	stbBin = filepath.Join(dir, "stb")
	build := exec.Command("go", "build", "-o", stbBin, "./cmd/stb")
	build.Dir = ".."
	build.Stdout, build.Stderr = os.Stderr, os.Stderr
	if err := build.Run(); err != nil {
		fmt.Fprintln(os.Stderr, "building stb:", err)
		os.Exit(1)
	}
	code := m.Run()
	os.RemoveAll(dir)
	os.Exit(code)
}

// env is one test's world: a broker, a database and a scratch directory.
type env struct {
	t       *testing.T
	broker  *broker.Broker
	brokers string
	dbURL   string
	pool    *pgxpool.Pool
	dir     string
}

func newEnv(t *testing.T, partitions int32) *env {
	t.Helper()
	b, err := broker.Start(broker.Config{Topics: []string{"status"}, Partitions: partitions}, zap.NewNop())
	if err != nil {
		t.Fatal(err)
	}
	t.Cleanup(b.Close)
	pool, url := dbtest.New(t)
	return &env{t: t, broker: b, brokers: b.Addr(), dbURL: url, pool: pool, dir: t.TempDir()}
}

// stb runs a short stb command and returns its combined output.
func (e *env) stb(args ...string) (string, error) {
	ctx, cancel := context.WithTimeout(context.Background(), 3*time.Minute)
	defer cancel()
	cmd := exec.CommandContext(ctx, stbBin, args...)
	out, err := cmd.CombinedOutput()
	return string(out), err
}

// simulate publishes hubs and returns the path of the expected state.
func (e *env) simulate(name string, args ...string) string {
	e.t.Helper()
	exp := filepath.Join(e.dir, name+".json")
	out, err := e.stb(append([]string{"simulate", "--kafka-brokers", e.brokers, "--expected", exp}, args...)...)
	if err != nil {
		e.t.Fatalf("stb simulate: %v\n%s", err, out)
	}
	e.t.Logf("%s", strings.TrimSpace(out))
	return exp
}

// verify runs stb verify once.
func (e *env) verify(expected string) (bool, string) {
	out, err := e.stb("verify", "--database-url", e.dbURL, "--expected", expected)
	if err != nil {
		if ee, ok := err.(*exec.ExitError); ok && ee.ExitCode() == 1 {
			return false, out
		}
		e.t.Fatalf("stb verify: %v\n%s", err, out)
	}
	return true, out
}

// waitVerified runs verify until it passes or the timeout ends.
func (e *env) waitVerified(expected string, timeout time.Duration) {
	e.t.Helper()
	deadline := time.Now().Add(timeout)
	for {
		ok, out := e.verify(expected)
		if ok {
			e.t.Logf("%s", strings.TrimSpace(out))
			return
		}
		if time.Now().After(deadline) {
			e.t.Fatalf("database never matched the expected state:\n%s", out)
		}
		time.Sleep(500 * time.Millisecond)
	}
}

// bridge is a running `stb run` child process.
type bridge struct {
	t       *testing.T
	cmd     *exec.Cmd
	log     *syncBuffer
	done    chan struct{}
	err     error
	httpURL string // metrics and probes
	// adminURL is the console's listener (status page, /debug/units).
	adminURL string
}

type syncBuffer struct {
	mu sync.Mutex
	b  bytes.Buffer
}

func (s *syncBuffer) Write(p []byte) (int, error) {
	s.mu.Lock()
	defer s.mu.Unlock()
	return s.b.Write(p)
}

func (s *syncBuffer) String() string {
	s.mu.Lock()
	defer s.mu.Unlock()
	return s.b.String()
}

func freePort(t *testing.T) string {
	t.Helper()
	ln, err := net.Listen("tcp", "127.0.0.1:0")
	if err != nil {
		t.Fatal(err)
	}
	defer ln.Close()
	return ln.Addr().String()
}

// startBridge starts `stb run` on the env's broker and database.
func (e *env) startBridge(extra ...string) *bridge {
	e.t.Helper()
	addr, admin := freePort(e.t), freePort(e.t)
	args := append([]string{"run",
		"--kafka-brokers", e.brokers, "--database-url", e.dbURL,
		"--commit-interval", "200ms", "--http-addr", addr, "--admin-addr", admin, "--log-level", "info",
	}, extra...)
	cmd := exec.Command(stbBin, args...)
	b := &bridge{t: e.t, cmd: cmd, log: &syncBuffer{}, done: make(chan struct{}), httpURL: "http://" + addr, adminURL: "http://" + admin}
	cmd.Stdout, cmd.Stderr = b.log, b.log
	if err := cmd.Start(); err != nil {
		e.t.Fatal(err)
	}
	go func() {
		b.err = cmd.Wait()
		close(b.done)
	}()
	e.t.Cleanup(func() {
		if b.running() {
			_ = cmd.Process.Kill()
			<-b.done
		}
		if e.t.Failed() {
			e.t.Logf("bridge log (pid %d):\n%s", cmd.Process.Pid, tail(b.log.String(), 60))
		}
		keepLog(e.t, cmd.Process.Pid, b.log.String())
	})
	return b
}

// keepLogDir, when STB_TEST_BRIDGE_LOGS names a directory, receives the
// whole log of every bridge a test started (the failure message shows only
// its tail): <test>-<pid>.log.
const keepLogDir = "STB_TEST_BRIDGE_LOGS"

func keepLog(t *testing.T, pid int, log string) {
	dir := os.Getenv(keepLogDir)
	if dir == "" {
		return
	}
	name := filepath.Join(dir, fmt.Sprintf("%s-%d.log", strings.ReplaceAll(t.Name(), "/", "_"), pid))
	if err := os.WriteFile(name, []byte(log), 0o644); err != nil {
		t.Logf("keeping the bridge log: %v", err)
		return
	}
	t.Logf("bridge log (pid %d) kept in %s", pid, name)
}

func (b *bridge) running() bool {
	select {
	case <-b.done:
		return false
	default:
		return true
	}
}

// stop sends SIGTERM and waits for a clean exit.
func (b *bridge) stop(timeout time.Duration) {
	b.t.Helper()
	if err := b.cmd.Process.Signal(syscall.SIGTERM); err != nil {
		b.t.Fatal(err)
	}
	select {
	case <-b.done:
	case <-time.After(timeout):
		b.t.Fatalf("bridge did not stop within %v after SIGTERM", timeout)
	}
	if b.err != nil {
		b.t.Fatalf("bridge exited with %v", b.err)
	}
}

func tail(s string, lines int) string {
	ls := strings.Split(strings.TrimRight(s, "\n"), "\n")
	if len(ls) > lines {
		ls = ls[len(ls)-lines:]
	}
	return strings.Join(ls, "\n")
}

// offsets returns the committed offsets stored in status.transport.
func (e *env) offsets() map[int32]int64 {
	e.t.Helper()
	rows, err := e.pool.Query(context.Background(), `SELECT (payload->>'partition')::int, (payload->>'offset')::bigint FROM status.transport`)
	if err != nil {
		e.t.Fatal(err)
	}
	defer rows.Close()
	out := map[int32]int64{}
	for rows.Next() {
		var p int32
		var o int64
		if err := rows.Scan(&p, &o); err != nil {
			e.t.Fatal(err)
		}
		out[p] = o
	}
	if err := rows.Err(); err != nil {
		e.t.Fatal(err)
	}
	return out
}

// waitFirstCommit waits until a bridge has stored its first offsets: the
// point at which the tests stop one half way through a backlog.
func (e *env) waitFirstCommit(timeout time.Duration) {
	e.t.Helper()
	deadline := time.Now().Add(timeout)
	for len(e.offsets()) == 0 {
		if time.Now().After(deadline) {
			e.t.Fatalf("no offsets committed within %s", timeout)
		}
		time.Sleep(20 * time.Millisecond)
	}
}

// versions returns stb.bundle_versions as hub/type → (incarnation,
// generation).
func (e *env) versions() map[string][2]uint64 {
	e.t.Helper()
	vs, err := e.queryVersions()
	if err != nil {
		e.t.Fatal(err)
	}
	return vs
}

func (e *env) queryVersions() (map[string][2]uint64, error) {
	rows, err := e.pool.Query(context.Background(), `SELECT hub || '/' || bundle_type, incarnation::text, generation::text FROM stb.bundle_versions`)
	if err != nil {
		return nil, err
	}
	defer rows.Close()
	out := map[string][2]uint64{}
	for rows.Next() {
		var k, i, g string
		if err := rows.Scan(&k, &i, &g); err != nil {
			return nil, err
		}
		iv, _ := strconv.ParseUint(i, 10, 64)
		gv, _ := strconv.ParseUint(g, 10, 64)
		out[k] = [2]uint64{iv, gv}
	}
	return out, rows.Err()
}

func older(a, b [2]uint64) bool {
	return a[0] < b[0] || (a[0] == b[0] && a[1] < b[1])
}

// versionWatch samples bundle_versions in the background and records any
// row that ever went down.
type versionWatch struct {
	stop    chan struct{}
	done    chan struct{}
	mu      sync.Mutex
	errs    []string
	samples int
}

func (e *env) watchVersions(every time.Duration) *versionWatch {
	w := &versionWatch{stop: make(chan struct{}), done: make(chan struct{})}
	last := map[string][2]uint64{}
	go func() {
		defer close(w.done)
		for {
			cur, err := e.queryVersions()
			w.mu.Lock()
			if err != nil {
				w.errs = append(w.errs, "sampling failed: "+err.Error())
			}
			w.samples++
			for k, v := range cur {
				if p, ok := last[k]; ok && older(v, p) {
					w.errs = append(w.errs, fmt.Sprintf("%s went from %d.%d to %d.%d", k, p[0], p[1], v[0], v[1]))
				}
				last[k] = v
			}
			for k := range last {
				if _, ok := cur[k]; !ok {
					w.errs = append(w.errs, k+" disappeared")
				}
			}
			w.mu.Unlock()
			select {
			case <-w.stop:
				return
			case <-time.After(every):
			}
		}
	}()
	return w
}

func (w *versionWatch) finish(t *testing.T) {
	t.Helper()
	close(w.stop)
	<-w.done
	w.mu.Lock()
	defer w.mu.Unlock()
	if len(w.errs) > 0 {
		t.Fatalf("bundle_versions went backwards (%d samples): %s", w.samples, strings.Join(w.errs, "; "))
	}
	t.Logf("bundle_versions sampled %d times, never decreased", w.samples)
}

// expectedVersions returns the versions the expected-state file holds for
// a hub, by type, as "inc.gen".
func (e *env) expectedVersions(path, hub string) map[string]string {
	e.t.Helper()
	exp, err := sim.ReadExpected(path)
	if err != nil {
		e.t.Fatal(err)
	}
	st, ok := exp.Hubs[hub]
	if !ok {
		e.t.Fatalf("no hub %s in %s", hub, path)
	}
	out := map[string]string{}
	for typ, v := range st.Versions {
		out[typ] = v.String()
	}
	return out
}

// messages returns how many messages a simulation published.
func (e *env) messages(path string) int {
	e.t.Helper()
	exp, err := sim.ReadExpected(path)
	if err != nil {
		e.t.Fatal(err)
	}
	return exp.Messages
}
