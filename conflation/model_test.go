package conflation

import (
	"context"
	"fmt"
	"maps"
	"math/rand/v2"
	"testing"
	"time"

	"github.com/prometheus/client_golang/prometheus/testutil"

	"github.com/stbridge/stb/pkg/backoff"
	"github.com/stbridge/stb/pkg/bundle"
	"github.com/stbridge/stb/pkg/committer"
)

// The model test drives a Manager with random interleavings of deliveries,
// duplicates, late copies of old messages, worker outcomes (success,
// transient failure), jobs completing out of order across hubs, and bridge
// restarts that replay from the committed offset. A reference database
// applies jobs with the same version fence as the real one and checks on
// every write that a delta lands only on its exact base and that no
// version ever goes backwards. At the end it must hold exactly the state
// each simulated agent last reported.
//
// With an idle timeout (two seeds in three), units that hold nothing are
// evicted as time passes, and a restart restores versions without units:
// every hub's unit comes back from its dormant versions, which must keep
// older bundles out as the unit did.

// modelPayload is what a bundle carries in the model.
type modelPayload struct {
	state  map[string]string // compliance: full state; delta: changes
	events []string          // policyevents
}

// agent generates one hub's valid bundle sequence, as a real hub would.
type agent struct {
	hub            string
	inc, gen       uint64
	mcSent         bool
	cp, compliance bundle.Version
	hasCP, hasComp bool
	state          map[string]string // compliance as the agent knows it
	// p2Gone says policy p2 is no longer on the hub: reports leave it out
	// and deltas never name it, so its rows must go with the next report
	// written, and a delta about it on an older base must never bring
	// them back.
	p2Gone bool
	events map[string]bool
	final  map[string]bundle.Version
}

func newAgent(hub string) *agent {
	return &agent{hub: hub, inc: 1, state: map[string]string{}, events: map[string]bool{}, final: map[string]bundle.Version{}}
}

func (a *agent) next(r *rand.Rand) *bundle.Bundle {
	a.gen++
	ver := bundle.Version{Incarnation: a.inc, Generation: a.gen}
	b := &bundle.Bundle{Hub: a.hub, Version: ver, Size: 1}
	keys := a.keys()
	vals := []string{"compliant", "non_compliant", "unknown"}
	switch k := r.IntN(10); {
	case !a.mcSent || k == 0:
		b.Type, a.mcSent = "managedclusters", true
	case k == 1:
		b.Type = "heartbeat"
	case !a.hasCP || k == 2:
		b.Type, a.cp, a.hasCP = "clusterspolicies", ver, true
	case !a.hasComp || k == 3:
		b.Type, a.compliance, a.hasComp = "compliance", ver, true
		b.Dependency, b.HasDependency = a.cp, true
		if r.IntN(3) == 0 {
			// p2 disappears from the report, or comes back.
			a.p2Gone = !a.p2Gone
			keys = a.keys()
		}
		full := map[string]string{}
		for _, key := range keys {
			full[key] = vals[r.IntN(len(vals))]
		}
		a.state = full
		b.Payload = &modelPayload{state: maps.Clone(full)}
	case k < 8:
		b.Type = "compliancedelta"
		b.Dependency, b.HasDependency = a.compliance, true
		ch := map[string]string{keys[r.IntN(len(keys))]: vals[r.IntN(len(vals))]}
		maps.Copy(a.state, ch)
		b.Payload = &modelPayload{state: ch}
	default:
		b.Type = "policyevents"
		id := fmt.Sprintf("%s/e%d.%d", a.hub, a.inc, a.gen)
		a.events[id] = true
		b.Payload = &modelPayload{events: []string{id}}
	}
	a.final[b.Type] = ver
	return b
}

// keys are the (policy, cluster) pairs placed on the hub.
func (a *agent) keys() []string {
	if a.p2Gone {
		return []string{"p1/c1", "p1/c2"}
	}
	return []string{"p1/c1", "p1/c2", "p2/c1", "p2/c3"}
}

// restart is an agent restart: a new incarnation that resends its bases.
func (a *agent) restart() {
	a.inc++
	a.gen = 0
	a.mcSent, a.hasCP, a.hasComp = false, false, false
}

// refDB is the reference database.
type refDB struct {
	t          *testing.T
	versions   map[string]map[string]bundle.Version
	compliance map[string]map[string]string
	events     map[string]map[string]bool
}

func (d *refDB) apply(job *Job) {
	hub := job.Unit.Hub
	if d.versions[hub] == nil {
		d.versions[hub] = map[string]bundle.Version{}
		d.compliance[hub] = map[string]string{}
		d.events[hub] = map[string]bool{}
	}
	last := job.Last().Version
	if cur, ok := d.versions[hub][job.Type]; ok && !last.Newer(cur) {
		return // fenced: the database already holds as new
	}
	switch job.Type {
	case "compliance":
		d.compliance[hub] = maps.Clone(job.Last().Payload.(*modelPayload).state)
	case "compliancedelta":
		for _, b := range job.Bundles {
			if base := d.versions[hub]["compliance"]; base != b.Dependency {
				d.t.Fatalf("%s: delta %v on base %v written over compliance %v", hub, b.Version, b.Dependency, base)
			}
			maps.Copy(d.compliance[hub], b.Payload.(*modelPayload).state)
		}
	case "policyevents":
		for _, b := range job.Bundles {
			for _, e := range b.Payload.(*modelPayload).events {
				d.events[hub][e] = true
			}
		}
	}
	d.versions[hub][job.Type] = last
}

func TestModelRandomInterleavings(t *testing.T) {
	seeds := 3000
	if testing.Short() {
		seeds = 300
	}
	var evictions, revivals int
	for seed := 0; seed < seeds; seed++ {
		e, rv := runModel(t, uint64(seed))
		if t.Failed() {
			t.Fatalf("seed %d failed", seed)
		}
		evictions += e
		revivals += rv
	}
	// The seeds must exercise eviction, and hubs that send again after it.
	if evictions == 0 || revivals == 0 {
		t.Fatalf("%d evictions and %d units revived from dormant versions over %d seeds; the model does not exercise eviction", evictions, revivals, seeds)
	}
	t.Logf("%d seeds: %d evictions, %d units revived from dormant versions", seeds, evictions, revivals)
}

func runModel(t *testing.T, seed uint64) (evictions, revivals int) {
	r := rand.New(rand.NewPCG(seed, 0x5eed))
	idle := time.Duration(r.IntN(3)) * 10 * time.Millisecond
	hubs := 1 + r.IntN(3)
	agents := make([]*agent, hubs)
	for i := range agents {
		agents[i] = newAgent(fmt.Sprintf("hub%d", i))
	}
	// The Kafka log: every hub's bundles in order, interleaved, with
	// duplicates and late copies of older messages mixed in.
	var log []*bundle.Bundle
	for n := 20 + r.IntN(60); n > 0; n-- {
		switch a := agents[r.IntN(hubs)]; {
		case r.IntN(25) == 0:
			a.restart()
		case r.IntN(8) == 0 && len(log) > 0:
			old := *log[r.IntN(len(log))]
			log = append(log, &old)
		default:
			log = append(log, a.next(r))
		}
	}

	db := &refDB{t: t, versions: map[string]map[string]bundle.Version{}, compliance: map[string]map[string]string{}, events: map[string]map[string]bool{}}
	clock := &fakeClock{now: time.Unix(1_700_000_000, 0)}
	var (
		m         *Manager
		part      *committer.Partition
		inflight  []*Job
		committed int64
		next      int64
	)
	c, err := committer.New(committer.Config{Interval: time.Second}, committer.Deps{Store: nopStore{}})
	if err != nil {
		t.Fatal(err)
	}
	start := func() { // a (re)started bridge
		var err error
		if m != nil {
			evictions += int(testutil.ToFloat64(m.metrics.evicted))
		}
		m, err = NewManager(Config{Types: policyTypes, Now: clock.Now, IdleTimeout: idle, Backoff: backoff.Exponential{Min: time.Millisecond, Max: 10 * time.Millisecond}})
		if err != nil {
			t.Fatal(err)
		}
		for hub, vs := range db.versions {
			for typ, ver := range vs {
				m.Restore(hub, typ, ver)
			}
		}
		part = c.Assign("status", 0, committed)
		next, inflight = committed, nil
	}
	start()
	finish := func(j *Job, fail bool) {
		if fail {
			m.Report(j, Transient)
			return
		}
		db.apply(j)
		m.Report(j, Applied)
	}
	prevVersions := map[string]bundle.Version{}
	checkMonotonic := func() {
		for hub, vs := range db.versions {
			for typ, ver := range vs {
				k := hub + "/" + typ
				if prev, ok := prevVersions[k]; ok && prev.Newer(ver) {
					t.Fatalf("seed %d: %s went back from %v to %v", seed, k, prev, ver)
				}
				prevVersions[k] = ver
			}
		}
	}
	for steps := 0; ; steps++ {
		if steps > 100000 {
			t.Fatalf("seed %d: no progress", seed)
		}
		draining := next == int64(len(log))
		switch k := r.IntN(10); {
		case k < 4 && !draining:
			b := *log[next] // each delivery is a fresh copy, as a re-read would be
			b.Origin = bundle.Origin{Topic: "status", Offset: next}
			part.Read(next)
			b.Track(part)
			next++
			if _, live := m.Lookup(b.Hub); !live && m.IsDormant(b.Hub) {
				revivals++
			}
			m.Insert(&b)
		case k < 7:
			if u := m.queue.tryPop(); u != nil {
				if j, err := u.Next(); err == nil {
					if _, err := u.Next(); err == nil {
						t.Fatalf("seed %d: a second job from busy unit %s", seed, u.Hub)
					}
					inflight = append(inflight, j)
				}
			}
		case k < 9 && len(inflight) > 0:
			i := r.IntN(len(inflight))
			j := inflight[i]
			inflight = append(inflight[:i], inflight[i+1:]...)
			finish(j, !draining && r.IntN(5) == 0)
		case k == 9 && r.IntN(4) == 0:
			if pos, ok := part.Position(); ok {
				committed = pos
			}
			if !draining && r.IntN(6) == 0 {
				// Crash: some in-flight transactions committed, the rest
				// did not; nothing after the committed offset survives.
				for _, j := range inflight {
					if r.IntN(2) == 0 {
						db.apply(j)
					}
				}
				start()
			}
		case k == 9 && r.IntN(3) == 0 && !draining:
			// Handover (docs/design.md, Scaling out): on revocation this bridge commits
			// a last time (behind everything it holds), drops what no
			// worker has taken, and waits for what is in flight. Another
			// replica resumes at the committed position, writes what it
			// can of the next messages, commits and gives the partition
			// back; this bridge then refreshes its units from the
			// database, as it does on every assignment, and reads on from
			// the committed position.
			if pos, ok := part.Position(); ok {
				committed = pos
			}
			end := m.DropPartition("status", 0)
			for _, j := range inflight {
				// A write may fail while the revocation waits: what it
				// hands back is dropped too.
				finish(j, r.IntN(4) == 0)
			}
			inflight = nil
			select {
			case <-part.Idle(): // what the reader waits for
			default:
				t.Fatalf("seed %d: partition not idle after its in-flight jobs finished: %d outstanding", seed, part.Outstanding())
			}
			end()
			upto := committed + int64(r.IntN(int(int64(len(log))-committed)+1))
			committed = otherReplica(t, seed, log, db, clock, committed, upto)
			for hub, vs := range db.versions {
				for typ, ver := range vs {
					m.Restore(hub, typ, ver)
				}
			}
			part = c.Assign("status", 0, committed)
			next = committed
		default:
			clock.Advance(5 * time.Millisecond)
			m.WakeAll()
		}
		checkMonotonic()
		if draining && len(inflight) == 0 && m.queue.Len() == 0 && m.HeldBytes() == 0 {
			break
		}
	}

	for _, a := range agents {
		for typ, want := range a.final {
			if typ == "compliancedelta" {
				continue // a later compliance supersedes deltas; the state check covers them
			}
			if got := db.versions[a.hub][typ]; got != want {
				t.Fatalf("seed %d: %s %s at %v, agent last sent %v", seed, a.hub, typ, got, want)
			}
		}
		if a.final["compliance"] != (bundle.Version{}) && !maps.Equal(db.compliance[a.hub], a.state) {
			t.Fatalf("seed %d: %s compliance %v, agent state %v", seed, a.hub, db.compliance[a.hub], a.state)
		}
		if !maps.Equal(db.events[a.hub], a.events) && len(a.events) > 0 {
			t.Fatalf("seed %d: %s events %v, agent sent %v", seed, a.hub, db.events[a.hub], a.events)
		}
	}
	if pos, _ := part.Position(); pos != int64(len(log)) {
		t.Fatalf("seed %d: committed position %d after draining, want %d", seed, pos, len(log))
	}
	checkSettled(t, m)
	return evictions + int(testutil.ToFloat64(m.metrics.evicted)), revivals
}

// otherReplica is a second bridge that holds the partition for a while: it
// starts from the database's versions, reads the log from from to upto,
// writes every job that becomes ready, and returns the position it commits
// when the partition is taken from it (behind what it still holds).
func otherReplica(t *testing.T, seed uint64, log []*bundle.Bundle, db *refDB, clock *fakeClock, from, upto int64) int64 {
	t.Helper()
	m, err := NewManager(Config{Types: policyTypes, Now: clock.Now})
	if err != nil {
		t.Fatal(err)
	}
	for hub, vs := range db.versions {
		for typ, ver := range vs {
			m.Restore(hub, typ, ver)
		}
	}
	c, err := committer.New(committer.Config{Interval: time.Second}, committer.Deps{Store: nopStore{}})
	if err != nil {
		t.Fatal(err)
	}
	part := c.Assign("status", 0, from)
	for off := from; off < upto; off++ {
		b := *log[off]
		b.Origin = bundle.Origin{Topic: "status", Offset: off}
		part.Read(off)
		b.Track(part)
		m.Insert(&b)
	}
	for steps := 0; ; steps++ {
		if steps > 100000 {
			t.Fatalf("seed %d: the other replica made no progress", seed)
		}
		u := m.queue.tryPop()
		if u == nil {
			break
		}
		if j, err := u.Next(); err == nil {
			db.apply(j)
			m.Report(j, Applied)
		}
	}
	if pos, ok := part.Position(); ok {
		return pos
	}
	return from
}

type nopStore struct{}

func (nopStore) Save(context.Context, []committer.Position) error { return nil }
