package test

import (
	"math/rand/v2"
	"testing"
	"time"
)

// crashSnapshot is the database as a SIGKILLed bridge left it.
type crashSnapshot struct {
	kill     int
	offsets  map[int32]int64
	versions map[string][2]uint64
}

// TestCrashLoop kills the bridge with SIGKILL at random moments while hubs
// publish, restarting it each time. After every kill, with no bridge
// running, the stored offsets must lie inside the log and never have moved
// back, and nothing below them may be lost (each message there is in the
// database or superseded by one still to be read); throughout, no
// bundle_versions row may go down; in the end one more bridge must bring
// the database to the hubs' final state and commit the end of every
// partition.
func TestCrashLoop(t *testing.T) {
	const (
		minKills     = 12
		maxKills     = 30
		minProgress  = 4 // killed runs whose stored offsets moved
		minDelay     = 300 * time.Millisecond
		maxDelay     = 2 * time.Second
		finalTimeout = 2 * time.Minute
	)
	// Static membership: a SIGKILLed consumer never leaves its group, so
	// with a dynamic member id its successor would wait for the dead
	// member's session to time out (45 s by default) before it got any
	// partition, and a kill loop would never see a bridge read anything.
	// With a group.instance.id the restarted bridge takes over the dead
	// one's membership at once, as a restarted pod of a StatefulSet does.
	// The offsets themselves come from status.transport either way.
	static := []string{"--kafka-property", "group.instance.id=stb-crashloop"}

	e := newEnv(t, 4)
	seed := uint64(time.Now().UnixNano())
	rng := rand.New(rand.NewPCG(seed, 0x5eed))
	t.Logf("kill delays drawn with seed %d", seed)

	// 300 hubs × 20 rounds, about 26,000 messages at 1,000/s: the hubs
	// publish for about 26 s, through all or most of the kill loop.
	sim := e.simulateAsync("crashloop", "--hubs", "300", "--clusters", "10",
		"--generations", "20", "--rate", "1000", "--seed", "21")
	w := e.watchVersions(50 * time.Millisecond)

	var (
		snaps       []crashSnapshot
		delays      []time.Duration
		prev        = map[int32]int64{}
		progressed  int
		killsDuring int // kills while the hubs were still publishing
	)
	for kills := 1; kills <= maxKills && (kills <= minKills || progressed < minProgress); kills++ {
		b := e.startBridge(static...)
		delay := minDelay + time.Duration(rng.Int64N(int64(maxDelay-minDelay)))
		if kills%3 != 0 {
			// Two kills in three count their delay from the moment the
			// bridge is ready (assigned, database reachable), so that on
			// a loaded machine, where starting alone can take longer
			// than maxDelay, the loop still kills bridges that read and
			// commit; every third counts it from the start of the
			// process and may kill one still starting.
			b.waitReady(time.Minute)
		}
		time.Sleep(delay)
		if sim.running() {
			killsDuring++
		}
		b.kill()
		delays = append(delays, delay.Round(time.Millisecond))
		s := crashSnapshot{kill: kills, offsets: e.offsets(), versions: e.versions()}
		snaps = append(snaps, s)
		moved := false
		for p, off := range s.offsets {
			if off < prev[p] {
				t.Errorf("after kill %d: partition %d stored offset went back from %d to %d", kills, p, prev[p], off)
			}
			if off > prev[p] {
				moved = true
			}
			prev[p] = off
		}
		if moved {
			progressed++
		}
	}
	t.Logf("%d SIGKILLs (%d while hubs published) after %v; stored offsets moved in %d of the killed runs",
		len(snaps), killsDuring, delays, progressed)
	// A loop in which the bridges never committed anything would check
	// nothing below.
	if progressed < minProgress {
		t.Fatalf("stored offsets moved in only %d of %d killed runs; the loop did not exercise recovery", progressed, len(snaps))
	}

	exp := sim.wait(t, 2*time.Minute)
	final := e.startBridge(static...)
	e.waitVerified(exp, finalTimeout)
	w.finish(t)

	end := e.highWatermarks()
	e.waitOffsets(end, 30*time.Second)
	final.stop(30 * time.Second)

	// Nothing below a stored offset may be lost: a restart reads only
	// from the stored offsets on. So for every message below them, when
	// the bridge died the database held its version or a newer one
	// (written, or replaced by a newer bundle that was) — or, for a
	// complete bundle, a newer bundle of its hub and type lay at or after
	// the stored offset, to be read again: a bundle conflated away no
	// longer pins the offset, its replacement does, even while the
	// replacement waits for a dependency. Events (policyevents) are never
	// conflated, so each must have been written. Deltas are left out: a
	// newer compliance base legitimately drops the older base's deltas.
	recs := e.readTopic(recordCount(end))
	checked := 0
	for _, s := range snaps {
		for p, off := range s.offsets {
			if off < 0 || off > end[p] {
				t.Errorf("after kill %d: partition %d stored offset %d outside [0, %d]", s.kill, p, off, end[p])
			}
		}
		// The newest version of each hub and type still to be read.
		pending := map[string][2]uint64{}
		for _, r := range recs {
			k := r.hub + "/" + r.typ
			if r.offset >= s.offsets[r.partition] && older(pending[k], r.version) {
				pending[k] = r.version
			}
		}
		for _, r := range recs {
			if r.offset >= s.offsets[r.partition] || r.typ == "compliancedelta" {
				continue
			}
			checked++
			k := r.hub + "/" + r.typ
			got := s.versions[k]
			switch {
			case !older(got, r.version):
			case r.typ != "policyevents" && older(r.version, pending[k]):
			default:
				t.Fatalf("after kill %d: offset %d of partition %d (%s %s %d.%d) was committed, but the database held %d.%d and no newer %s of the hub was left to read",
					s.kill, r.offset, r.partition, r.hub, r.typ, r.version[0], r.version[1], got[0], got[1], r.typ)
			}
		}
	}
	t.Logf("%d (message, kill) pairs below a stored offset checked against the database; final offsets %v (%d messages)",
		checked, end, len(recs))
}
