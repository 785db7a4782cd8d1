package test

import (
	"context"
	"fmt"
	"strings"
	"testing"
	"time"

	"github.com/jackc/pgx/v5"
	"github.com/twmb/franz-go/pkg/kgo"
)

// TestRejectsDuringOutageKeepPolling: malformed messages arrive while the
// database is down for longer than max.poll.interval.ms. The reader used
// to dead-letter each reject on its decoding goroutine, retrying until the
// database came back, so polling stopped; librdkafka then logged "Maximum
// application poll interval (max.poll.interval.ms) exceeded", the member
// left its group and rejoined, and the rejects were read and stored again
// (6 dead letters for 3 messages). Now rejects wait in the dead-letter
// queue and polling goes on: no rejoin, each reject stored exactly once,
// the valid traffic verified.
func TestRejectsDuringOutageKeepPolling(t *testing.T) {
	const (
		pollInterval = 7 * time.Second // librdkafka wants it ≥ session.timeout.ms
		outage       = 12 * time.Second
		rejects      = 3
	)
	e := newEnv(t, 2)
	pe := e.withProbePool()
	admin := maintenanceConn(t)
	dbName := dbNameOf(t, e.dbURL)

	b := e.startBridge("--kafka-property", fmt.Sprintf("max.poll.interval.ms=%d", pollInterval.Milliseconds()),
		"--kafka-property", "session.timeout.ms=6000")
	b.waitReady(time.Minute) // partitions assigned, database reachable
	before, err := b.scrape()
	if err != nil {
		t.Fatal(err)
	}

	ctx, cancel := context.WithTimeout(context.Background(), outage+time.Minute)
	defer cancel()
	// A real outage: no new connection is accepted, and the bridge's are
	// ended (the test's own probe pool stays connected).
	ident := pgx.Identifier{dbName}.Sanitize()
	if _, err := admin.Exec(ctx, "ALTER DATABASE "+ident+" ALLOW_CONNECTIONS false"); err != nil {
		t.Fatal(err)
	}
	allow := func() {
		if _, err := admin.Exec(context.Background(), "ALTER DATABASE "+ident+" ALLOW_CONNECTIONS true"); err != nil {
			t.Fatal(err)
		}
	}
	defer allow()
	stopOutage := make(chan struct{})
	outageDone := make(chan int)
	go func() {
		terminated := 0
		for {
			select {
			case <-stopOutage:
				outageDone <- terminated
				return
			default:
			}
			n, err := terminateBackends(ctx, admin, dbName, probeApp)
			if err != nil {
				t.Errorf("terminating backends: %v", err)
			}
			terminated += n
			time.Sleep(20 * time.Millisecond)
		}
	}()
	time.Sleep(500 * time.Millisecond)

	// During the outage: malformed messages, then more valid traffic
	// behind them on the same partitions: more than the reader's decode
	// queue holds (256), so that a reader whose decoding goroutine waits
	// on the database stops polling.
	cl := e.producer()
	for i := range rejects {
		rec := &kgo.Record{Key: []byte(fmt.Sprintf("hub-%03d", i)), Value: []byte("this is not a CloudEvent")}
		if err := cl.ProduceSync(ctx, rec).FirstErr(); err != nil {
			t.Fatal(err)
		}
	}
	valid := e.simulate("during", "--hubs", "50", "--clusters", "3", "--generations", "10", "--seed", "42")
	time.Sleep(outage)
	close(stopOutage)
	terminated := <-outageDone
	allow()
	if terminated == 0 {
		t.Fatal("no backend was terminated: the outage did not happen")
	}
	if !b.running() {
		t.Fatalf("the bridge exited during the outage: %v", b.err)
	}

	pe.waitVerified(valid, 2*time.Minute)
	pe.waitOffsets(pe.highWatermarks(), time.Minute)
	var rows, distinct int
	if err := pe.pool.QueryRow(context.Background(), `SELECT count(*), count(DISTINCT (topic, "partition", "offset"))
		FROM stb.dead_letters WHERE reason = 'not_cloudevent'`).Scan(&rows, &distinct); err != nil {
		t.Fatal(err)
	}
	after, err := b.scrape()
	if err != nil {
		t.Fatal(err)
	}
	rejoins := after.sumWith("stb_transport_assignments_total", "start", "stored") + after.sumWith("stb_transport_assignments_total", "start", "reset") -
		before.sumWith("stb_transport_assignments_total", "start", "stored") - before.sumWith("stb_transport_assignments_total", "start", "reset")
	t.Logf("outage %v: %d backends terminated; %d dead letters for %d rejects; %.0f partition assignments after the first", outage, terminated, rows, rejects, rejoins)
	if log := b.log.String(); strings.Contains(log, "Maximum application poll interval") || strings.Contains(log, "MAX_POLL_EXCEEDED") {
		t.Errorf("the consumer exceeded max.poll.interval.ms during the outage:\n%s", tail(log, 20))
	}
	if rejoins != 0 {
		t.Errorf("%.0f partitions were assigned again during the outage: the member left its group", rejoins)
	}
	if rows != rejects || distinct != rejects {
		t.Errorf("%d dead letters (%d distinct origins) for %d rejects, want exactly one each", rows, distinct, rejects)
	}
	b.stop(30 * time.Second)
}
