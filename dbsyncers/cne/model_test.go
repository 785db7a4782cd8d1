package cne_test

import (
	"fmt"
	"math/rand/v2"
	"testing"
	"time"

	"github.com/cloudevents/sdk-go/v2/event"

	"github.com/stbridge/stb/dbsyncers/cne"
	"github.com/stbridge/stb/pkg/bundle"
	"github.com/stbridge/stb/pkg/db/dbtest"
)

// TestModelRandomGroups: a node's events read in a random order from two
// partitions, with few distinct times (many ties), keys repeated within an
// event, and written in random groups (a worker's job, folded by Plan, or
// merged by a unit first) end in exactly the state of a reference model
// that takes them one at a time: per key the value read last among those
// that are After all before it.
func TestModelRandomGroups(t *testing.T) {
	for seed := range uint64(4) {
		t.Run(fmt.Sprint(seed), func(t *testing.T) {
			pool, _ := dbtest.New(t)
			rng := rand.New(rand.NewPCG(seed, 42))
			keys := []string{cne.ResourceLockState, cne.ResourceOsClock, cne.ResourceClockClass}
			var offsets [2]int64
			model := map[string]cne.Value{}
			var bundles []*bundle.Bundle
			for i := range 300 {
				part := int32(rng.IntN(2))
				off := offsets[part]
				offsets[part]++
				at := t0.Add(time.Duration(rng.IntN(8)) * time.Second)
				var vals []val
				for range 1 + rng.IntN(3) {
					vals = append(vals, v3(addr("n1", keys[rng.IntN(len(keys))]), "notification", "enumeration", fmt.Sprintf("S%d", i)))
				}
				e := ev(t, event.CloudEventsVersionV1, cne.PtpStateChange, at, part, off, data("1.0", vals...))
				b, err := cne.Family{}.Bundle(e)
				if err != nil {
					t.Fatal(err)
				}
				// The model: the event's values in order, one at a time.
				values, _, err := cne.Parse(cne.Context{Type: e.Type(), ID: e.ID(), Source: e.Source(), Time: e.Time(), Origin: e.Origin}, e.Data())
				if err != nil {
					t.Fatal(err)
				}
				for _, v := range values {
					if old, ok := model[v.Address]; !ok || v.After(&old) {
						model[v.Address] = v
					}
				}
				bundles = append(bundles, b)
			}
			// Random groups, some merged first as a unit does.
			for len(bundles) > 0 {
				n := min(len(bundles), 1+rng.IntN(12))
				group := bundles[:n]
				bundles = bundles[n:]
				if n > 1 && rng.IntN(2) == 0 {
					acc := any(decoded(t, group[0]))
					for _, b := range group[1:] {
						acc = cne.Merge(acc, decoded(t, b))
					}
					group = []*bundle.Bundle{{Hub: "n1", Type: cne.BundleType, Payload: acc, Origin: group[0].Origin}}
				}
				write(t, pool, group...)
			}
			got := readState(t, pool)
			if len(got) != len(model) {
				t.Fatalf("%d rows, the model %d", len(got), len(model))
			}
			for a, want := range model {
				r := got[cne.PtpStateChange+" "+a+" notification"]
				if r.Text != want.Text || r.TimeNS != want.TimeNS || r.Partition != want.Origin.Partition || r.Offset != want.Origin.Offset {
					t.Errorf("%s: %q at %d, %d@%d; the model %q at %d, %d@%d", a, r.Text, r.TimeNS, r.Partition, r.Offset,
						want.Text, want.TimeNS, want.Origin.Partition, want.Origin.Offset)
				}
			}
		})
	}
}
