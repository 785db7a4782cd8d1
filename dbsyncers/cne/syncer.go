package cne

import (
	"fmt"
	"slices"
	"time"

	"github.com/jackc/pgx/v5/pgtype"

	"github.com/stbridge/stb/dbsyncers"
	"github.com/stbridge/stb/pkg/bundle"
	"github.com/stbridge/stb/pkg/deadletter"
)

// Payload is a cne.event bundle's decoded data: values sorted by key, one
// per key, the latest by Value.After. Merge and Plan build new ones and
// never change one they are given.
type Payload struct {
	Values []Value `json:"values"`
}

// newPayload returns the payload of one event's values.
func newPayload(values []Value) *Payload {
	return merge(&Payload{}, values)
}

// merge returns older's values with the values of vs folded in, the
// latest winning per key. vs need not be sorted.
func merge(older *Payload, vs []Value) *Payload {
	sorted := slices.Clone(vs)
	slices.SortStableFunc(sorted, func(a, b Value) int { return compareKey(&a, &b) })
	// One per key within vs: the latest.
	dedup := sorted[:0]
	for _, v := range sorted {
		if n := len(dedup); n > 0 && compareKey(&dedup[n-1], &v) == 0 {
			if v.After(&dedup[n-1]) {
				dedup[n-1] = v
			}
			continue
		}
		dedup = append(dedup, v)
	}
	out := make([]Value, 0, len(older.Values)+len(dedup))
	a, b := older.Values, dedup
	for len(a) > 0 && len(b) > 0 {
		switch c := compareKey(&a[0], &b[0]); {
		case c < 0:
			out, a = append(out, a[0]), a[1:]
		case c > 0:
			out, b = append(out, b[0]), b[1:]
		default:
			w := a[0]
			if b[0].After(&w) {
				w = b[0]
			}
			out, a, b = append(out, w), a[1:], b[1:]
		}
	}
	out = append(append(out, a...), b...)
	return &Payload{Values: out}
}

// Syncer returns the syncer of cne.event bundles. The type is a delta
// without dependency that takes equal versions: every event of a node is
// kept, in order, and folded per key (Merge) when a node's waiting events
// grow past --max-delta-bytes; its constant version never makes the
// (node, type) fence drop one. The fence that counts is per key.
func Syncer() dbsyncers.Syncer {
	return dbsyncers.Syncer{
		TypeInfo:     bundle.TypeInfo{Name: BundleType, Kind: bundle.Delta, Rule: bundle.NoDependency, TakesEqual: true},
		DecodeBundle: decode,
		Plan:         plan,
		Merge:        Merge,
	}
}

// Syncers returns the family's syncers, for internal/profiles.
func Syncers() []dbsyncers.Syncer { return []dbsyncers.Syncer{Syncer()} }

// decode reads a bundle Family.Bundle made, its event's Context (Attrs)
// and data (Raw), into the payload.
func decode(b *bundle.Bundle) (any, error) {
	ctx, err := contextOf(b)
	if err != nil {
		return nil, err
	}
	values, _, err := Parse(*ctx, b.Raw)
	if err != nil {
		return nil, err
	}
	return newPayload(values), nil
}

// Merge folds newer into older, the latest value winning per key
// (conflation.MergeFunc). Anything but two payloads yields a value plan
// refuses, so the group is dead-lettered rather than a value lost.
func Merge(older, newer any) any {
	o, ok1 := older.(*Payload)
	n, ok2 := newer.(*Payload)
	if !ok1 || !ok2 || o == nil || n == nil {
		return unmergeable{fmt.Sprintf("%T", older), fmt.Sprintf("%T", newer)}
	}
	return merge(o, n.Values)
}

type unmergeable struct{ Older, Newer string }

// upsertSQL writes the latest value of each key, unless the row holds a
// value at least as late by Value.After's order: time, then topic (in
// bytes, as Go compares strings: COLLATE "C"), partition and offset. A copy read again
// (a replay after a restart, a duplicate publish at the same position)
// writes nothing; a late copy or a node whose clock stepped back writes
// nothing until its times pass the stored one.
const upsertSQL = `
INSERT INTO stb.cne_state AS s (event_type, resource_address, data_type, hub, value_type, value, value_text,
	value_numeric, event_time, event_time_ns, event_id, event_source, data_version, topic, "partition", "offset")
SELECT u.t, u.a, u.d, u.n, u.vt, u.v::jsonb, u.tx, u.num::numeric, u.et, u.ns, u.id, u.src, u.ver, u.top, u.part, u.off
FROM unnest($1::text[], $2::text[], $3::text[], $4::text[], $5::text[], $6::text[], $7::text[], $8::text[],
	$9::timestamptz[], $10::bigint[], $11::text[], $12::text[], $13::text[], $14::text[], $15::int[], $16::bigint[])
	AS u(t, a, d, n, vt, v, tx, num, et, ns, id, src, ver, top, part, off)
ON CONFLICT (event_type, resource_address, data_type) DO UPDATE SET
	hub = excluded.hub, value_type = excluded.value_type, value = excluded.value, value_text = excluded.value_text,
	value_numeric = excluded.value_numeric, event_time = excluded.event_time, event_time_ns = excluded.event_time_ns,
	event_id = excluded.event_id, event_source = excluded.event_source, data_version = excluded.data_version,
	topic = excluded.topic, "partition" = excluded."partition", "offset" = excluded."offset", updated_at = now()
WHERE (excluded.event_time_ns, excluded.topic COLLATE "C", excluded."partition", excluded."offset")
    > (s.event_time_ns, s.topic COLLATE "C", s."partition", s."offset")`

// aliveSQL records that a node was heard from, in stb.hub_heartbeats,
// as a heartbeat bundle does for a hub: nodes send no heartbeats, and
// --hub-inactive-after measures a hub's silence from there. last_timestamp
// is the newest time the node stamped on the events written. The row is
// rewritten at most every few seconds: inactivity is a matter of minutes,
// and a busy node would otherwise rewrite it with every job.
const aliveSQL = `
INSERT INTO stb.hub_heartbeats AS hb (hub, last_timestamp, received_at)
VALUES ($1, $2, now())
ON CONFLICT (hub) DO UPDATE SET last_timestamp = excluded.last_timestamp, received_at = excluded.received_at
WHERE hb.received_at < now() - interval '5 seconds'`

// plan writes a node's events, folded per key, as one upsert, and that
// the node is alive.
func plan(bundles []*bundle.Bundle) (dbsyncers.Write, error) {
	acc := &Payload{}
	for _, b := range bundles {
		p, ok := b.Payload.(*Payload)
		if !ok || p == nil {
			return dbsyncers.Write{}, &dbsyncers.PermanentError{Reason: deadletter.BadPayload,
				Err: fmt.Errorf("%s bundle of node %q has payload %T, want %T", b.Type, b.Hub, b.Payload, p)}
		}
		for i := range p.Values {
			if p.Values[i].Node != b.Hub {
				return dbsyncers.Write{}, &dbsyncers.PermanentError{Reason: deadletter.BadGroup,
					Err: fmt.Errorf("value %q of node %q in a bundle of node %q", p.Values[i].Address, p.Values[i].Node, b.Hub)}
			}
		}
		acc = merge(acc, p.Values)
	}
	n := len(acc.Values)
	if n == 0 {
		return dbsyncers.Write{}, nil
	}
	var (
		types, addrs, dataTypes, nodes = make([]string, n), make([]string, n), make([]string, n), make([]string, n)
		vts, raws, ids, srcs, vers     = make([]string, n), make([]string, n), make([]string, n), make([]string, n), make([]string, n)
		texts, nums                    = make([]pgtype.Text, n), make([]pgtype.Text, n)
		times                          = make([]pgtype.Timestamptz, n)
		nss, offs                      = make([]int64, n), make([]int64, n)
		topics                         = make([]string, n)
		parts                          = make([]int32, n)
	)
	for i := range acc.Values {
		v := &acc.Values[i]
		types[i], addrs[i], dataTypes[i], nodes[i] = v.Type, v.Address, v.DataType, v.Node
		vts[i], raws[i], ids[i], srcs[i], vers[i] = string(v.ValueType), string(v.Raw), v.ID, v.Source, v.DataVersion
		texts[i] = pgtype.Text{String: v.Text, Valid: v.ValueType != RedfishEvent}
		nums[i] = pgtype.Text{String: v.Text, Valid: v.ValueType == Decimal}
		times[i] = pgtype.Timestamptz{Time: v.Time(), Valid: true}
		nss[i], topics[i], parts[i], offs[i] = v.TimeNS, v.Origin.Topic, v.Origin.Partition, v.Origin.Offset
	}
	newest := slices.Max(nss)
	return dbsyncers.Write{Statements: []dbsyncers.Statement{
		{What: "upsert cne state", SQL: upsertSQL,
			Args: []any{types, addrs, dataTypes, nodes, vts, raws, texts, nums, times, nss, ids, srcs, vers, topics, parts, offs}},
		{What: "record the node alive", SQL: aliveSQL, Args: []any{bundles[0].Hub, time.Unix(0, newest).UTC()}},
	}}, nil
}
