package test

import (
	"context"
	"strconv"
	"strings"
	"time"

	"github.com/twmb/franz-go/pkg/kgo"
)

// record is what the tests need of a published message.
type record struct {
	partition int32
	offset    int64
	hub, typ  string
	version   [2]uint64
}

// readTopic reads every record of the topic from the start, with franz-go
// (a second, independent client), until want records are read.
func (e *env) readTopic(want int) []record {
	e.t.Helper()
	cl, err := kgo.NewClient(kgo.SeedBrokers(e.brokers), kgo.ConsumeTopics("status"), kgo.ConsumeResetOffset(kgo.NewOffset().AtStart()))
	if err != nil {
		e.t.Fatal(err)
	}
	defer cl.Close()
	ctx, cancel := context.WithTimeout(context.Background(), time.Minute)
	defer cancel()
	var out []record
	for len(out) < want {
		fs := cl.PollFetches(ctx)
		if err := ctx.Err(); err != nil {
			e.t.Fatalf("read %d of %d records: %v", len(out), want, err)
		}
		fs.EachRecord(func(r *kgo.Record) {
			rec := record{partition: r.Partition, offset: r.Offset, hub: string(r.Key)}
			for _, h := range r.Headers {
				switch h.Key {
				case "ce_type":
					rec.typ = string(h.Value[strings.LastIndexByte(string(h.Value), '.')+1:])
				case "ce_extversion":
					i, g, _ := strings.Cut(string(h.Value), ".")
					rec.version[0], _ = strconv.ParseUint(i, 10, 64)
					rec.version[1], _ = strconv.ParseUint(g, 10, 64)
				}
			}
			out = append(out, rec)
		})
	}
	return out
}

// endOffsets returns, per partition, the offset after the last record.
func endOffsets(recs []record) map[int32]int64 {
	out := map[int32]int64{}
	for _, r := range recs {
		if r.offset+1 > out[r.partition] {
			out[r.partition] = r.offset + 1
		}
	}
	return out
}
