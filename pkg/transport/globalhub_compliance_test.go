package transport_test

import (
	"fmt"
	"testing"
	"time"

	"github.com/confluentinc/confluent-kafka-go/v2/kafka"

	"github.com/stbridge/stb/dbsyncers"
	"github.com/stbridge/stb/pkg/bundle"
	"github.com/stbridge/stb/pkg/transport"
)

// The global-hub profile's complete compliance runs: which compliance
// run each belongs to, whichever partition is read first.

// TestGlobalHubCompleteComplianceRuns: localcompletecompliance names the
// localcompliance it was computed on by value, in the agent's run
// (agent/pkg/status/syncers/policies/policy_syncer.go: the complete
// emitter's extdependencyversion is the compliance emitter's live version;
// manager/pkg/status/conflator/element_complete.go: ExactMatch compares
// the value). On one shared topic the two types are on different
// partitions, so a complete compliance of a new run can be read before the
// compliance of that run: it must wait for that run's compliance, never
// meet the old run's compliance of the same value, nor be stale.
func TestGlobalHubCompleteComplianceRuns(t *testing.T) {
	gh := transport.NewGlobalHub()
	read := sharedReader(t, gh)
	lc := func(version, id string, offset int64) bundle.Version {
		return read("policy.localcompliance", version, "", id, 0, offset).Version
	}
	cc := func(version, dep, id string, offset int64) *bundle.Bundle {
		return read("policy.localcompletecompliance", version, dep, id, 1, offset)
	}
	lc1 := lc("0.4", "lc-a", 1)
	if c := cc("0.1", "1.4", "cc-a", 100); c.Dependency != lc1 {
		t.Fatalf("complete compliance depends on %v, want the compliance %v", c.Dependency, lc1)
	}
	lc1b := lc("1.6", "lc-b", 2)
	cc("1.2", "2.6", "cc-a2", 101)
	// The agent restarts; its new complete compliance is read first.
	ahead := cc("0.1", "1.4", "cc-b", 102)
	if ahead.Dependency == lc1 || !ahead.Dependency.Newer(lc1b) {
		t.Fatalf("a new run's complete compliance read first depends on %v: want a version of the compliance's next run, newer than %v", ahead.Dependency, lc1b)
	}
	lc2 := lc("0.4", "lc-c", 3)
	if ahead.Dependency != lc2 {
		t.Fatalf("the new run's compliance is %v, the complete compliance waited for %v", lc2, ahead.Dependency)
	}
	// "2.5" names the compliance's second send of the run, "1.5".
	if c := cc("1.2", "2.5", "cc-c", 103); c.Dependency != (bundle.Version{Incarnation: lc2.Incarnation | 1, Generation: 5}) {
		t.Fatalf("a later complete compliance depends on %v, want 1.5 of the run of %v", c.Dependency, lc2)
	}
}

// sharedReader returns a function decoding an event of hub1 on the shared
// topic gh-status, at a partition and offset, through gh.
func sharedReader(t *testing.T, gh *transport.GlobalHub) func(typ, version, dep, id string, partition int32, offset int64) *bundle.Bundle {
	return func(typ, version, dep, id string, partition int32, offset int64) *bundle.Bundle {
		t.Helper()
		e := ghEvent("gh-status", "hub1", typ)
		e.Version, e.ID = version, id
		if dep != "" {
			e.Dependency = dep
		}
		b, rej := gh.Decode(consumed(ghEncode(t, e), partition, offset), ghRules(t), time.Now())
		if rej != nil {
			t.Fatalf("%s %s rejected: %v", typ, version, rej.Err)
		}
		return b
	}
}

// TestGlobalHubCompleteComplianceAfterRestore: on the shared topic, a
// bridge that starts again restores the compliance at a later run than the
// complete compliance, whose partition then replays a run the compliance
// is already past before the current one. The complete compliance of the
// current run must still name the restored compliance run (it used to wait
// for a next run that never came: 9 of 12 hubs in one run of the shared
// backlog test with a restart), and a compliance run starting afterwards
// takes the guess over.
func TestGlobalHubCompleteComplianceAfterRestore(t *testing.T) {
	gh := transport.NewGlobalHub()
	lcAt := bundle.Origin{Topic: "gh-status", Partition: 1, Offset: 100}
	gh.RestoreRuns("hub1", dbsyncers.GHLocalCompliance, bundle.Version{Incarnation: 3 << 32, Generation: 9}, lcAt, []string{"lc-run3"}, nil)
	gh.RestoreRuns("hub1", dbsyncers.GHLocalCompleteCompliance, bundle.Version{Incarnation: 1<<32 | 4, Generation: 5},
		bundle.Origin{Topic: "gh-status", Partition: 2, Offset: 50}, []string{"cc-run1"}, nil)
	read := sharedReader(t, gh)
	read("policy.localcompletecompliance", "0.2", "1.4", "cc-old", 2, 60) // a run the compliance is past
	cur := read("policy.localcompletecompliance", "0.1", "1.9", "cc-cur", 2, 61)
	if want := (bundle.Version{Incarnation: 3 << 32, Generation: 9}); cur.Dependency != want {
		t.Fatalf("the current run's complete compliance depends on %v, want the restored compliance %v", cur.Dependency, want)
	}
	lc4 := read("policy.localcompliance", "0.3", "", "lc-run4", 1, 101)
	if next := read("policy.localcompletecompliance", "1.3", "1.3", "cc-next", 2, 62); next.Dependency != lc4.Version {
		t.Fatalf("after the compliance's next run, the complete compliance depends on %v, want %v", next.Dependency, lc4.Version)
	}
}

// TestGlobalHubCompleteComplianceReadOrder: on the shared topic either
// type's partition can be read whole before the other's (a backlog read
// unevenly). Each complete compliance run belongs to the compliance run of
// its agent run: linked to the compliance's newest run read, every run
// waited for a compliance that had moved on, and 9 of 12 hubs' compliance
// ended wrong in the shared backlog test. Versions as the agent sends
// them: the compliance's first send "0.v", the complete compliance's
// extdependencyversion one generation past it
// (agent/pkg/status/generic/generic_emitter.go PostSend; policy_syncer.go
// shares the compliance's version with the complete one's dependency).
func TestGlobalHubCompleteComplianceReadOrder(t *testing.T) {
	for _, baseFirst := range []bool{true, false} {
		gh := transport.NewGlobalHub()
		read := sharedReader(t, gh)
		var l, c [3]*bundle.Bundle
		lc := func() {
			l[0] = read("policy.localcompliance", "0.5", "", "lc-1", 2, 1)
			l[1] = read("policy.localcompliance", "0.4", "", "lc-2", 2, 2) // the agent restarted
			l[2] = read("policy.localcompliance", "0.5", "", "lc-3", 2, 3) // and again
		}
		if baseFirst {
			lc()
		}
		c[0] = read("policy.localcompletecompliance", "0.3", "1.5", "cc-1", 1, 1)
		c[1] = read("policy.localcompletecompliance", "0.2", "1.4", "cc-2", 1, 2)
		c[2] = read("policy.localcompletecompliance", "0.4", "1.5", "cc-3", 1, 3)
		if !baseFirst {
			lc()
		}
		for i := range c {
			if c[i].Dependency != l[i].Version {
				t.Errorf("base first %v, run %d: the complete compliance depends on %v, its compliance is %v", baseFirst, i+1, c[i].Dependency, l[i].Version)
			}
		}
		if !c[2].Version.Newer(c[1].Version) || !c[1].Version.Newer(c[0].Version) {
			t.Errorf("base first %v: complete compliance runs out of order: %v %v %v", baseFirst, c[0].Version, c[1].Version, c[2].Version)
		}
	}
}

// TestGlobalHubCompleteComplianceRunWithout: an agent run in which every
// cluster complied sends a compliance and no complete compliance
// (complete_compliance_handler.go adds a policy only with a cluster that
// does not comply), so counting the complete compliance's runs falls one
// behind the compliance's. The versions tell: the compliance's generation
// grows by one per send and its value only grows, so a run that sent
// another value at the generation the dependency names is not the complete
// compliance's run, whichever partition was read first.
func TestGlobalHubCompleteComplianceRunWithout(t *testing.T) {
	for _, baseFirst := range []bool{true, false} {
		gh := transport.NewGlobalHub()
		read := sharedReader(t, gh)
		lc := func(version, id string, offset int64) bundle.Version {
			return read("policy.localcompliance", version, "", id, 2, offset).Version
		}
		var l1, l3 bundle.Version
		if baseFirst {
			l1 = lc("0.5", "lc-1", 1)
			lc("0.3", "lc-2", 2) // a run without a complete compliance
			l3 = lc("0.4", "lc-3", 3)
		}
		c1 := read("policy.localcompletecompliance", "0.3", "1.5", "cc-1", 1, 1)
		if !baseFirst {
			l1 = lc("0.5", "lc-1", 1)
			lc("0.3", "lc-2", 2)
		}
		c3 := read("policy.localcompletecompliance", "0.2", "1.4", "cc-3", 1, 2)
		if !baseFirst {
			l3 = lc("0.4", "lc-3", 3)
		}
		c3b := read("policy.localcompletecompliance", "1.3", "1.4", "cc-3b", 1, 3)
		if c1.Dependency != l1 {
			t.Errorf("base first %v: the first run depends on %v, want %v", baseFirst, c1.Dependency, l1)
		}
		// Read first, the second complete compliance run cannot know yet;
		// its next event, read after the compliance's runs, can.
		if baseFirst && c3.Dependency != l3 {
			t.Errorf("base first: the agent's third run's complete compliance depends on %v, want %v", c3.Dependency, l3)
		}
		if c3b.Dependency != l3 || !c3b.Version.Newer(c3.Version) {
			t.Errorf("base first %v: the third run's next complete compliance %v depends on %v, want %v", baseFirst, c3b.Version, c3b.Dependency, l3)
		}
	}
}

// TestGlobalHubCompleteComplianceAfterLateCopy: a late copy of an earlier
// compliance event whose id is no longer remembered (the last 16) is taken
// for an event of the current run, but not for what that run sent: the
// complete compliance naming the run's real event still belongs to it.
// (It was recorded, made the run look as if it had sent another value at
// that generation, and moved the complete compliance to a run that never
// came: the shared-topic bench's positions stopped short of the end.)
func TestGlobalHubCompleteComplianceAfterLateCopy(t *testing.T) {
	gh := transport.NewGlobalHub()
	read := sharedReader(t, gh)
	read("policy.localcompliance", "0.5", "", "lc-0", 2, 1)
	l1 := read("policy.localcompliance", "1.7", "", "lc-1", 2, 2)
	for i := range 16 { // the ids remembered move on
		read("policy.localcompliance", "1.7", "", fmt.Sprintf("lc-dup-%d", i), 2, int64(3+i))
	}
	read("policy.localcompliance", "1.6", "", "lc-earlier-run", 2, 30) // a late copy, its id forgotten
	c := read("policy.localcompletecompliance", "0.2", "2.7", "cc-0", 1, 1)
	if c.Dependency != l1.Version {
		t.Errorf("the complete compliance depends on %v, want the compliance %v", c.Dependency, l1.Version)
	}
}

// TestGlobalHubCompleteComplianceReordered: the agent's producer (acks=1,
// retries=1, no idempotence: upstream pkg/transport/config/
// confluent_config.go) may put a new run's localcompletecompliance ahead
// of that run's localcompliance on one partition: a hub's own topic, or
// the shared topic when both types' keys hash to one partition. Upstream
// holds the complete compliance until the compliance it names has been
// processed (manager/pkg/status/conflator/element_complete.go,
// matchDependency: ExactMatch, its extdependencyversion's value equal to
// the compliance's last processed version's) and then applies it; so must
// the bridge, through its conflation unit (waiting up to
// --dependency-timeout). Numbering runs in the partition's order, it
// filed the complete compliance under the run before (the base's newest
// run was not newer than its own), where its "0.1" is older than what was
// written, and dropped it as stale: that run's complete compliance was
// never applied. The workers write between reads (each read) or only at
// the end (the two orders of conflation).
func TestGlobalHubCompleteComplianceReordered(t *testing.T) {
	rules := ghRules(t)
	reg, err := dbsyncers.ForProfiles(false, true)
	if err != nil {
		t.Fatal(err)
	}
	for _, topic := range []string{"gh-status.hub1", "gh-status"} {
		for _, writeEach := range []bool{true, false} {
			t.Run(fmt.Sprintf("%s/write-each-%v", topic, writeEach), func(t *testing.T) {
				type sent struct{ typ, version, dep, id string }
				lc, cc := "policy.localcompliance", "policy.localcompletecompliance"
				backlog := []sent{
					{lc, "0.4", "", "lc-1"},
					{cc, "0.1", "1.4", "cc-1"},
					{lc, "1.6", "", "lc-2"},
					{cc, "1.2", "2.6", "cc-2"},
					// The agent restarts; its first complete compliance
					// overtakes its first compliance, which it names.
					{cc, "0.1", "1.5", "cc-3"},
					{lc, "0.5", "", "lc-3"},
				}
				var msgs []*kafka.Message
				for i, s := range backlog {
					e := ghEvent(topic, "hub1", s.typ)
					e.Version, e.Dependency, e.ID = s.version, s.dep, s.id
					msgs = append(msgs, consumed(ghEncode(t, e), 0, int64(i)))
				}
				g := newGHModel(t, rules, reg)
				for range msgs {
					g.next(msgs)
					if writeEach {
						g.work(-1)
					}
				}
				g.work(-1)
				reordered, base := g.mapped[4], g.mapped[5]
				if reordered.v == (bundle.Version{}) || !reordered.v.Newer(g.mapped[3].v) {
					t.Errorf("the new run's complete compliance maps to %v, not newer than the run before's %v: dropped as stale", reordered.v, g.mapped[3].v)
				}
				if reordered.dep != base.v {
					t.Errorf("the new run's complete compliance waits for %v; its compliance, read after it, is %v", reordered.dep, base.v)
				}
				if !g.written[4] {
					t.Error("the new run's complete compliance was never written")
				}
				if row := g.db[dbsyncers.GHLocalCompleteCompliance]; row == nil || row.data != 4 {
					t.Errorf("the complete compliance row holds the data of offset %d, want 4", row.dataOffset())
				}
				if row := g.db[dbsyncers.GHLocalCompliance]; row == nil || row.data != 5 {
					t.Errorf("the compliance row holds the data of offset %d, want 5", row.dataOffset())
				}
				for o := range int64(len(msgs)) {
					if !g.done[o] {
						t.Errorf("offset %d was never released", o)
					}
				}
			})
		}
	}
}

// TestGlobalHubCompleteComplianceReorderedRestart: the bridge stopped
// after writing a run's compliance and before writing the complete
// compliance that overtook it (TestGlobalHubCompleteComplianceReordered),
// with the complete compliance's rows two runs behind (the run between
// was replaced before it was written). Started again, it reads from the
// older complete compliance on, before the compliance it restored: the
// first complete compliance of each run between is stale but counted, and
// the one of the compliance's run is numbered in it and applies on the
// compliance the database holds; the next run's first complete
// compliance, which overtakes its compliance again, waits for that one,
// and a late copy of a stale one is a copy. (Numbered by the partition's
// order alone, the first was dropped and the second filed in the
// compliance's restored run.)
func TestGlobalHubCompleteComplianceReorderedRestart(t *testing.T) {
	gh := transport.NewGlobalHub()
	lc4 := bundle.Version{Incarnation: 4 << 32, Generation: 6}
	gh.RestoreRuns("hub1", dbsyncers.GHLocalCompliance, lc4, bundle.Origin{Topic: "gh-status", Partition: 0, Offset: 115}, []string{"lc-2", "lc-3", "lc-4"}, nil)
	gh.RestoreRuns("hub1", dbsyncers.GHLocalCompleteCompliance, bundle.Version{Incarnation: 2 << 32, Generation: 6},
		bundle.Origin{Topic: "gh-status", Partition: 0, Offset: 72}, []string{"cc-2"}, nil)
	read := sharedReader(t, gh)
	cc := func(version, dep, id string, offset int64) *bundle.Bundle {
		return read("policy.localcompletecompliance", version, dep, id, 0, offset)
	}
	if b := cc("0.6", "1.6", "cc-3", 90); b.Version != (bundle.Version{}) {
		t.Errorf("run 3's first complete compliance maps to %v, want stale", b.Version)
	}
	if b := cc("1.7", "1.6", "cc-3b", 97); b.Version != (bundle.Version{}) {
		t.Errorf("run 3's next complete compliance maps to %v, want stale", b.Version)
	}
	first := cc("0.5", "1.6", "cc-4", 114)
	if first.Version != (bundle.Version{Incarnation: 4 << 32, Generation: 5}) || first.Dependency != lc4 {
		t.Errorf("run 4's first complete compliance maps to %v waiting for %v, want 4.0.5 on the restored compliance %v", first.Version, first.Dependency, lc4)
	}
	if b := read("policy.localcompliance", "0.6", "", "lc-4", 0, 115); b.Version != (bundle.Version{}) {
		t.Errorf("the restored compliance read again maps to %v, want stale", b.Version)
	}
	if b := cc("0.6", "1.6", "cc-3", 120); b.Version != (bundle.Version{}) {
		t.Errorf("a late copy of run 3's first complete compliance maps to %v, want stale", b.Version)
	}
	next := cc("0.5", "1.6", "cc-5", 130)
	lc5 := read("policy.localcompliance", "0.6", "", "lc-5", 0, 131)
	if !next.Version.Newer(first.Version) || next.Dependency != lc5.Version || !lc5.Version.Newer(lc4) {
		t.Errorf("run 5's first complete compliance maps to %v waiting for %v; its compliance is %v", next.Version, next.Dependency, lc5.Version)
	}
}
