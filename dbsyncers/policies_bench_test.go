package dbsyncers

import (
	"encoding/json"
	"fmt"
	"slices"
	"testing"

	"github.com/jackc/pgx/v5"
	"github.com/jackc/pgx/v5/pgxpool"

	"github.com/stbridge/stb/pkg/bundle"
	"github.com/stbridge/stb/pkg/db/dbtest"
)

// benchPolicies × benchClusters is the compliance table of a large hub:
// 135,000 rows (docs/design.md, Performance).
const benchPolicies = 45

// benchPolicyID returns the id of policy i, as long as a Kubernetes uid.
func benchPolicyID(i int) string { return fmt.Sprintf("5f0c6a8e-policy-%04d-9d3b-4f6e2a1c7b80", i) }

// benchClusterName returns the name of cluster i of a hub.
func benchClusterName(prefix string, i int) string { return fmt.Sprintf("%s-cluster-%05d", prefix, i) }

// placementData returns clusterspolicies data placing every policy on
// every cluster named prefix-cluster-NNNNN.
func placementData(prefix string) []byte {
	type object struct {
		PolicyID          string   `json:"policyId"`
		Clusters          []string `json:"clusters"`
		RemediationAction string   `json:"remediationAction"`
		ResourceVersion   string   `json:"resourceVersion"`
	}
	clusters := make([]string, benchClusters)
	for i := range clusters {
		clusters[i] = benchClusterName(prefix, i)
	}
	objects := make([]object, benchPolicies)
	for p := range objects {
		objects[p] = object{benchPolicyID(p), clusters, "inform", "1"}
	}
	data, err := json.Marshal(map[string]any{"objects": objects})
	if err != nil {
		panic(err)
	}
	return data
}

// complianceData returns compliance data for every policy placed by
// placementData(prefix): state(c) says how cluster c complies.
func complianceData(prefix string, state func(c int) ComplianceState) []byte {
	type object struct {
		PolicyID        string   `json:"policyId"`
		NonCompliant    []string `json:"nonCompliantClusters"`
		Unknown         []string `json:"unknownComplianceClusters"`
		ResourceVersion string   `json:"resourceVersion"`
	}
	var nc, unk []string
	for c := range benchClusters {
		switch state(c) {
		case NonCompliant:
			nc = append(nc, benchClusterName(prefix, c))
		case UnknownCompliance:
			unk = append(unk, benchClusterName(prefix, c))
		}
	}
	objects := make([]object, benchPolicies)
	for p := range objects {
		objects[p] = object{benchPolicyID(p), nc, unk, "1"}
	}
	data, err := json.Marshal(map[string]any{"objects": objects})
	if err != nil {
		panic(err)
	}
	return data
}

// The two compliance reports of the benchmarks. Every row differs between
// them: report A has 10% of clusters non-compliant and the rest compliant;
// report B makes those compliant and the rest non-compliant or unknown.
func reportA(c int) ComplianceState {
	if c < benchClusters/10 {
		return NonCompliant
	}
	return Compliant
}

func reportB(c int) ComplianceState {
	switch {
	case c < benchClusters/10:
		return Compliant
	case c%2 == 0:
		return NonCompliant
	}
	return UnknownCompliance
}

// versions hands out increasing versions, so every Apply passes the fence.
type versions struct{ gen uint64 }

func (v *versions) next() bundle.Version {
	v.gen++
	return bundle.Version{Incarnation: 1, Generation: v.gen}
}

// mustApply applies one bundle in a transaction of its own.
func mustApply(b *testing.B, pool *pgxpool.Pool, bundles ...*bundle.Bundle) {
	b.Helper()
	err := pgx.BeginFunc(b.Context(), pool, func(tx pgx.Tx) error {
		applied, err := Default().Apply(b.Context(), tx, bundles)
		if err == nil && !applied {
			err = fmt.Errorf("not applied")
		}
		return err
	})
	if err != nil {
		b.Fatal(err)
	}
}

// place applies a placement of every policy on every cluster of prefix
// to hub.
func place(b *testing.B, pool *pgxpool.Pool, hub, prefix string, v *versions) {
	b.Helper()
	mustApply(b, pool, newBundle(hub, "clusterspolicies", v.next(), mustDecode(b, "clusterspolicies", placementData(prefix))))
}

// BenchmarkClustersPoliciesApply measures placements of 45 policies on
// 3,000 clusters (135,000 pairs) through Apply: into an empty hub
// (135,000 inserts), unchanged (reads only), and alternating between two
// hubs' worth of cluster names (135,000 deletes and 135,000 inserts).
func BenchmarkClustersPoliciesApply(b *testing.B) {
	pool, _ := dbtest.New(b)
	pairs := benchPolicies * benchClusters
	c1 := mustDecode(b, "clusterspolicies", placementData("c1"))
	c2 := mustDecode(b, "clusterspolicies", placementData("c2"))

	b.Run("first", func(b *testing.B) {
		var v versions
		n := 0
		for b.Loop() {
			mustApply(b, pool, newBundle(fmt.Sprintf("first-%d", n), "clusterspolicies", v.next(), c1))
			n++
		}
		b.ReportMetric(float64(pairs*n)/b.Elapsed().Seconds(), "rows/s")
	})
	b.Run("unchanged", func(b *testing.B) {
		var v versions
		mustApply(b, pool, newBundle("unchanged", "clusterspolicies", v.next(), c1))
		for b.Loop() {
			mustApply(b, pool, newBundle("unchanged", "clusterspolicies", v.next(), c1))
		}
		b.ReportMetric(float64(pairs*b.N)/b.Elapsed().Seconds(), "rows/s")
	})
	b.Run("all_replaced", func(b *testing.B) {
		var v versions
		payloads := [2]any{c1, c2}
		mustApply(b, pool, newBundle("replaced", "clusterspolicies", v.next(), c2))
		n := 0
		for b.Loop() {
			mustApply(b, pool, newBundle("replaced", "clusterspolicies", v.next(), payloads[n%2]))
			n++
		}
		b.ReportMetric(float64(2*pairs*n)/b.Elapsed().Seconds(), "rows_written/s")
	})
}

// BenchmarkComplianceApply measures a compliance bundle of 45 policies
// on 3,000 placed clusters (135,000 rows) through Apply: the first report
// after the placement (every row from unknown: 10% non-compliant, the rest
// compliant) and a full rotation between two reports that differ in every
// row.
func BenchmarkComplianceApply(b *testing.B) {
	pool, _ := dbtest.New(b)
	rows := benchPolicies * benchClusters
	a := mustDecode(b, "compliance", complianceData("c", reportA))
	bb := mustDecode(b, "compliance", complianceData("c", reportB))

	b.Run("first_ingest", func(b *testing.B) {
		n := 0
		for b.Loop() {
			b.StopTimer()
			hub := fmt.Sprintf("first-%d", n)
			var v versions
			place(b, pool, hub, "c", &v)
			b.StartTimer()
			mustApply(b, pool, newBundle(hub, "compliance", v.next(), a))
			n++
		}
		b.ReportMetric(float64(rows*n)/b.Elapsed().Seconds(), "rows/s")
	})
	b.Run("full_rotation", func(b *testing.B) {
		var v versions
		place(b, pool, "rotation", "c", &v)
		mustApply(b, pool, newBundle("rotation", "compliance", v.next(), bb))
		reports := [2]any{a, bb}
		n := 0
		for b.Loop() {
			mustApply(b, pool, newBundle("rotation", "compliance", v.next(), reports[n%2]))
			n++
		}
		b.ReportMetric(float64(rows*n)/b.Elapsed().Seconds(), "rows/s")
	})
	b.Run("unchanged", func(b *testing.B) {
		var v versions
		place(b, pool, "unchanged", "c", &v)
		mustApply(b, pool, newBundle("unchanged", "compliance", v.next(), a))
		for b.Loop() {
			mustApply(b, pool, newBundle("unchanged", "compliance", v.next(), a))
		}
		b.ReportMetric(float64(rows*b.N)/b.Elapsed().Seconds(), "rows/s")
	})
}

// BenchmarkComplianceStatements compares the two ways the compliance
// handler can send its listed rows, as arrays to unnest or copied into a
// temporary table, for reports listing 1%, 10% and 90% of the 135,000
// rows; each iteration flips every listed row between non-compliant and
// unknown. stageRowsAbove follows from it.
func BenchmarkComplianceStatements(b *testing.B) {
	pool, _ := dbtest.New(b)
	for _, pct := range []int{1, 10, 90} {
		flip := func(phase int) *CompliancePayload {
			return mustDecode(b, "compliance", complianceData("c", func(c int) ComplianceState {
				switch {
				case c >= benchClusters*pct/100:
					return Compliant
				case (c+phase)%2 == 0:
					return NonCompliant
				}
				return UnknownCompliance
			})).(*CompliancePayload)
		}
		reports := [2]*CompliancePayload{flip(0), flip(1)}
		listed := benchPolicies * benchClusters * pct / 100
		for _, staged := range []bool{false, true} {
			name := fmt.Sprintf("listed=%d/%s", listed, map[bool]string{false: "unnest", true: "staged"}[staged])
			b.Run(name, func(b *testing.B) {
				write := func(p *CompliancePayload) {
					rows, err := p.rows()
					if err != nil {
						b.Fatal(err)
					}
					if err := pgx.BeginFunc(b.Context(), pool, func(tx pgx.Tx) error {
						return writeCompliance(name, rows, staged).Exec(b.Context(), tx)
					}); err != nil {
						b.Fatal(err)
					}
				}
				var v versions
				place(b, pool, name, "c", &v)
				write(reports[1]) // so that every iteration writes the listed rows only
				n := 0
				for b.Loop() {
					write(reports[n%2])
					n++
				}
				b.ReportMetric(float64(listed*n)/b.Elapsed().Seconds(), "rows_written/s")
			})
		}
	}
}

// BenchmarkClustersPoliciesStatements compares the two ways the
// clusterspolicies handler can send its pairs, as arrays to unnest or
// copied into a temporary table, alternating between two placements of
// 45 policies that share all but pct% of their 3,000 clusters.
func BenchmarkClustersPoliciesStatements(b *testing.B) {
	pool, _ := dbtest.New(b)
	for _, pct := range []int{0, 10, 100} {
		flip := func(phase int) *ClustersPoliciesPayload {
			p := mustDecode(b, "clusterspolicies", placementData("c")).(*ClustersPoliciesPayload)
			for i := range p.Policies {
				cs := slices.Clone(p.Policies[i].Clusters)
				for c := range benchClusters * pct / 100 {
					cs[c] = benchClusterName(fmt.Sprintf("p%d", phase), c)
				}
				p.Policies[i].Clusters = sortedSet(cs)
			}
			return p
		}
		placements := [2]*ClustersPoliciesPayload{flip(0), flip(1)}
		changed := 2 * benchPolicies * benchClusters * pct / 100
		for _, staged := range []bool{false, true} {
			name := fmt.Sprintf("changed=%d/%s", changed, map[bool]string{false: "unnest", true: "staged"}[staged])
			b.Run(name, func(b *testing.B) {
				write := func(p *ClustersPoliciesPayload) {
					policyIDs, clusters, err := p.pairs()
					if err != nil {
						b.Fatal(err)
					}
					if err := pgx.BeginFunc(b.Context(), pool, func(tx pgx.Tx) error {
						return writePlacement(name, policyIDs, clusters, staged).Exec(b.Context(), tx)
					}); err != nil {
						b.Fatal(err)
					}
				}
				write(placements[1])
				n := 0
				for b.Loop() {
					write(placements[n%2])
					n++
				}
				b.ReportMetric(float64(benchPolicies*benchClusters*n)/b.Elapsed().Seconds(), "pairs/s")
			})
		}
	}
}

// benchDeltaGroup returns a group of size deltas on base, each changing
// per pairs (policy, cluster) pairs spread over the 135,000 rows, to
// non-compliant in phase 0 and to unknown in phase 1, so that every
// iteration of a benchmark alternating the phases writes.
func benchDeltaGroup(b *testing.B, size, per, phase int) []*ComplianceDeltaPayload {
	group := make([]*ComplianceDeltaPayload, size)
	for d := range group {
		var nc, unk []any
		for i := range per {
			k := (d*per + i) * 7919 % (benchPolicies * benchClusters) // a stride coprime to the row count
			o := map[string]any{"policyId": benchPolicyID(k / benchClusters), "nonCompliantClusters": []string{}, "unknownComplianceClusters": []string{}}
			c := []string{benchClusterName("c", k%benchClusters)}
			if phase == 0 {
				o["nonCompliantClusters"] = c
				nc = append(nc, o)
			} else {
				o["unknownComplianceClusters"] = c
				unk = append(unk, o)
			}
		}
		group[d] = mustDecode(b, "compliancedelta", objectsData(append(nc, unk...)...)).(*ComplianceDeltaPayload)
	}
	return group
}

// BenchmarkComplianceDeltaApply measures a group of 10 deltas of 1,000
// changes each through Apply, on a hub of 135,000 placed rows: the base
// check, folding the group in order and one UPDATE.
func BenchmarkComplianceDeltaApply(b *testing.B) {
	pool, _ := dbtest.New(b)
	const size, per = 10, 1000
	var v versions
	place(b, pool, "delta", "c", &v)
	base := v.next()
	mustApply(b, pool, newBundle("delta", "compliance", base, mustDecode(b, "compliance", complianceData("c", reportA))))
	groups := [2][]*ComplianceDeltaPayload{benchDeltaGroup(b, size, per, 0), benchDeltaGroup(b, size, per, 1)}
	apply := func(payloads []*ComplianceDeltaPayload) {
		bundles := make([]*bundle.Bundle, len(payloads))
		for i, p := range payloads {
			bundles[i] = newBundle("delta", "compliancedelta", v.next(), p)
			bundles[i].Dependency, bundles[i].HasDependency = base, true
		}
		mustApply(b, pool, bundles...)
	}
	apply(groups[1])
	n := 0
	for b.Loop() {
		apply(groups[n%2])
		n++
	}
	b.ReportMetric(float64(size*per*n)/b.Elapsed().Seconds(), "changes/s")
}

// BenchmarkMergeComplianceDelta measures what a conflation unit does under
// its lock once a hub's deltas exceed --max-delta-bytes: folding one more
// delta of 1,000 changes into 100 merged ones.
func BenchmarkMergeComplianceDelta(b *testing.B) {
	group := benchDeltaGroup(b, 101, 1000, 0)
	var acc any = group[0]
	for _, d := range group[1:100] {
		acc = mergeComplianceDelta(acc, d)
	}
	for b.Loop() {
		_ = mergeComplianceDelta(acc, group[100])
	}
}

// BenchmarkDecodeClustersPolicies measures the reader's side of a
// placement of 45 policies on 3,000 clusters: about 2.4 MB of JSON.
func BenchmarkDecodeClustersPolicies(b *testing.B) {
	data := placementData("c")
	b.SetBytes(int64(len(data)))
	for b.Loop() {
		if _, err := decodeClustersPolicies(data); err != nil {
			b.Fatal(err)
		}
	}
}
