package bridge

import (
	"context"

	"github.com/stbridge/stb/conflation"
	"github.com/stbridge/stb/pkg/committer"
	"github.com/stbridge/stb/pkg/deadletter"
	"github.com/stbridge/stb/pkg/transport"
)

// positions adapts the committer to the reader's Positions: the reader
// declares the partition tracker it needs as an interface.
type positions struct{ *committer.Committer }

func (p positions) Assign(topic string, partition int32, start int64) transport.Partition {
	return p.Committer.Assign(topic, partition, start)
}

// offsets adapts the Postgres position store to the reader's Offsets.
type offsets struct{ s *committer.PGStore }

func (o offsets) Claim(ctx context.Context, topic string, partition int32) (transport.StoredPosition, bool, error) {
	p, ok, err := o.s.Claim(ctx, topic, partition)
	return transport.StoredPosition{Offset: p.Offset, ClusterID: p.ClusterID}, ok, err
}

// rejectQueue hands the reader's rejects to the dead-letter queue, which
// stores them in batches on its own goroutine and releases each (its
// offset may then be committed) once stored.
type rejectQueue struct{ q *deadletter.Queue }

func (r rejectQueue) Reject(rj transport.Reject) {
	r.q.Add(deadletter.Letter{
		Hub: rj.Hub, Type: rj.Type, Version: rj.Version, Origin: rj.Origin,
		Reason: rj.Reason, Err: rj.Err, Headers: rj.Headers, Data: rj.Data, Key: rj.Key,
	}, rj.Release)
}

// buffered is what backpressure counts: the payload the units hold and the
// dead letters waiting to be stored (during a database outage both grow).
type buffered struct {
	m *conflation.Manager
	q *deadletter.Queue
}

func (b buffered) HeldBytes() int64 { return b.m.HeldBytes() + b.q.Bytes() }
