package work_test

import (
	"context"
	"encoding/json"
	"fmt"
	"slices"
	"strings"
	"testing"

	"github.com/cloudevents/sdk-go/protocol/kafka_confluent/v2"
	"github.com/cloudevents/sdk-go/v2/binding"
	"github.com/confluentinc/confluent-kafka-go/v2/kafka"

	"github.com/stbridge/stb/dbsyncers/work"
	"github.com/stbridge/stb/pkg/bundle"
	"github.com/stbridge/stb/pkg/db/dbtest"
)

// TestResyncBatches: a long list is cut into requests of at most 1,000
// entries and 512 KiB of data each, in order, none empty.
func TestResyncBatches(t *testing.T) {
	for _, tc := range []struct {
		name     string
		n, idLen int
	}{
		{"entries bound", 2500, 36},     // UIDs: 1,000 entries are ~100 KB
		{"bytes bound", 3000, 400},      // long ids: 512 KiB first
		{"exactly one batch", 1000, 36}, //
		{"one", 1, 36},                  //
	} {
		t.Run(tc.name, func(t *testing.T) {
			var hashes []work.ResourceStatusHash
			for i := 0; i < tc.n; i++ {
				id := fmt.Sprintf("%0*d", tc.idLen, i)
				hashes = append(hashes, work.ResourceStatusHash{ResourceID: id, StatusHash: strings.Repeat("a", 64)})
			}
			batches, err := work.ResyncBatches(hashes, work.MaxResyncEntries, work.MaxResyncBytes)
			if err != nil {
				t.Fatal(err)
			}
			var all []work.ResourceStatusHash
			for i, b := range batches {
				data, _ := json.Marshal(map[string]any{"statusHashes": b})
				if len(b) == 0 || len(b) > work.MaxResyncEntries || len(data) > work.MaxResyncBytes {
					t.Errorf("batch %d: %d entries, %d bytes", i, len(b), len(data))
				}
				if i < len(batches)-1 && len(b) < work.MaxResyncEntries && len(data)+len(`,{"resourceID":"","statusHash":""}`)+tc.idLen+64 <= work.MaxResyncBytes {
					t.Errorf("batch %d of %d entries, %d bytes, could have held the next entry", i, len(b), len(data))
				}
				all = append(all, b...)
			}
			if !slices.Equal(all, hashes) {
				t.Errorf("the batches hold %d entries, not the %d given in order", len(all), len(hashes))
			}
		})
	}
	if b, err := work.ResyncBatches(nil, work.MaxResyncEntries, work.MaxResyncBytes); err != nil || len(b) != 0 {
		t.Errorf("no hashes: %v, %v; want no request (an empty list asks for everything)", b, err)
	}
}

// recorder is a Publisher that keeps what it is given.
type recorder struct{ msgs []*kafka.Message }

func (r *recorder) PublishMessage(_ context.Context, m *kafka.Message) error {
	r.msgs = append(r.msgs, m)
	return nil
}

// TestResyncRequests: per cluster and source, the requests list the hashes
// of the live works stored, shaped as sdk-go's source client sends them
// (generic/clients/sourceclient.go Resync: type status.resync_request,
// source = the source's id, extension clustername; data
// payload.ResourceStatusHashList, {"statusHashes":[{"resourceID",
// "statusHash"}]}, which the agent decodes with
// payload.DecodeStatusResyncRequest), keyed "<source>@<cluster>"; the
// family skips them when it reads them back.
func TestResyncRequests(t *testing.T) {
	pool, _ := dbtest.New(t)
	s1, s2 := work.SequenceID(baseTime, 1), work.SequenceID(baseTime, 2)
	write(t, pool, []*bundle.Bundle{
		status(t, "c1", "maestro", "r1", 1, s1, 1, nil),
		status(t, "c1", "maestro", "r2", 1, s1, 2, nil),
		status(t, "c1", "maestro", "gone", 1, s2, 3, deleted),
		status(t, "c1", "other", "r3", 1, s1, 4, nil),
	}, []*bundle.Bundle{status(t, "c2", "maestro", "r4", 1, s1, 5, nil)})

	var rec recorder
	st, err := work.Resync(t.Context(), pool, &rec, "sourceevents.{source}.{cluster}", []string{"c1"}, baseTime)
	if err != nil {
		t.Fatal(err)
	}
	if st.Clusters != 1 || st.Requests != 2 || st.Hashes != 3 {
		t.Errorf("stats %+v, want 1 cluster, 2 requests (one per source), 3 hashes (the tombstone left out)", st)
	}
	got := map[string][]string{}
	for _, m := range rec.msgs {
		m.TopicPartition.Partition, m.TopicPartition.Offset = 0, 0 // as read back
		ev, err := binding.ToEvent(context.Background(), kafka_confluent.NewMessage(m))
		if err != nil {
			t.Fatal(err)
		}
		cluster, _ := ev.Extensions()[work.ExtClusterName].(string)
		if ev.Type() != work.ResyncRequest || cluster != "c1" || string(m.Key) != ev.Source()+"@c1" ||
			*m.TopicPartition.Topic != "sourceevents."+ev.Source()+".c1" {
			t.Errorf("request: type %q, cluster %q, key %q, topic %q", ev.Type(), cluster, m.Key, *m.TopicPartition.Topic)
		}
		var data struct {
			StatusHashes []struct {
				ResourceID string `json:"resourceID"`
				StatusHash string `json:"statusHash"`
			} `json:"statusHashes"`
		}
		if err := json.Unmarshal(ev.Data(), &data); err != nil {
			t.Fatal(err)
		}
		for _, h := range data.StatusHashes {
			if len(h.StatusHash) != 64 {
				t.Errorf("hash %q of %s", h.StatusHash, h.ResourceID)
			}
			got[ev.Source()] = append(got[ev.Source()], h.ResourceID)
		}
		if b, rej := read(t, m); rej == nil || !rej.Skipped {
			t.Errorf("the family read its own request as %+v, %v; want it skipped", b, rej)
		}
	}
	if fmt.Sprint(got) != "map[maestro:[r1 r2] other:[r3]]" {
		t.Errorf("hashes listed %v", got)
	}

	rec = recorder{}
	if st, err := work.Resync(t.Context(), pool, &rec, "sourceevents", nil, baseTime); err != nil || st.Clusters != 2 || st.Requests != 3 {
		t.Errorf("every cluster: %+v, %v; want 2 clusters, 3 requests", st, err)
	}
}
