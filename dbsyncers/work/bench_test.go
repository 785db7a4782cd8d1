package work_test

import (
	"testing"

	"github.com/stbridge/stb/dbsyncers/work"
	simwork "github.com/stbridge/stb/pkg/sim/work"
	"github.com/stbridge/stb/pkg/transport"
)

// BenchmarkReadStatus is the read path of one ~20 KB status as Maestro
// measures them: the reader's DecodeFamilies with the family (the
// CloudEvents binding, the extensions, the scan of the data), then the
// worker's decode.
func BenchmarkReadStatus(b *testing.B) {
	st := simwork.Status{Type: work.UpdateRequest, ID: "id", Cluster: "c1", Source: "maestro", ResourceID: "r1",
		Generation: 3, SequenceID: work.SequenceID(baseTime, 1), Time: baseTime, Padding: 20_000}
	ev, _ := st.Event()
	msg := message(b, ev, false, 0, 1)
	reg := registry(b)
	rules := transport.Rules{TypePrefix: transport.DefaultTypePrefix, MaxBundleBytes: 1 << 20, Decoder: reg}
	fams := []transport.Family{work.NewFamily()}
	b.SetBytes(int64(len(msg.Value)))
	b.ReportAllocs()
	for b.Loop() {
		bd, rej := transport.DecodeFamilies(msg, rules, fams, baseTime)
		if rej != nil {
			b.Fatal(rej)
		}
		if err := reg.DecodeBundle(bd); err != nil {
			b.Fatal(err)
		}
	}
}
