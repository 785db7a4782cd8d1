package test

import (
	"fmt"
	"net/http"
	"strings"
	"testing"
	"time"
)

// TestDatabaseHang: the bridge's PostgreSQL connections go through a proxy
// that stops forwarding (it accepts, then holds every byte) for longer than
// max.poll.interval.ms while the hubs publish: a database that hangs rather
// than refuses. Issue 21 found that the committer saved offsets without a
// deadline while holding the lock the revocation callback needs (a hung
// database could stall the poll loop into an eviction), that /readyz
// waited 2 s for its ping and then printed the pgx error with host, user
// and database, and that Run's shutdown could give up without closing and
// leave the command's Close waiting on the pools.
//
// The bridge must keep its group membership through the hang (librdkafka
// never reports max.poll.interval.ms exceeded, no partition is revoked or
// assigned again), answer 503 on /readyz within 2 s of the hang without
// connection details, keep reading, write everything once the proxy
// forwards again, and, hung a second time, exit on SIGTERM within
// --shutdown-timeout plus its documented 2 s close grace (and the exit
// itself), losing nothing a restart does not write.
func TestDatabaseHang(t *testing.T) {
	const (
		pollInterval    = 7 * time.Second // librdkafka wants it ≥ session.timeout.ms
		shutdownTimeout = 3 * time.Second
		margin          = 3 * time.Second // the close grace (2 s) and the process's exit
	)
	e := newEnv(t, 2)
	proxy, viaProxy := proxiedURL(t, e.dbURL)
	pe := *e
	pe.dbURL = viaProxy
	args := []string{"--kafka-property", fmt.Sprintf("max.poll.interval.ms=%d", pollInterval.Milliseconds()),
		"--kafka-property", "session.timeout.ms=6000", "--shutdown-timeout", shutdownTimeout.String()}
	b := pe.startBridge(args...)
	b.waitReady(time.Minute) // partitions assigned, database reachable
	before, err := b.scrape()
	if err != nil {
		t.Fatal(err)
	}
	assigned := before.sumWith("stb_transport_assignments_total", "start", "reset") +
		before.sumWith("stb_transport_assignments_total", "start", "stored") +
		before.sumWith("stb_transport_assignments_total", "start", "group")

	proxy.stall()
	hung := time.Now()
	body := b.waitNotReady(10 * time.Second)
	if took := time.Since(hung); took > 2*time.Second {
		t.Errorf("/readyz said 503 only %v after the database hung, want within 2s", took.Round(time.Millisecond))
	}
	t.Logf("/readyz %v into the hang: %q", time.Since(hung).Round(time.Millisecond), body)
	dbName := dbNameOf(t, e.dbURL)
	for _, detail := range []string{dbName, proxy.Addr(), "127.0.0.1", "user=", "database="} {
		if strings.Contains(body, detail) {
			t.Errorf("/readyz shows the connection detail %q: %q", detail, body)
		}
	}
	if !strings.Contains(body, "database") {
		t.Errorf("/readyz does not say the database is the problem: %q", body)
	}

	// The hubs publish during the hang; the reader must go on reading
	// them, past max.poll.interval.ms, without leaving its group.
	exp := e.simulate("during", "--hubs", "30", "--clusters", "3", "--generations", "4", "--seed", "21")
	want := float64(e.messages(exp))
	for {
		s, err := b.scrape()
		if err != nil {
			t.Fatalf("scraping during the hang: %v", err)
		}
		now := s.sumWith("stb_transport_assignments_total", "start", "reset") +
			s.sumWith("stb_transport_assignments_total", "start", "stored") +
			s.sumWith("stb_transport_assignments_total", "start", "group")
		if now != assigned {
			t.Fatalf("partitions assigned again during the hang (%v, before %v): the member left its group", now, assigned)
		}
		if log := b.log.String(); evicted(log) {
			t.Fatalf("the consumer lost its group membership during the hang:\n%s", tail(log, 30))
		}
		read, _ := s.sum("stb_transport_messages_total")
		if read >= want && time.Since(hung) > pollInterval+2*time.Second {
			t.Logf("%.0f messages read during a hang of %v", read, time.Since(hung).Round(time.Millisecond))
			break
		}
		if time.Since(hung) > pollInterval+time.Minute {
			t.Fatalf("only %.0f of %.0f messages read %v into the hang", read, want, time.Since(hung).Round(time.Second))
		}
		if !b.running() {
			t.Fatalf("the bridge exited during the hang: %v", b.err)
		}
		time.Sleep(200 * time.Millisecond)
	}

	proxy.resume()
	b.waitReady(time.Minute)
	t.Logf("/readyz 200 %v after the proxy forwarded again", time.Since(hung).Round(time.Millisecond))
	e.waitVerified(exp, 2*time.Minute)
	e.waitOffsets(e.highWatermarks(), time.Minute)
	if log := b.log.String(); evicted(log) {
		t.Fatalf("the consumer lost its group membership after the hang:\n%s", tail(log, 30))
	}

	// Hung again, and stopped meanwhile: the committer, the hub lifecycle
	// and the probes are all waiting on the database.
	proxy.stall()
	b.waitNotReady(10 * time.Second)
	b.sigtermWithin(shutdownTimeout, margin, "the database hung")

	stored := e.offsets()
	proxy.resume()
	b2 := pe.startBridge(args...)
	e.waitVerified(exp, 2*time.Minute)
	e.waitOffsets(e.highWatermarks(), time.Minute)
	if got := e.offsets(); !equalOffsets(got, stored) {
		t.Errorf("stored offsets moved from %v to %v although nothing new was published", stored, got)
	}
	b2.stop(30 * time.Second)
}

// evicted reports whether a bridge's log says its consumer left or lost
// its group: librdkafka's max.poll.interval.ms message, a lost assignment,
// or a revocation.
func evicted(log string) bool {
	for _, s := range []string{"Maximum application poll interval", "MAX_POLL_EXCEEDED", "assignment lost", "partition revoked"} {
		if strings.Contains(log, s) {
			return true
		}
	}
	return false
}

// waitNotReady polls /readyz until it answers 503 and returns its body;
// it fails the test if the bridge exits or the timeout ends first.
func (b *bridge) waitNotReady(timeout time.Duration) string {
	b.t.Helper()
	deadline := time.Now().Add(timeout)
	for {
		if !b.running() {
			b.t.Fatalf("bridge exited while waiting for /readyz to fail: %v", b.err)
		}
		code, body, err := b.get("/readyz")
		if err == nil && code == http.StatusServiceUnavailable {
			return strings.TrimSpace(body)
		}
		if time.Now().After(deadline) {
			b.t.Fatalf("/readyz not 503 within %v; last answer: %d %q %v", timeout, code, body, err)
		}
		time.Sleep(50 * time.Millisecond)
	}
}
