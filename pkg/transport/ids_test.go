package transport_test

import (
	"fmt"
	"slices"
	"testing"
	"time"

	"github.com/stbridge/stb/dbsyncers"
	"github.com/stbridge/stb/pkg/bundle"
	"github.com/stbridge/stb/pkg/db"
	"github.com/stbridge/stb/pkg/db/dbtest"
	"github.com/stbridge/stb/pkg/transport"
)

// TestGlobalHubRunIDNotText: a run whose first event's ce_id is no
// PostgreSQL text (invalid UTF-8, a NUL byte) is written like any other.
// Every bundle of a run carries its first event's id, which the fence
// keeps in stb.bundle_versions.run_ids, a text[]: the agent's run start
// with such an id, then 3 valid events, were all 4 dead-lettered
// data_exception ("version fence: invalid byte sequence for encoding
// UTF8", SQLSTATE 22021), and nothing of that hub and type was written
// until the agent restarted (issue 34, item 9). Both with a run before it
// and as the hub's first run; the id is kept in an escaped form, the same
// in memory and in run_ids, so that a bridge started again still knows the
// run and a late copy of its first event.
func TestGlobalHubRunIDNotText(t *testing.T) {
	pool, _ := dbtest.New(t)
	reg, err := dbsyncers.ForProfiles(true, true)
	if err != nil {
		t.Fatal(err)
	}
	rules := ghRules(t)
	const typ = "managedhub.heartbeat"
	for _, tc := range []struct {
		name, id string
		before   int // events of a run before the one with the bad id
	}{
		{"nul", "run\x00start", 0},
		{"invalid-utf8", "run\xff\xfestart", 0},
		{"nul-after-a-run", "\x00", 6},
		{"invalid-utf8-after-a-run", "\xc3\x28", 6},
	} {
		t.Run(tc.name, func(t *testing.T) {
			hub := "hub-id-" + tc.name
			topic := transport.GlobalHubTopicPrefix + hub
			gh := transport.NewGlobalHub()
			offset := int64(0)
			// write reads one event and writes its bundle as a worker
			// does, and says whether it was applied.
			write := func(id, version string) bool {
				t.Helper()
				e := ghEvent(topic, hub, typ)
				e.Version = version
				m := ghEncode(t, e)
				setHeader(m, "ce_id", id) // the library would refuse some
				m = consumed(m, 0, offset)
				offset++
				b, rej := gh.Decode(m, rules, time.Now())
				if rej != nil {
					t.Fatalf("event %q at %s rejected: %s: %v", id, version, rej.Reason, rej.Err)
				}
				if err := reg.DecodeBundle(b); err != nil {
					t.Fatal(err)
				}
				applied, err := reg.Write(t.Context(), pool, [][]*bundle.Bundle{{b}})
				if err != nil {
					t.Errorf("event %q at %s (run id %q): %v", id, version, b.RunID, err)
					return false
				}
				return applied[0]
			}
			for i := range tc.before {
				if !write(fmt.Sprintf("old-%d", i), fmt.Sprintf("%d.%d", i, i)) {
					t.Fatalf("event %d of the run before not applied", i)
				}
			}
			if !write(tc.id, "0.0") {
				t.Errorf("the run's first event, id %q, not applied", tc.id)
			}
			for i := 1; i <= 3; i++ {
				if !write(fmt.Sprintf("new-%d", i), fmt.Sprintf("%d.%d", i, i)) {
					t.Errorf("valid event %d of the run not applied", i)
				}
			}
			if t.Failed() {
				return
			}

			// A late copy of the first event is a copy, not a new run: it
			// maps to no version (stale).
			copyOf := func(gh *transport.GlobalHub) bundle.Version {
				t.Helper()
				e := ghEvent(topic, hub, typ)
				e.Version = "0.0"
				m := ghEncode(t, e)
				setHeader(m, "ce_id", tc.id)
				b, rej := gh.Decode(consumed(m, 0, offset), rules, time.Now())
				offset++
				if rej != nil {
					t.Fatalf("late copy rejected: %v", rej)
				}
				return b.Version
			}
			if v := copyOf(gh); v != (bundle.Version{}) {
				t.Fatalf("a late copy of the run's first event mapped to %v, want stale", v)
			}
			// So it is for a bridge started again from what is stored.
			all, err := db.LoadVersions(t.Context(), pool)
			if err != nil {
				t.Fatal(err)
			}
			var stored []db.StoredVersion
			for _, v := range all {
				if v.Hub == hub {
					stored = append(stored, v)
				}
			}
			if len(stored) != 1 {
				t.Fatalf("stored versions %+v, want one", stored)
			}
			v := stored[0]
			restarted := transport.NewGlobalHub()
			restarted.Restore(v.Hub, v.Type, v.Version, v.Origin, v.FamilyState)
			runIDs, _ := transport.DecodeGlobalHubState(v.FamilyState)
			if v := copyOf(restarted); v != (bundle.Version{}) {
				t.Fatalf("late copy of the first event after a restart mapped to %v (run ids stored %q), want stale", v, runIDs)
			}
			if want := transport.StorableRunID(tc.id); !slices.Contains(runIDs, want) {
				t.Fatalf("run ids stored %q, want %q among them", runIDs, want)
			}
		})
	}
}
