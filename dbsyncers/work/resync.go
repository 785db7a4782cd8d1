package work

import (
	"context"
	"encoding/json"
	"errors"
	"fmt"
	"strings"
	"time"

	"github.com/cloudevents/sdk-go/protocol/kafka_confluent/v2"
	"github.com/cloudevents/sdk-go/v2/binding"
	"github.com/cloudevents/sdk-go/v2/event"
	"github.com/confluentinc/confluent-kafka-go/v2/kafka"
	"github.com/google/uuid"
	"github.com/jackc/pgx/v5"
)

// The status resync: a source asks a cluster's agent for the statuses
// that differ from what it holds by sending, per cluster, a
// status.resync_request whose data lists the status hash of every work it
// has (sdk-go generic/clients/sourceclient.go Resync; the payload is
// generic/payload/payload.go ResourceStatusHashList). The agent answers
// with a status.resync_response for each of its works whose hash differs
// (clients/agentclient.go respondResyncStatusRequest); a work missing from
// a non-empty list is left alone, so a long list may go in several
// requests, each reconciling its own works. The answers come back through
// the same fence as any status.

// DefaultResyncTopic is where sdk-go's Kafka transport had sources
// publish to agents (generic/options/kafka/sourceoptions.go).
const DefaultResyncTopic = "sourceevents"

// Resync limits: a request lists at most MaxResyncEntries hashes and its
// data is at most MaxResyncBytes (brokers and MQTT bridges refuse larger
// messages; 512 KiB is what MQTT brokers commonly allow).
const (
	MaxResyncEntries = 1000
	MaxResyncBytes   = 512 << 10
)

// ResourceStatusHash is one entry of a resync request, as sdk-go's
// payload.ResourceStatusHash encodes it.
type ResourceStatusHash struct {
	ResourceID string `json:"resourceID"`
	StatusHash string `json:"statusHash"`
}

// statusHashList is the data of a resync request (payload.ResourceStatusHashList).
type statusHashList struct {
	Hashes []ResourceStatusHash `json:"statusHashes"`
}

// StoredHashes returns the status hashes stored for a cluster's live
// works (tombstones left out: the agent no longer has them), by source,
// sorted by resource id. A status stored without a hash is listed with an
// empty one, which never matches: the agent sends it again.
func StoredHashes(ctx context.Context, db Querier, cluster string) (map[string][]ResourceStatusHash, error) {
	rows, err := db.Query(ctx, `
		SELECT source, resource_id, coalesce(status_hash, '') FROM work.resource_status
		WHERE cluster = $1 AND NOT deleted ORDER BY source, resource_id`, cluster)
	if err != nil {
		return nil, fmt.Errorf("status hashes of %q: %w", cluster, err)
	}
	out := map[string][]ResourceStatusHash{}
	var source string
	var h ResourceStatusHash
	_, err = pgx.ForEachRow(rows, []any{&source, &h.ResourceID, &h.StatusHash}, func() error {
		out[source] = append(out[source], h)
		return nil
	})
	if err != nil {
		return nil, fmt.Errorf("status hashes of %q: %w", cluster, err)
	}
	return out, nil
}

// StoredClusters returns every cluster with a live work stored.
func StoredClusters(ctx context.Context, db Querier) ([]string, error) {
	rows, err := db.Query(ctx, `SELECT DISTINCT cluster FROM work.resource_status WHERE NOT deleted ORDER BY cluster`)
	if err != nil {
		return nil, fmt.Errorf("work clusters: %w", err)
	}
	return pgx.CollectRows(rows, pgx.RowTo[string])
}

// ResyncBatches cuts hashes into the lists of successive requests, each
// of at most maxEntries entries and whose data encodes in at most
// maxBytes. No list is empty (an empty list asks for every status); none
// is returned for no hashes.
func ResyncBatches(hashes []ResourceStatusHash, maxEntries, maxBytes int) ([][]ResourceStatusHash, error) {
	const wrapper = len(`{"statusHashes":[]}`)
	var out [][]ResourceStatusHash
	start, size := 0, wrapper
	for i, h := range hashes {
		entry, err := json.Marshal(h)
		if err != nil {
			return nil, err
		}
		n := len(entry)
		if wrapper+n > maxBytes {
			return nil, fmt.Errorf("the hash of resource %q alone exceeds %d bytes", h.ResourceID, maxBytes)
		}
		if i > start {
			n++ // the comma
		}
		if i-start == maxEntries || size+n > maxBytes {
			out = append(out, hashes[start:i])
			start, size, n = i, wrapper, len(entry)
		}
		size += n
	}
	if start < len(hashes) {
		out = append(out, hashes[start:])
	}
	return out, nil
}

// ResyncTopic returns the topic of a request: topic, with "{source}" and
// "{cluster}" replaced (sdk-go's Kafka transport sent to "sourceevents",
// later to "sourceevents.<source>.<cluster>").
func ResyncTopic(topic, source, cluster string) string {
	return strings.NewReplacer("{source}", source, "{cluster}", cluster).Replace(topic)
}

// EncodeResyncRequest returns the Kafka message of one request of source
// to cluster's agent, as sdk-go's source client builds it (types.
// NewEventBuilder(sourceID, status.resync_request).WithClusterName): a
// CloudEvents 1.0 event from source with the extensions clustername and
// originalsource (empty, as the builder sets it), in binary mode, keyed
// "<source>@<cluster>" (generic/options/kafka/sourceoptions.go).
func EncodeResyncRequest(topic, source, cluster string, hashes []ResourceStatusHash, at time.Time) (*kafka.Message, error) {
	if source == "" || cluster == "" {
		return nil, errors.New("a status resync request needs a source and a cluster")
	}
	ev := event.New()
	ev.SetID(uuid.NewString())
	ev.SetType(ResyncRequest)
	ev.SetSource(source)
	ev.SetTime(at)
	ev.SetExtension(ExtClusterName, cluster)
	ev.SetExtension(ExtOriginalSource, "")
	if hashes == nil {
		hashes = []ResourceStatusHash{}
	}
	if err := ev.SetData(event.ApplicationJSON, statusHashList{Hashes: hashes}); err != nil {
		return nil, fmt.Errorf("resync request: %w", err)
	}
	t := ResyncTopic(topic, source, cluster)
	msg := &kafka.Message{TopicPartition: kafka.TopicPartition{Topic: &t, Partition: kafka.PartitionAny}, Key: []byte(source + "@" + cluster)}
	if err := kafka_confluent.WriteProducerMessage(context.Background(), binding.ToMessage(&ev), msg); err != nil {
		return nil, fmt.Errorf("resync request: %w", err)
	}
	return msg, nil
}

// Publisher sends a message; transport.Publisher has it.
type Publisher interface {
	PublishMessage(ctx context.Context, msg *kafka.Message) error
}

// ResyncStats counts what Resync sent.
type ResyncStats struct {
	Clusters, Requests, Hashes int
}

// Resync publishes, for each cluster (every cluster with a live work
// stored when clusters is empty) and each source of its works, the
// status resync requests listing the stored hashes, in batches within
// MaxResyncEntries and MaxResyncBytes, to topic (see ResyncTopic).
func Resync(ctx context.Context, db Querier, pub Publisher, topic string, clusters []string, at time.Time) (ResyncStats, error) {
	var st ResyncStats
	if len(clusters) == 0 {
		var err error
		if clusters, err = StoredClusters(ctx, db); err != nil {
			return st, err
		}
	}
	for _, cluster := range clusters {
		bySource, err := StoredHashes(ctx, db, cluster)
		if err != nil {
			return st, err
		}
		if len(bySource) > 0 {
			st.Clusters++
		}
		for source, hashes := range bySource {
			batches, err := ResyncBatches(hashes, MaxResyncEntries, MaxResyncBytes)
			if err != nil {
				return st, fmt.Errorf("cluster %q, source %q: %w", cluster, source, err)
			}
			for _, b := range batches {
				msg, err := EncodeResyncRequest(topic, source, cluster, b, at)
				if err != nil {
					return st, err
				}
				if err := pub.PublishMessage(ctx, msg); err != nil {
					return st, fmt.Errorf("cluster %q, source %q: %w", cluster, source, err)
				}
				st.Requests++
				st.Hashes += len(b)
			}
		}
	}
	return st, nil
}
