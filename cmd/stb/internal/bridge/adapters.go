package bridge

import (
	"context"

	"github.com/stbridge/stb/conflation"
	"github.com/stbridge/stb/dbsyncers"
	"github.com/stbridge/stb/pkg/bundle"
	"github.com/stbridge/stb/pkg/committer"
	"github.com/stbridge/stb/pkg/deadletter"
	"github.com/stbridge/stb/pkg/transport"
)

// Decoder returns the reader's Decoder for the bundle types of r, as the
// bridge uses it; the bench's read ceiling decodes with the same.
func Decoder(r *dbsyncers.Registry) transport.Decoder { return registryDecoder{r} }

// registryDecoder adapts the registry to the reader's Decoder.
type registryDecoder struct{ r *dbsyncers.Registry }

func (d registryDecoder) Decode(typ string, data []byte) (any, error) {
	s, ok := d.r.Lookup(typ)
	if !ok {
		return nil, bundle.ErrUnknownType
	}
	return s.Decode(data)
}

// Known lets the reader tell an unknown type before anything else.
func (d registryDecoder) Known(typ string) bool {
	_, ok := d.r.Lookup(typ)
	return ok
}

// NeedsDependency lets the reader reject a delta without the base it
// applies on: a type that depends on exactly one version of another.
func (d registryDecoder) NeedsDependency(typ string) bool {
	s, ok := d.r.Lookup(typ)
	return ok && s.DependsOn != "" && s.Rule == bundle.Exactly
}

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
