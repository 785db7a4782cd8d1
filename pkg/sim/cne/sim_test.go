package cne_test

import (
	"context"
	"hash/crc32"
	"testing"
	"time"

	"github.com/confluentinc/confluent-kafka-go/v2/kafka"
	"github.com/jackc/pgx/v5"
	"github.com/jackc/pgx/v5/pgxpool"

	"github.com/stbridge/stb/dbsyncers"
	family "github.com/stbridge/stb/dbsyncers/cne"
	"github.com/stbridge/stb/pkg/bundle"
	"github.com/stbridge/stb/pkg/db/dbtest"
	"github.com/stbridge/stb/pkg/deadletter"
	cnesim "github.com/stbridge/stb/pkg/sim/cne"
	"github.com/stbridge/stb/pkg/transport"
)

// bridgeLike is a publisher that does what a bridge does with each
// message, without Kafka: encode it as the publisher would, read it back
// as the reader does (two partitions, by key), and write it, one message
// per transaction, or dead-letter it.
type bridgeLike struct {
	t       *testing.T
	pool    *pgxpool.Pool
	reg     *dbsyncers.Registry
	offsets [2]int64
}

func (p *bridgeLike) Publish(ctx context.Context, m cnesim.Message) error {
	msg, err := cnesim.Encode(m)
	if err != nil {
		return err
	}
	part := int32(crc32.ChecksumIEEE(msg.Key) % 2)
	msg.TopicPartition.Partition, msg.TopicPartition.Offset = part, kafka.Offset(p.offsets[part])
	p.offsets[part]++
	rules := transport.Rules{TypePrefix: transport.DefaultTypePrefix, MaxBundleBytes: 1 << 20, Decoder: p.reg}
	b, rej := transport.DecodeProfiles(msg, rules, nil, []transport.Family{family.NewFamily()}, time.Now())
	if rej != nil {
		_, err := deadletter.NewWriter(p.pool).Write(ctx, rej.Letter)
		return err
	}
	return pgx.BeginFunc(ctx, p.pool, func(tx pgx.Tx) error {
		_, err := p.reg.Apply(ctx, tx, []*bundle.Bundle{b})
		return err
	})
}

// TestRunVerifies: what Run expects is what the family's writes leave,
// with restarts, duplicates, late copies, clock steps and bad events; and
// Verify notices a row taken backwards.
func TestRunVerifies(t *testing.T) {
	pool, _ := dbtest.New(t)
	reg, err := dbsyncers.NewRegistry(family.Syncers()...)
	if err != nil {
		t.Fatal(err)
	}
	cfg := cnesim.Config{Nodes: 7, Rounds: 40, Seed: 3, ClockStep: 0.1, LateCopy: 0.2, Duplicate: 0.2, Restart: 0.1, Bad: 0.05}
	exp, err := cnesim.Run(t.Context(), cfg, &bridgeLike{t: t, pool: pool, reg: reg}, nil)
	if err != nil {
		t.Fatal(err)
	}
	if exp.ClockSteps == 0 || exp.LateCopies == 0 || exp.Duplicates == 0 || exp.Restarts == 0 || exp.DeadLetters == 0 || exp.Behind == 0 {
		t.Fatalf("the run did not misbehave in every way: %+v", exp)
	}
	rep, err := cnesim.Verify(t.Context(), pool, exp)
	if err != nil {
		t.Fatal(err)
	}
	if !rep.OK() {
		t.Fatalf("mismatch:\n%s", rep.Summary())
	}
	t.Logf("%d messages, %d rows, %d restarts, %d clock steps, %d duplicates, %d late copies, %d values behind, %d dead letters",
		exp.Messages, len(exp.Rows), exp.Restarts, exp.ClockSteps, exp.Duplicates, exp.LateCopies, exp.Behind, exp.DeadLetters)

	// A row taken back to an older value is reported.
	if _, err := pool.Exec(t.Context(), `
		UPDATE stb.cne_state SET value_text = 'FREERUN', event_time_ns = event_time_ns - 1
		WHERE (event_type, resource_address, data_type) IN (SELECT event_type, resource_address, data_type FROM stb.cne_state
			WHERE value_type = 'enumeration' LIMIT 1)`); err != nil {
		t.Fatal(err)
	}
	if rep, err := cnesim.Verify(t.Context(), pool, exp); err != nil || rep.OK() || rep.Differences != 1 {
		t.Fatalf("after a row was changed: %+v, %v; want one difference", rep, err)
	}
}
