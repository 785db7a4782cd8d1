package test

// Helpers of the fault-injection tests (faults_*_test.go): killing the
// bridge, reading its HTTP endpoints and Prometheus metrics, a background
// `stb simulate`, a marked database pool that survives a database outage,
// and a Kafka producer that writes records exactly as given.

import (
	"bufio"
	"bytes"
	"context"
	"fmt"
	"io"
	"net/http"
	"net/url"
	"os/exec"
	"path/filepath"
	"strconv"
	"strings"
	"syscall"
	"testing"
	"time"

	"github.com/jackc/pgx/v5"
	"github.com/jackc/pgx/v5/pgxpool"
	"github.com/twmb/franz-go/pkg/kerr"
	"github.com/twmb/franz-go/pkg/kgo"
	"github.com/twmb/franz-go/pkg/kmsg"

	"github.com/stbridge/stb/pkg/db/dbtest"
)

// kill sends SIGKILL and waits until the process is gone.
func (b *bridge) kill() {
	b.t.Helper()
	if !b.running() {
		b.t.Fatalf("bridge (pid %d) had already exited before it was killed: %v\n%s",
			b.cmd.Process.Pid, b.err, tail(b.log.String(), 40))
	}
	if err := b.cmd.Process.Signal(syscall.SIGKILL); err != nil {
		b.t.Fatal(err)
	}
	select {
	case <-b.done:
	case <-time.After(10 * time.Second):
		b.t.Fatalf("bridge (pid %d) still running 10s after SIGKILL", b.cmd.Process.Pid)
	}
}

// faultsHTTP bounds every request to the bridge, so that a hung endpoint
// fails a sample instead of the whole test.
var faultsHTTP = &http.Client{Timeout: 5 * time.Second}

// get fetches path from the bridge: metrics and probes from its public
// listener, the rest (console, /debug/units) from its admin listener.
func (b *bridge) get(path string) (status int, body string, err error) {
	base := b.adminURL
	for _, public := range []string{"/metrics", "/healthz", "/readyz"} {
		if strings.HasPrefix(path, public) {
			base = b.httpURL
		}
	}
	resp, err := faultsHTTP.Get(base + path)
	if err != nil {
		return 0, "", err
	}
	defer resp.Body.Close()
	raw, err := io.ReadAll(resp.Body)
	return resp.StatusCode, string(raw), err
}

// waitReady polls /readyz until it answers 200, and fails the test if the
// bridge exits or the timeout ends first.
func (b *bridge) waitReady(timeout time.Duration) {
	b.t.Helper()
	deadline := time.Now().Add(timeout)
	var last string
	for {
		if !b.running() {
			b.t.Fatalf("bridge exited while waiting for /readyz: %v", b.err)
		}
		code, body, err := b.get("/readyz")
		if err == nil && code == http.StatusOK {
			return
		}
		last = fmt.Sprintf("%d %s %v", code, strings.TrimSpace(body), err)
		if time.Now().After(deadline) {
			b.t.Fatalf("/readyz not 200 within %v; last answer: %s", timeout, last)
		}
		time.Sleep(100 * time.Millisecond)
	}
}

// metricSamples are the samples of one scrape, by series: the metric name
// followed by its labels exactly as exposed, such as
// `stb_transport_rejected_total{reason="too_large"}`.
type metricSamples map[string]float64

// sum adds up every series of the metric name (one for an unlabelled
// metric), and reports whether there was any.
func (s metricSamples) sum(name string) (float64, bool) {
	var total float64
	found := false
	for series, v := range s {
		n, _, _ := strings.Cut(series, "{")
		if n == name {
			total += v
			found = true
		}
	}
	return total, found
}

// sumWith adds up the series of the metric name that carry the label
// with the value.
func (s metricSamples) sumWith(name, label, value string) float64 {
	var total float64
	want := label + "=" + strconv.Quote(value)
	for series, v := range s {
		n, labels, _ := strings.Cut(series, "{")
		if n == name && (strings.Contains(labels, "{"+want) || strings.Contains(labels, ","+want) || strings.HasPrefix(labels, want)) {
			total += v
		}
	}
	return total
}

// scrape reads /metrics once.
func (b *bridge) scrape() (metricSamples, error) {
	resp, err := faultsHTTP.Get(b.httpURL + "/metrics")
	if err != nil {
		return nil, err
	}
	defer resp.Body.Close()
	if resp.StatusCode != http.StatusOK {
		return nil, fmt.Errorf("/metrics answered %s", resp.Status)
	}
	return parsePromText(resp.Body)
}

// parsePromText parses the Prometheus text exposition format (version
// 0.0.4), as much of it as a test needs: comments and blank lines are
// skipped; every other line is a series, `name` or `name{labels}`, then a
// value and an optional timestamp. Label values are quoted and may hold
// spaces, braces and escaped quotes, so the end of the labels is found by
// scanning, not by splitting on spaces.
func parsePromText(r io.Reader) (metricSamples, error) {
	out := metricSamples{}
	sc := bufio.NewScanner(r)
	sc.Buffer(make([]byte, 64<<10), 1<<20)
	for n := 1; sc.Scan(); n++ {
		line := strings.TrimSpace(sc.Text())
		if line == "" || line[0] == '#' {
			continue
		}
		end := strings.IndexAny(line, "{ ")
		if end < 0 {
			return nil, fmt.Errorf("line %d: no value: %q", n, line)
		}
		if line[end] == '{' {
			inQuote, escaped := false, false
			close := -1
			for i := end + 1; i < len(line) && close < 0; i++ {
				switch c := line[i]; {
				case escaped:
					escaped = false
				case c == '\\':
					escaped = true
				case c == '"':
					inQuote = !inQuote
				case c == '}' && !inQuote:
					close = i
				}
			}
			if close < 0 {
				return nil, fmt.Errorf("line %d: unterminated labels: %q", n, line)
			}
			end = close + 1
		}
		series := line[:end]
		fields := strings.Fields(line[end:])
		if len(fields) < 1 || len(fields) > 2 {
			return nil, fmt.Errorf("line %d: want a value and an optional timestamp: %q", n, line)
		}
		v, err := strconv.ParseFloat(fields[0], 64)
		if err != nil {
			return nil, fmt.Errorf("line %d: value: %w", n, err)
		}
		out[series] = v
	}
	return out, sc.Err()
}

// simRun is an `stb simulate` running in the background. Only the test
// goroutine touches t: it collects the result with wait.
type simRun struct {
	expected string
	done     chan struct{}
	out      bytes.Buffer // read only after done is closed
	err      error
}

// simulateAsync starts `stb simulate` and returns at once.
func (e *env) simulateAsync(name string, args ...string) *simRun {
	e.t.Helper()
	s := &simRun{expected: filepath.Join(e.dir, name+".json"), done: make(chan struct{})}
	cmd := exec.Command(stbBin, append([]string{"simulate", "--kafka-brokers", e.brokers, "--expected", s.expected}, args...)...)
	cmd.Stdout, cmd.Stderr = &s.out, &s.out
	if err := cmd.Start(); err != nil {
		e.t.Fatal(err)
	}
	go func() {
		defer close(s.done)
		s.err = cmd.Wait()
	}()
	e.t.Cleanup(func() {
		_ = cmd.Process.Kill()
		<-s.done
	})
	return s
}

func (s *simRun) running() bool {
	select {
	case <-s.done:
		return false
	default:
		return true
	}
}

// wait waits for the simulation to end and returns its expected state.
func (s *simRun) wait(t *testing.T, timeout time.Duration) string {
	t.Helper()
	select {
	case <-s.done:
	case <-time.After(timeout):
		t.Fatalf("stb simulate still running after %v", timeout)
	}
	if s.err != nil {
		t.Fatalf("stb simulate: %v\n%s", s.err, s.out.String())
	}
	t.Logf("%s", lastLine(s.out.String()))
	return s.expected
}

// lastLine returns the last line of a command's output, whose progress
// lines end in carriage returns.
func lastLine(out string) string {
	lines := strings.FieldsFunc(out, func(r rune) bool { return r == '\r' || r == '\n' })
	if len(lines) == 0 {
		return ""
	}
	return strings.TrimSpace(lines[len(lines)-1])
}

// probeApp is the application_name of the test's own connections to the
// test database, which an injected outage leaves alone.
const probeApp = "stb-test-probe"

// dbNameOf returns the database a URL names.
func dbNameOf(t *testing.T, rawURL string) string {
	t.Helper()
	u, err := url.Parse(rawURL)
	if err != nil {
		t.Fatal(err)
	}
	return strings.TrimPrefix(u.Path, "/")
}

// withApplicationName returns rawURL with the libpq application_name set.
func withApplicationName(t *testing.T, rawURL, app string) string {
	t.Helper()
	u, err := url.Parse(rawURL)
	if err != nil {
		t.Fatal(err)
	}
	q := u.Query()
	q.Set("application_name", app)
	u.RawQuery = q.Encode()
	return u.String()
}

// withProbePool returns a copy of e whose pool (used by the harness's
// offsets, versions and watchVersions) connects as probeApp, so that a
// test terminating the bridge's backends can exclude its own.
func (e *env) withProbePool() *env {
	e.t.Helper()
	ctx, cancel := context.WithTimeout(context.Background(), 10*time.Second)
	defer cancel()
	pool, err := pgxpool.New(ctx, withApplicationName(e.t, e.dbURL, probeApp))
	if err != nil {
		e.t.Fatal(err)
	}
	if err := pool.Ping(ctx); err != nil {
		e.t.Fatal(err)
	}
	e.t.Cleanup(pool.Close)
	c := *e
	c.pool = pool
	return &c
}

// maintenanceConn connects to the server's maintenance database (the one
// dbtest creates test databases from), not to the test database.
func maintenanceConn(t *testing.T) *pgx.Conn {
	t.Helper()
	ctx, cancel := context.WithTimeout(context.Background(), 10*time.Second)
	defer cancel()
	conn, err := pgx.Connect(ctx, dbtest.BaseURL())
	if err != nil {
		t.Fatal(err)
	}
	t.Cleanup(func() { conn.Close(context.Background()) })
	return conn
}

// terminateBackends ends every backend of database dbName except those
// connected as keepApp, and returns how many it ended.
func terminateBackends(ctx context.Context, admin *pgx.Conn, dbName, keepApp string) (int, error) {
	var n int
	err := admin.QueryRow(ctx, `
SELECT count(*) FILTER (WHERE pg_terminate_backend(pid))
FROM pg_stat_activity
WHERE datname = $1 AND pid <> pg_backend_pid() AND application_name <> $2`, dbName, keepApp).Scan(&n)
	return n, err
}

// producer returns a franz-go client that produces to the status topic
// records exactly as built, with room for the largest record the broker
// takes (16 MiB).
func (e *env) producer() *kgo.Client {
	e.t.Helper()
	cl, err := kgo.NewClient(
		kgo.SeedBrokers(e.brokers),
		kgo.DefaultProduceTopic("status"),
		kgo.ProducerBatchMaxBytes(16<<20),
		kgo.RecordPartitioner(kgo.ManualPartitioner()),
	)
	if err != nil {
		e.t.Fatal(err)
	}
	e.t.Cleanup(cl.Close)
	return cl
}

// waitOffsets waits until status.transport holds exactly end.
func (e *env) waitOffsets(end map[int32]int64, timeout time.Duration) {
	e.t.Helper()
	deadline := time.Now().Add(timeout)
	for {
		got := e.offsets()
		if equalOffsets(got, end) {
			return
		}
		if time.Now().After(deadline) {
			e.t.Fatalf("stored offsets %v never reached the end of the partitions %v", got, end)
		}
		time.Sleep(100 * time.Millisecond)
	}
}

// highWatermarks asks the broker for the end of every partition of the
// status topic: the offset the next record will get.
func (e *env) highWatermarks() map[int32]int64 {
	e.t.Helper()
	return e.highWatermarksOf("status")
}

// highWatermarksOf is highWatermarks for any topic.
func (e *env) highWatermarksOf(topic string) map[int32]int64 {
	e.t.Helper()
	cl, err := kgo.NewClient(kgo.SeedBrokers(e.brokers))
	if err != nil {
		e.t.Fatal(err)
	}
	defer cl.Close()
	ctx, cancel := context.WithTimeout(context.Background(), 30*time.Second)
	defer cancel()

	meta := kmsg.NewPtrMetadataRequest()
	mt := kmsg.NewMetadataRequestTopic()
	mt.Topic = kmsg.StringPtr(topic)
	meta.Topics = append(meta.Topics, mt)
	mresp, err := meta.RequestWith(ctx, cl)
	if err != nil {
		e.t.Fatal(err)
	}
	if len(mresp.Topics) != 1 || mresp.Topics[0].ErrorCode != 0 {
		e.t.Fatalf("metadata of topic %s: %+v", topic, mresp.Topics)
	}
	req := kmsg.NewPtrListOffsetsRequest()
	rt := kmsg.NewListOffsetsRequestTopic()
	rt.Topic = topic
	for _, p := range mresp.Topics[0].Partitions {
		rp := kmsg.NewListOffsetsRequestTopicPartition()
		rp.Partition = p.Partition
		rp.Timestamp = -1 // latest
		rt.Partitions = append(rt.Partitions, rp)
	}
	req.Topics = append(req.Topics, rt)
	resp, err := req.RequestWith(ctx, cl)
	if err != nil {
		e.t.Fatal(err)
	}
	out := map[int32]int64{}
	for _, t := range resp.Topics {
		for _, p := range t.Partitions {
			if err := kerr.ErrorForCode(p.ErrorCode); err != nil {
				e.t.Fatalf("list offsets of %s/%d: %v", topic, p.Partition, err)
			}
			out[p.Partition] = p.Offset
		}
	}
	return out
}

// recordCount returns the number of records up to the given ends, for a topic
// whose partitions all start at offset 0.
func recordCount(ends map[int32]int64) int {
	n := 0
	for _, o := range ends {
		n += int(o)
	}
	return n
}

// valueSizes reads the n records of the status topic and returns the total
// and the largest size of their values.
func (e *env) valueSizes(n int) (totalBytes, largest int64) {
	e.t.Helper()
	cl, err := kgo.NewClient(kgo.SeedBrokers(e.brokers), kgo.ConsumeTopics("status"),
		kgo.ConsumeResetOffset(kgo.NewOffset().AtStart()), kgo.FetchMaxBytes(64<<20))
	if err != nil {
		e.t.Fatal(err)
	}
	defer cl.Close()
	ctx, cancel := context.WithTimeout(context.Background(), time.Minute)
	defer cancel()
	for read := 0; read < n; {
		fs := cl.PollFetches(ctx)
		if err := ctx.Err(); err != nil {
			e.t.Fatalf("read %d of %d records: %v", read, n, err)
		}
		fs.EachRecord(func(r *kgo.Record) {
			read++
			totalBytes += int64(len(r.Value))
			largest = max(largest, int64(len(r.Value)))
		})
	}
	return totalBytes, largest
}
