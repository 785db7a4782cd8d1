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

// buffered is what backpressure counts: the payload the units hold and the
// dead letters waiting to be stored (during a database outage both grow).
type buffered struct {
	m *conflation.Manager
	q *deadletter.Queue
}

func (b buffered) HeldBytes() int64 { return b.m.HeldBytes() + b.q.Bytes() }
