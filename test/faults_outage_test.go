package test

import (
	"context"
	"net/http"
	"strings"
	"sync"
	"testing"
	"time"
)

// readinessLog samples /readyz in the background.
type readinessLog struct {
	stop chan struct{}
	done chan struct{}

	mu        sync.Mutex
	ok, notOK int
	errs      int    // requests that got no answer
	exited    bool   // the bridge was seen not running
	firstBad  string // the first non-200 answer
}

func (b *bridge) sampleReadiness(every time.Duration) *readinessLog {
	l := &readinessLog{stop: make(chan struct{}), done: make(chan struct{})}
	go func() {
		defer close(l.done)
		for {
			code, body, err := b.get("/readyz")
			l.mu.Lock()
			switch {
			case !b.running():
				l.exited = true
			case err != nil:
				l.errs++
			case code == http.StatusOK:
				l.ok++
			default:
				l.notOK++
				if l.firstBad == "" {
					l.firstBad = strings.TrimSpace(body)
				}
			}
			l.mu.Unlock()
			select {
			case <-l.stop:
				return
			case <-time.After(every):
			}
		}
	}()
	return l
}

func (l *readinessLog) finish() {
	close(l.stop)
	<-l.done
}

// TestDatabaseOutage terminates every backend of the bridge's database in
// a loop for 20 s while hubs publish. The bridge must stay up and say it
// is not ready, become ready again afterwards, catch up to the hubs' final
// state and commit the end of every partition, and bundle_versions must
// never go down.
func TestDatabaseOutage(t *testing.T) {
	const (
		outage = 20 * time.Second
		pause  = 50 * time.Millisecond // between two rounds of terminations
	)
	e := newEnv(t, 4)
	// The test's own queries go through a pool marked probeApp, which the
	// outage spares; the terminations run on a connection to the
	// maintenance database, not the test database.
	pe := e.withProbePool()
	admin := maintenanceConn(t)
	dbName := dbNameOf(t, e.dbURL)

	b := e.startBridge()
	// 200 hubs × 15 rounds, about 13,000 messages at 400/s: the hubs
	// publish for about 32 s, before, through and after the outage.
	sim := e.simulateAsync("outage", "--hubs", "200", "--clusters", "10", "--generations", "15",
		"--rate", "400", "--seed", "31")
	b.waitReady(time.Minute)
	deadline := time.Now().Add(time.Minute)
	for len(pe.versions()) == 0 {
		if time.Now().After(deadline) {
			t.Fatal("nothing written within a minute of the start")
		}
		time.Sleep(50 * time.Millisecond)
	}
	before, err := b.scrape()
	if err != nil {
		t.Fatal(err)
	}
	w := pe.watchVersions(50 * time.Millisecond)
	ready := b.sampleReadiness(100 * time.Millisecond)

	ctx, cancel := context.WithTimeout(context.Background(), outage+30*time.Second)
	defer cancel()
	start := time.Now()
	terminated, rounds := 0, 0
	for time.Since(start) < outage {
		n, err := terminateBackends(ctx, admin, dbName, probeApp)
		if err != nil {
			t.Fatalf("terminating backends: %v", err)
		}
		terminated += n
		rounds++
		if !b.running() {
			t.Fatalf("the bridge exited during the database outage: %v", b.err)
		}
		time.Sleep(pause)
	}
	outageTook := time.Since(start)
	ready.finish()
	t.Logf("outage: %v, %d rounds of pg_terminate_backend, %d backends terminated", outageTook.Round(time.Millisecond), rounds, terminated)
	t.Logf("/readyz during the outage: %d × 200, %d × not ready, %d unanswered; first not-ready answer: %q",
		ready.ok, ready.notOK, ready.errs, ready.firstBad)
	if ready.exited || !b.running() {
		t.Fatalf("the bridge exited during the database outage: %v", b.err)
	}
	if terminated == 0 {
		t.Fatal("no backend was ever terminated: the outage did not happen")
	}
	if ready.notOK == 0 {
		t.Fatalf("/readyz answered 200 throughout a %v database outage (%d samples)", outageTook, ready.ok)
	}

	recovered := time.Now()
	b.waitReady(time.Minute)
	t.Logf("/readyz 200 again %v after the outage ended", time.Since(recovered).Round(time.Millisecond))

	exp := sim.wait(t, 2*time.Minute)
	pe.waitVerified(exp, 2*time.Minute)
	w.finish(t)
	pe.waitOffsets(pe.highWatermarks(), 30*time.Second)

	after, err := b.scrape()
	if err != nil {
		t.Fatal(err)
	}
	delta := func(name string) float64 {
		a, _ := after.sum(name)
		b, _ := before.sum(name)
		return a - b
	}
	retries := delta("stb_conflation_retries_total")
	t.Logf("during and after the outage: %.0f retries scheduled, %.0f jobs failed transiently, %.0f bundles applied, %.0f dead-lettered",
		retries, after.sumWith("stb_dispatcher_bundles_total", "result", "transient")-before.sumWith("stb_dispatcher_bundles_total", "result", "transient"),
		after.sumWith("stb_dispatcher_bundles_total", "result", "applied")-before.sumWith("stb_dispatcher_bundles_total", "result", "applied"),
		delta("stb_dispatcher_dead_letters_total"))
	if retries == 0 {
		t.Error("no write was retried: the outage never reached the workers")
	}
	if dl, _ := after.sum("stb_dispatcher_dead_letters_total"); dl != 0 {
		t.Errorf("%.0f bundles dead-lettered: a database outage is not the bundles' fault", dl)
	}
	if !b.running() {
		t.Fatalf("the bridge exited after the outage: %v", b.err)
	}
	b.stop(30 * time.Second)
}
