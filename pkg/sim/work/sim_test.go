package work_test

import (
	"context"
	"math/rand/v2"
	"testing"
	"time"

	"github.com/confluentinc/confluent-kafka-go/v2/kafka"

	"github.com/stbridge/stb/dbsyncers"
	wf "github.com/stbridge/stb/dbsyncers/work"
	"github.com/stbridge/stb/pkg/bundle"
	"github.com/stbridge/stb/pkg/db/dbtest"
	simwork "github.com/stbridge/stb/pkg/sim/work"
	"github.com/stbridge/stb/pkg/transport"
)

// TestAnyOrderReachesExpected: the fence is a total order per resource,
// so the simulation's messages written in any order, each alone or folded
// in groups per cluster, leave the expected state; and Verify tells a row
// that is not.
func TestAnyOrderReachesExpected(t *testing.T) {
	var msgs []*kafka.Message
	exp, err := simwork.Run(context.Background(), simwork.Config{Clusters: 4, Resources: 6, Rounds: 6, Seed: 7, Structured: true,
		RestartProbability: 0.2, LateProbability: 0.2, DeleteProbability: 0.1, StatusBytes: 100, Start: time.Unix(1_790_000_000, 0)},
		func(_ context.Context, m *kafka.Message) error {
			m.TopicPartition.Partition, m.TopicPartition.Offset = 0, kafka.Offset(len(msgs))
			msgs = append(msgs, m)
			return nil
		}, nil)
	if err != nil {
		t.Fatal(err)
	}
	if exp.Deletes == 0 || exp.LateCopies == 0 || exp.Restarts == 0 || exp.Duplicates == 0 {
		t.Fatalf("the run lacks a fault: %+v", exp)
	}
	reg, err := dbsyncers.NewRegistry(wf.Syncers()...)
	if err != nil {
		t.Fatal(err)
	}
	rules := transport.Rules{TypePrefix: transport.DefaultTypePrefix, MaxBundleBytes: 1 << 20, Decoder: reg}
	fams := []transport.Family{wf.NewFamily()}
	byCluster := map[string][]*bundle.Bundle{}
	rng := rand.New(rand.NewPCG(1, 2))
	rng.Shuffle(len(msgs), func(i, j int) { msgs[i], msgs[j] = msgs[j], msgs[i] })
	for _, m := range msgs {
		b, rej := transport.DecodeProfiles(m, rules, nil, fams, time.Now())
		if rej != nil {
			t.Fatalf("rejected: %v", rej)
		}
		if err := reg.DecodeBundle(b); err != nil {
			t.Fatal(err)
		}
		byCluster[b.Hub] = append(byCluster[b.Hub], b)
	}
	for _, mode := range []string{"one by one", "in groups"} {
		t.Run(mode, func(t *testing.T) {
			pool, _ := dbtest.New(t)
			for _, bs := range byCluster {
				for len(bs) > 0 {
					n := 1
					if mode == "in groups" {
						n = min(len(bs), 1+rng.IntN(7))
					}
					if _, err := reg.Write(t.Context(), pool, [][]*bundle.Bundle{bs[:n]}); err != nil {
						t.Fatal(err)
					}
					bs = bs[n:]
				}
			}
			rep, err := simwork.Verify(t.Context(), pool, exp)
			if err != nil {
				t.Fatal(err)
			}
			if !rep.OK() {
				t.Fatalf("%s", rep.Summary())
			}
			if _, err := pool.Exec(t.Context(), `UPDATE work.resource_status SET sequence_id = sequence_id - 1
				WHERE resource_id = (SELECT min(resource_id) FROM work.resource_status)`); err != nil {
				t.Fatal(err)
			}
			if rep, err := simwork.Verify(t.Context(), pool, exp); err != nil || rep.OK() || rep.DifferentN != 1 {
				t.Errorf("after changing a row: %+v, %v; want one difference", rep, err)
			}
		})
	}
}
