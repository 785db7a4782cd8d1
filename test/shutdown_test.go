package test

import (
	"context"
	"regexp"
	"strconv"
	"strings"
	"syscall"
	"testing"
	"time"
)

// TestSIGTERMWhileBlockedInDatabase: a test transaction holds a lock that
// every managedclusters write waits for; SIGTERM while workers wait on it.
// The process must exit within --shutdown-timeout plus a small margin
// (the old shutdown waited for the jobs, up to --job-timeout), with stored
// offsets behind every message it did not write, and a restart must reach
// the expected state.
func TestSIGTERMWhileBlockedInDatabase(t *testing.T) {
	e := newEnv(t, 2)
	exp := e.simulate("backlog", "--hubs", "30", "--clusters", "5", "--generations", "3", "--seed", "8")
	recs := e.readTopic(e.messages(exp))
	ctx := context.Background()

	lock, err := e.pool.Begin(ctx)
	if err != nil {
		t.Fatal(err)
	}
	defer func() { _ = lock.Rollback(ctx) }()
	if _, err := lock.Exec(ctx, `LOCK TABLE stb.managed_clusters IN EXCLUSIVE MODE`); err != nil {
		t.Fatal(err)
	}
	const shutdownTimeout, margin = 2 * time.Second, 4 * time.Second
	b := e.startBridge("--shutdown-timeout", shutdownTimeout.String(), "--job-timeout", "5m", "--db-pool-size", "4")
	deadline := time.Now().Add(time.Minute)
	for waiting := 0; waiting == 0; {
		if err := e.pool.QueryRow(ctx, `SELECT count(*) FROM pg_stat_activity
			WHERE datname = current_database() AND wait_event_type = 'Lock'`).Scan(&waiting); err != nil {
			t.Fatal(err)
		}
		if time.Now().After(deadline) {
			t.Fatal("no write blocked on the lock within a minute")
		}
		time.Sleep(20 * time.Millisecond)
	}
	// Let the committer store a position behind the blocked jobs: wait
	// until, for every partition, status.transport holds the position the
	// committer would store next (stb_committer_committed_offset equal to
	// stb_committer_position_offset). The position is the lowest offset
	// not yet done, and the blocked jobs cannot be done while the lock is
	// held, so what is stored then is at or behind them; without it the
	// checks below would have no stored offset to look at.
	e.waitFor("the committer to store the position of every partition", time.Minute, func() bool {
		s, err := b.scrape()
		if err != nil {
			return false
		}
		committed := committerOffsets(s, "stb_committer_committed_offset")
		position := committerOffsets(s, "stb_committer_position_offset")
		return len(position) == 2 && equalOffsets(committed, position) && equalOffsets(e.offsets(), position)
	})
	t.Logf("stored offsets %v with writes blocked", e.offsets())

	b.sigtermWithin(shutdownTimeout, margin, "")
	if b.err != nil {
		t.Fatalf("exit status %v, want 0", b.err)
	}

	stored := e.offsets()
	end := endOffsets(recs)
	behind := 0
	for p, off := range stored {
		if off < end[p] {
			behind++
		}
	}
	if behind == 0 {
		t.Fatalf("stored offsets %v reach the end %v although writes were blocked", stored, end)
	}
	checkNothingLostBelow(t, recs, stored, e.versions())
	t.Logf("stored offsets %v of %v", stored, end)

	if err := lock.Rollback(ctx); err != nil {
		t.Fatal(err)
	}
	b2 := e.startBridge()
	e.waitVerified(exp, 2*time.Minute)
	b2.stop(30 * time.Second)
}

// TestSIGTERMWithTheBrokerGone: Kafka went away (a broker restart, a
// network cut) and the pod is stopped meanwhile. Leaving the consumer
// group cannot finish then, and the process must still exit within
// --shutdown-timeout plus the close grace: it used to wait for the
// consumer's close a second time, in the command's deferred Close, after
// Run had given up on it (45 s for a 30 s timeout, here without bound).
func TestSIGTERMWithTheBrokerGone(t *testing.T) {
	e := newEnv(t, 2)
	exp := e.simulate("small", "--hubs", "5", "--clusters", "2", "--generations", "2")
	const shutdownTimeout, margin = 2 * time.Second, 6 * time.Second // margin: the 2 s close grace and the exit
	b := e.startBridge("--shutdown-timeout", shutdownTimeout.String())
	e.waitVerified(exp, time.Minute)
	s, err := b.scrape()
	if err != nil {
		t.Fatal(err)
	}
	errorsBefore, _ := s.sum("stb_transport_kafka_errors_total")
	e.broker.Close()
	// The consumer notices its broker is gone: librdkafka reports the lost
	// connection (and then that all brokers are down) as errors, which the
	// reader counts.
	e.waitFor("the reader to count a Kafka error after the broker closed", time.Minute, func() bool {
		s, err := b.scrape()
		n, _ := s.sum("stb_transport_kafka_errors_total")
		return err == nil && n > errorsBefore
	})

	b.sigtermWithin(shutdownTimeout, margin, "the broker gone")
}

// sigtermWithin sends SIGTERM and fails the test unless the bridge exits
// within its shutdown timeout plus margin; when says what else is going
// on, for the messages.
func (b *bridge) sigtermWithin(shutdownTimeout, margin time.Duration, when string) {
	b.t.Helper()
	if when != "" {
		when = ", " + when
	}
	start := time.Now()
	if err := b.cmd.Process.Signal(syscall.SIGTERM); err != nil {
		b.t.Fatal(err)
	}
	select {
	case <-b.done:
	case <-time.After(shutdownTimeout + margin):
		b.t.Fatalf("still running %v after SIGTERM with --shutdown-timeout %v%s", shutdownTimeout+margin, shutdownTimeout, when)
	}
	b.t.Logf("exited %v after SIGTERM (--shutdown-timeout %v%s): %v", time.Since(start).Round(time.Millisecond), shutdownTimeout, when, b.err)
}

// committerOffsets returns the series of one of the committer's
// per-partition gauges (stb_committer_committed_offset,
// stb_committer_position_offset) by partition.
func committerOffsets(s metricSamples, name string) map[int32]int64 {
	out := map[int32]int64{}
	for series, v := range s {
		n, labels, ok := strings.Cut(series, "{")
		if !ok || n != name {
			continue
		}
		m := partitionLabelRE.FindStringSubmatch(labels)
		if m == nil {
			continue
		}
		p, err := strconv.ParseInt(m[1], 10, 32)
		if err != nil {
			continue
		}
		out[int32(p)] = int64(v)
	}
	return out
}

var partitionLabelRE = regexp.MustCompile(`(?:^|,)partition="([0-9]+)"`)
