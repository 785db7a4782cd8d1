package dbsyncers

import (
	"context"
	"testing"

	"github.com/stbridge/stb/pkg/sim"
)

// simulatedMix returns the data of every bundle a short simulation with
// the catch-up scenario's shape (10 clusters, default policies) sends,
// grouped by type.
func simulatedMix(tb testing.TB, hubs, rounds int) map[string][][]byte {
	tb.Helper()
	mix := map[string][][]byte{}
	pub := sim.PublisherFunc(func(_ context.Context, m sim.Message) error {
		mix[m.Type] = append(mix[m.Type], m.Data)
		return nil
	})
	if _, err := sim.Run(context.Background(), sim.Config{Hubs: hubs, Clusters: 10, Generations: rounds, Seed: 1}, pub, nil); err != nil {
		tb.Fatal(err)
	}
	return mix
}

// BenchmarkDecodeMix decodes the simulator's bundles of each type, the
// reader's cost per message of the catch-up mix, with the decoders and
// with their encoding/json references (reference_test.go).
func BenchmarkDecodeMix(b *testing.B) {
	mix := simulatedMix(b, 20, 24)
	refs := map[string]func([]byte) (any, error){
		"heartbeat": refDecodeHeartbeat, "managedclusters": refDecodeManagedClusters,
		"clusterspolicies": refDecodeClustersPolicies, "compliance": refDecodeCompliance,
		"compliancedelta": refDecodeComplianceDelta, "policyevents": refDecodePolicyEvents,
	}
	for _, s := range Default().order {
		datas := mix[s.Name]
		total := 0
		for _, d := range datas {
			total += len(d)
		}
		for _, variant := range []struct {
			name   string
			decode func([]byte) (any, error)
		}{{"scan", s.Decode}, {"encoding-json", refs[s.Name]}} {
			b.Run(s.Name+"/"+variant.name, func(b *testing.B) {
				b.SetBytes(int64(total / len(datas)))
				b.ReportAllocs()
				i := 0
				for b.Loop() {
					if _, err := variant.decode(datas[i%len(datas)]); err != nil {
						b.Fatal(err)
					}
					i++
				}
			})
		}
	}
}
