package conflation

import (
	"slices"
	"testing"

	"github.com/stbridge/stb/pkg/bundle"
)

// step is one action in a dependency scenario.
type step struct {
	insert  string          // bundle type to insert
	ver     bundle.Version  // its version
	dep     *bundle.Version // its dependency version
	restore string          // or: a type whose version is restored
	apply   bool            // or: take the next job, expect want, report Applied
	fail    bool            // or: take the next job, expect want, report Transient
	want    string          // expected job: "type@v1,v2" or "" for no ready unit
}

func job(typ string, vs ...bundle.Version) string {
	s := typ + "@"
	for i, v := range vs {
		if i > 0 {
			s += ","
		}
		s += v.String()
	}
	return s
}

func TestDependencyRules(t *testing.T) {
	cases := []struct {
		name  string
		steps []step
	}{
		{"clusterspolicies waits for managedclusters", []step{
			{insert: "clusterspolicies", ver: v(1, 2)},
			{apply: true, want: ""},
			{insert: "managedclusters", ver: v(1, 3)},
			{apply: true, want: job("managedclusters", v(1, 3))},
			{apply: true, want: job("clusterspolicies", v(1, 2))},
		}},
		{"restored managedclusters counts after a restart", []step{
			{restore: "managedclusters", ver: v(1, 1)},
			{insert: "clusterspolicies", ver: v(1, 2)},
			{apply: true, want: job("clusterspolicies", v(1, 2))},
		}},
		{"compliance before its clusterspolicies", []step{
			{restore: "managedclusters", ver: v(1, 1)},
			{insert: "compliance", ver: v(1, 5), dep: ptr(v(1, 4))},
			{apply: true, want: ""},
			{insert: "clusterspolicies", ver: v(1, 3)},
			{apply: true, want: job("clusterspolicies", v(1, 3))},
			{apply: true, want: ""}, // processed 1.3 < required 1.4
			{insert: "clusterspolicies", ver: v(1, 4)},
			{apply: true, want: job("clusterspolicies", v(1, 4))},
			{apply: true, want: job("compliance", v(1, 5))},
		}},
		{"a delta before its base", []step{
			{restore: "clusterspolicies", ver: v(1, 1)},
			{insert: "compliancedelta", ver: v(1, 3), dep: ptr(v(1, 2))},
			{apply: true, want: ""},
			{insert: "compliance", ver: v(1, 2), dep: ptr(v(1, 1))},
			{insert: "compliancedelta", ver: v(1, 4), dep: ptr(v(1, 2))},
			{apply: true, want: job("compliance", v(1, 2))},
			{apply: true, want: job("compliancedelta", v(1, 3), v(1, 4))},
		}},
		{"a delta on a stale base is dropped", []step{
			{restore: "compliance", ver: v(1, 5)},
			{insert: "compliancedelta", ver: v(1, 6), dep: ptr(v(1, 4))},
			{apply: true, want: ""},
			{insert: "compliancedelta", ver: v(1, 7), dep: ptr(v(1, 5))},
			{apply: true, want: job("compliancedelta", v(1, 7))},
		}},
		{"a new compliance while deltas wait drops them", []step{
			{restore: "clusterspolicies", ver: v(1, 1)},
			{insert: "compliancedelta", ver: v(1, 3), dep: ptr(v(1, 2))},
			{insert: "compliance", ver: v(1, 4), dep: ptr(v(1, 1))},
			{insert: "compliancedelta", ver: v(1, 5), dep: ptr(v(1, 4))},
			{apply: true, want: job("compliance", v(1, 4))},
			{apply: true, want: job("compliancedelta", v(1, 5))},
			{apply: true, want: ""},
		}},
		{"a newer compliance processed while deltas wait", []step{
			{restore: "clusterspolicies", ver: v(1, 1)},
			{insert: "compliance", ver: v(1, 2), dep: ptr(v(1, 1))},
			{apply: true, want: job("compliance", v(1, 2))},
			{insert: "compliance", ver: v(1, 4), dep: ptr(v(1, 1))},
			{insert: "compliancedelta", ver: v(1, 3), dep: ptr(v(1, 2))}, // base already replaced
			{apply: true, want: job("compliance", v(1, 4))},
			{apply: true, want: ""},
		}},
		{"agent restart in the middle of a delta chain", []step{
			{restore: "managedclusters", ver: v(1, 0)},
			{restore: "clusterspolicies", ver: v(1, 1)},
			{insert: "compliance", ver: v(1, 2), dep: ptr(v(1, 1))},
			{apply: true, want: job("compliance", v(1, 2))},
			{insert: "compliancedelta", ver: v(1, 3), dep: ptr(v(1, 2))},
			// The agent restarts: a new incarnation sends a new base.
			{insert: "clusterspolicies", ver: v(2, 1)},
			{insert: "compliance", ver: v(2, 2), dep: ptr(v(2, 1))},
			{insert: "compliancedelta", ver: v(2, 3), dep: ptr(v(2, 2))},
			{apply: true, want: job("clusterspolicies", v(2, 1))},
			{apply: true, want: job("compliance", v(2, 2))},
			{apply: true, want: job("compliancedelta", v(2, 3))},
			{apply: true, want: ""},
		}},
		{"duplicates are dropped", []step{
			{insert: "heartbeat", ver: v(1, 1)},
			{apply: true, want: job("heartbeat", v(1, 1))},
			{insert: "heartbeat", ver: v(1, 1)},
			{apply: true, want: ""},
			{insert: "policyevents", ver: v(1, 2)},
			{insert: "policyevents", ver: v(1, 2)},
			{insert: "policyevents", ver: v(1, 3)},
			{apply: true, want: job("policyevents", v(1, 2), v(1, 3))},
		}},
		{"an older incarnation arriving late is stale", []step{
			{insert: "managedclusters", ver: v(3, 1)},
			{insert: "managedclusters", ver: v(2, 50)},
			{apply: true, want: job("managedclusters", v(3, 1))},
			{insert: "managedclusters", ver: v(2, 51)},
			{apply: true, want: ""},
		}},
		// Partitions handed over by another replica (docs/design.md, Scaling out): what
		// it wrote before the stored position is restored from the
		// database, never read from Kafka.
		{"compliance waiting for a placement another replica wrote", []step{
			{restore: "managedclusters", ver: v(1, 1)},
			{insert: "compliance", ver: v(1, 5), dep: ptr(v(1, 4))},
			{apply: true, want: ""},
			{restore: "clusterspolicies", ver: v(1, 4)},
			{apply: true, want: job("compliance", v(1, 5))},
		}},
		{"deltas on a base older than one another replica wrote", []step{
			{restore: "compliance", ver: v(1, 2)},
			{insert: "compliancedelta", ver: v(1, 3), dep: ptr(v(1, 2))},
			{restore: "compliance", ver: v(1, 6)},
			{apply: true, want: ""}, // the deltas on 1.2 are stale
			{insert: "compliancedelta", ver: v(1, 7), dep: ptr(v(1, 6))},
			{apply: true, want: job("compliancedelta", v(1, 7))},
		}},
		{"a failed delta group goes back in front", []step{
			{restore: "compliance", ver: v(1, 2)},
			{insert: "compliancedelta", ver: v(1, 3), dep: ptr(v(1, 2))},
			{fail: true, want: job("compliancedelta", v(1, 3))},
			{insert: "compliancedelta", ver: v(1, 4), dep: ptr(v(1, 2))},
		}},
	}
	for _, tc := range cases {
		t.Run(tc.name, func(t *testing.T) {
			f := newFixture(t)
			for i, s := range tc.steps {
				switch {
				case s.insert != "":
					f.insert("hub", s.insert, s.ver, s.dep)
				case s.restore != "":
					f.m.Restore("hub", s.restore, s.ver)
				case s.apply || s.fail:
					u := f.m.queue.tryPop()
					got := ""
					if u != nil {
						j, err := u.Next()
						if err == nil {
							got = job(j.Type, versions(j)...)
							out := Applied
							if s.fail {
								out = Transient
							}
							f.m.Report(j, out)
						}
					}
					if got != s.want {
						t.Fatalf("step %d: job %q, want %q", i, got, s.want)
					}
				}
			}
		})
	}
}

// After a transient failure the group is retried together with what
// arrived in the meantime, in version order.
func TestFailedDeltaGroupRetriedInOrder(t *testing.T) {
	f := newFixture(t)
	f.m.Restore("hub", "compliance", v(1, 2))
	f.insert("hub", "compliancedelta", v(1, 3), ptr(v(1, 2)))
	j := f.take()
	f.insert("hub", "compliancedelta", v(1, 4), ptr(v(1, 2)))
	retryIn := f.m.Report(j, Transient)
	f.clock.Advance(retryIn)
	f.m.Wake(j.Unit)
	j = f.take()
	if got := versions(j); !slices.Equal(got, []bundle.Version{v(1, 3), v(1, 4)}) {
		t.Fatalf("retried group %v, want [1.3 1.4]", got)
	}
}
