package bench

import (
	"fmt"
	"slices"
	"strings"
	"testing"

	"github.com/stbridge/stb/dbsyncers"
	"github.com/stbridge/stb/pkg/bundle"
)

// TestFinalState: the final state of a backlog is what a perfectly
// conflating bridge writes: per hub, in the types' priority order, the
// newest bundle of each complete type, the deltas on the base that is
// written, and every stream bundle; what the bridge would drop as stale
// is dropped. Bundles are "hub type generation [dependency]".
func TestFinalState(t *testing.T) {
	for name, tc := range map[string]struct {
		backlog []string
		// want is each hub's jobs, first-seen hub first: a job's type and
		// generations.
		want    []string
		bundles int
	}{
		"complete: the newest": {[]string{"h heartbeat 1", "h heartbeat 3", "h heartbeat 2"},
			[]string{"h: heartbeat 3"}, 1},
		"complete: an equal version is stale": {[]string{"h managedclusters 2", "h managedclusters 2"},
			[]string{"h: managedclusters 2"}, 1},
		"stream: every one, stale ones dropped": {[]string{"h policyevents 1", "h policyevents 2", "h policyevents 2", "h policyevents 1", "h policyevents 3"},
			[]string{"h: policyevents 1 2 3"}, 3},
		"deltas on the last base": {[]string{"h compliance 5", "h compliancedelta 6 5", "h compliancedelta 7 5"},
			[]string{"h: compliance 5 | compliancedelta 6 7"}, 3},
		"a newer base drops the older deltas": {[]string{"h compliance 5", "h compliancedelta 6 5", "h compliance 8", "h compliancedelta 9 8"},
			[]string{"h: compliance 8 | compliancedelta 9"}, 2},
		"a base that came after its deltas": {[]string{"h compliance 5", "h compliancedelta 6 5", "h compliance 8"},
			[]string{"h: compliance 8"}, 1},
		"priority order, not arrival order": {[]string{"h policyevents 1", "h compliance 2", "h heartbeat 1", "h managedclusters 1"},
			[]string{"h: heartbeat 1 | managedclusters 1 | compliance 2 | policyevents 1"}, 4},
		"a type not registered is not written": {[]string{"h poison 1", "g heartbeat 1"},
			[]string{"g: heartbeat 1"}, 1},
		"hubs in the order first seen, apart": {[]string{"b heartbeat 1", "a heartbeat 1", "b heartbeat 2"},
			[]string{"b: heartbeat 2", "a: heartbeat 1"}, 2},
	} {
		t.Run(name, func(t *testing.T) {
			st := newFinalState(dbsyncers.Default())
			for _, line := range tc.backlog {
				st.add(parseBundle(t, line))
			}
			var got []string
			for _, hub := range st.order {
				var jobs []string
				for _, job := range st.jobs(hub) {
					gens := []string{job[0].Type}
					for _, b := range job {
						if b.Hub != hub || b.Type != job[0].Type {
							t.Errorf("job %v of hub %s mixes hubs or types", job, hub)
						}
						gens = append(gens, fmt.Sprint(b.Version.Generation))
					}
					jobs = append(jobs, strings.Join(gens, " "))
				}
				got = append(got, hub+": "+strings.Join(jobs, " | "))
			}
			if !slices.Equal(got, tc.want) {
				t.Errorf("final state %q, want %q", got, tc.want)
			}
			if n := st.bundles(); n != tc.bundles {
				t.Errorf("%d bundles, want %d", n, tc.bundles)
			}
			if jobs := st.jobs("no such hub"); jobs != nil {
				t.Errorf("jobs of a hub never seen: %v", jobs)
			}
		})
	}
}

// parseBundle makes a bundle of "hub type generation [dependency]", at
// incarnation 1.
func parseBundle(t *testing.T, s string) *bundle.Bundle {
	t.Helper()
	var hub, typ string
	var gen, dep uint64
	n, _ := fmt.Sscan(s, &hub, &typ, &gen, &dep)
	if n < 3 {
		t.Fatalf("bundle %q: want hub type generation [dependency]", s)
	}
	b := &bundle.Bundle{Hub: hub, Type: typ, Version: bundle.Version{Incarnation: 1, Generation: gen}}
	if n == 4 {
		b.Dependency, b.HasDependency = bundle.Version{Incarnation: 1, Generation: dep}, true
	}
	return b
}
