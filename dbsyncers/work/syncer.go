package work

import (
	"fmt"

	"github.com/jackc/pgx/v5/pgtype"

	"github.com/stbridge/stb/dbsyncers"
	"github.com/stbridge/stb/pkg/bundle"
	"github.com/stbridge/stb/pkg/db"
	"github.com/stbridge/stb/pkg/deadletter"
)

// Syncers returns the family's bundle types: work.status, a delta of one
// cluster without dependency that takes equal versions. Every bundle has
// version 0.0, so neither a unit nor stb.bundle_versions ever drops one
// as stale; the order per resource is the fence pair, which Merge and the
// write compare.
func Syncers() []dbsyncers.Syncer {
	return []dbsyncers.Syncer{{
		TypeInfo:     bundle.TypeInfo{Name: BundleType, Kind: bundle.Delta, Rule: bundle.NoDependency, TakesEqual: true},
		DecodeBundle: decode,
		Plan:         plan,
		Merge:        merge,
	}}
}

// HubTables returns the family's table of a cluster's rows, for a hub
// delete or reset of the cluster (profiles.Profile.HubTables): its rows
// name the cluster in column cluster, and it is outside the schemas a
// delete searches for a hub column.
func HubTables() []db.HubTable {
	return []db.HubTable{{Table: "work.resource_status", Column: "cluster"}}
}

// badPayload marks data the type cannot take.
func badPayload(err error) error {
	return &dbsyncers.PermanentError{Reason: deadletter.BadPayload, Err: err}
}

// upsertSQL writes a cluster's statuses, one per resource, each only over
// a stored row of a smaller fence pair and of the same cluster. A status
// whose resource is stored for another cluster is not written: it becomes
// a dead letter of its own (cluster_mismatch) in the same statement, so
// that the cluster's other statuses are written and the bad one is said
// once, with where it was read. (A resource first written by two clusters
// at the same moment, in two transactions, keeps the first; the second's
// update is refused by the WHERE without a letter.)
//
// The CTEs all run to completion whether the final INSERT reads them or
// not, against one snapshot: mismatch sees the rows as they were before
// the statement.
const upsertSQL = `
WITH s AS (
	SELECT * FROM unnest($1::text[], $2::text[], $3::text[], $4::text[], $5::bigint[], $6::bigint[],
		$7::boolean[], $8::text[], $9::text[], $10::text[], $11::text[], $12::text[], $13::timestamptz[],
		$14::text[], $15::integer[], $16::bigint[])
	AS s(source, resource_id, cluster, agent, resource_version, sequence_id,
		deleted, status_hash, status, metadata, event_type, event_id, event_time,
		topic, "partition", "offset")
), mismatch AS (
	SELECT s.*, r.cluster AS stored_cluster
	FROM s JOIN work.resource_status r USING (source, resource_id)
	WHERE r.cluster <> s.cluster
), written AS (
	INSERT INTO work.resource_status AS t (source, resource_id, cluster, agent, resource_version, sequence_id,
		status, status_hash, metadata, event_type, event_id, event_time, deleted, deleted_at,
		topic, "partition", "offset", updated_at)
	SELECT s.source, s.resource_id, s.cluster, s.agent, s.resource_version, s.sequence_id,
		s.status::jsonb, s.status_hash, s.metadata::jsonb, s.event_type, s.event_id, s.event_time,
		s.deleted, CASE WHEN s.deleted THEN coalesce(s.event_time, now()) END,
		s.topic, s."partition", s."offset", now()
	FROM s
	WHERE NOT EXISTS (SELECT FROM mismatch m WHERE m.source = s.source AND m.resource_id = s.resource_id)
	ON CONFLICT (source, resource_id) DO UPDATE SET
		agent            = excluded.agent,
		resource_version = excluded.resource_version,
		sequence_id      = excluded.sequence_id,
		status           = excluded.status,
		status_hash      = excluded.status_hash,
		metadata         = coalesce(excluded.metadata, t.metadata),
		event_type       = excluded.event_type,
		event_id         = excluded.event_id,
		event_time       = excluded.event_time,
		deleted          = excluded.deleted,
		deleted_at       = excluded.deleted_at,
		topic            = excluded.topic,
		"partition"      = excluded."partition",
		"offset"         = excluded."offset",
		updated_at       = excluded.updated_at
	WHERE (t.resource_version, t.sequence_id) < (excluded.resource_version, excluded.sequence_id)
	  AND t.cluster = excluded.cluster
)
INSERT INTO stb.dead_letters AS d (hub, bundle_type, topic, "partition", "offset", reason, error, headers, data)
SELECT m.cluster, '` + BundleType + `', m.topic, m."partition", m."offset", '` + string(deadletter.ClusterMismatch) + `',
	format('resource %s of source %s is stored for cluster %s; a status from cluster %s is refused',
		m.resource_id, m.source, m.stored_cluster, m.cluster),
	jsonb_build_object('ce_type', m.event_type, 'ce_id', m.event_id, 'ce_source', m.agent,
		'ce_clustername', m.cluster, 'ce_originalsource', m.source, 'ce_resourceid', m.resource_id,
		'ce_resourceversion', m.resource_version::text, 'ce_sequenceid', m.sequence_id::text),
	convert_to(coalesce(m.status, ''), 'UTF8')
FROM mismatch m
ON CONFLICT DO NOTHING`

// plan writes a group of one cluster's work.status bundles: their
// statuses folded per resource (the greatest fence of each), with one
// statement.
func plan(bundles []*bundle.Bundle) (dbsyncers.Write, error) {
	var acc any
	for _, b := range bundles {
		p, ok := b.Payload.(*Payload)
		if !ok || p == nil {
			return dbsyncers.Write{}, badPayload(fmt.Errorf("%s bundle of cluster %q has payload %T, want *work.Payload", b.Type, b.Hub, b.Payload))
		}
		for _, s := range p.Statuses {
			if s.Cluster != b.Hub {
				return dbsyncers.Write{}, &dbsyncers.PermanentError{Reason: deadletter.BadGroup,
					Err: fmt.Errorf("status of resource %s (cluster %q) in a bundle of cluster %q", s.ResourceID, s.Cluster, b.Hub)}
			}
		}
		if acc == nil {
			acc = p
			continue
		}
		acc = merge(acc, p)
	}
	p, ok := acc.(*Payload)
	if !ok {
		return dbsyncers.Write{}, badPayload(fmt.Errorf("work.status group of cluster %q: %+v", bundles[0].Hub, acc))
	}
	n := len(p.Statuses)
	if n == 0 {
		return dbsyncers.Write{}, nil
	}
	sources, ids, clusters, agents := make([]string, n), make([]string, n), make([]string, n), make([]string, n)
	versions, seqs, deleted := make([]int64, n), make([]int64, n), make([]bool, n)
	hashes, statuses, metas := make([]pgtype.Text, n), make([]pgtype.Text, n), make([]pgtype.Text, n)
	types, eventIDs, times := make([]string, n), make([]string, n), make([]pgtype.Timestamptz, n)
	topics, partitions, offsets := make([]string, n), make([]int32, n), make([]int64, n)
	for i, s := range p.Statuses {
		sources[i], ids[i], clusters[i], agents[i] = s.Source, s.ResourceID, s.Cluster, s.Agent
		versions[i], seqs[i], deleted[i] = s.ResourceVersion, s.SequenceID, s.Deleted
		hashes[i] = pgtype.Text{String: s.StatusHash, Valid: s.StatusHash != ""}
		statuses[i] = pgtype.Text{String: string(s.Status), Valid: s.Status != nil}
		metas[i] = pgtype.Text{String: string(s.Metadata), Valid: s.Metadata != nil}
		types[i], eventIDs[i] = s.Type, s.ID
		times[i] = pgtype.Timestamptz{Time: s.Time, Valid: !s.Time.IsZero()}
		topics[i], partitions[i], offsets[i] = s.Topic, s.Partition, s.Offset
	}
	return dbsyncers.Write{Statements: []dbsyncers.Statement{{What: "upsert work statuses", SQL: upsertSQL,
		Args: []any{sources, ids, clusters, agents, versions, seqs, deleted, hashes, statuses, metas,
			types, eventIDs, times, topics, partitions, offsets}}}}, nil
}
