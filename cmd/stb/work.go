package main

import (
	"context"
	"errors"
	"fmt"
	"time"

	"go.uber.org/zap"

	wf "github.com/stbridge/stb/dbsyncers/work"
	"github.com/stbridge/stb/internal/bridge"
	"github.com/stbridge/stb/pkg/db"
	"github.com/stbridge/stb/pkg/transport"
)

// workResyncTimeout bounds a status resync: reading the hashes and handing
// every request to Kafka.
const workResyncTimeout = 2 * time.Minute

// workCmd is `stb work`, the ManifestWork status family's commands.
func workCmd(ctx context.Context, args []string) error {
	if len(args) == 0 || args[0] != "resync" {
		return errors.New("usage: stb work resync [flags]  (see stb work resync --help)")
	}
	fs := newFlagSet("work resync", "Ask work agents to send again the ManifestWork statuses that differ from the stored ones: publish,\nper cluster and source, status.resync_request events listing the stored status hashes (at most\n1,000 entries and 512 KiB each), as a source does. The answers come back through the bridge's fence.")
	url := fs.String("database-url", db.DefaultURL, "PostgreSQL URL")
	brokers := fs.String("kafka-brokers", "127.0.0.1:9092", "Kafka bootstrap servers")
	topic := fs.String("topic", wf.DefaultResyncTopic, "topic of the requests; {source} and {cluster} are replaced (sdk-go later used sourceevents.{source}.{cluster})")
	var clusters []string
	fs.Var(newListValue(&clusters, nil), "cluster", "clusters to ask, comma-separated; empty asks every cluster with a stored status")
	props := map[string]string{}
	fs.Var(propertyFlag(props), "kafka-property", "extra librdkafka property key=value (repeatable)")
	if err := parseFlags(fs, args[1:]); err != nil {
		return err
	}
	logger, err := newLogger("warn", "console")
	if err != nil {
		return err
	}
	st, err := publishWorkResync(ctx, *url, transport.PublisherConfig{Brokers: *brokers, Properties: props}, *topic, clusters, logger)
	if err != nil {
		return err
	}
	fmt.Printf("work resync: %d requests listing %d status hashes sent to %d clusters\n", st.Requests, st.Hashes, st.Clusters)
	return nil
}

// publishWorkResync sends the status resync requests of clusters (all
// when empty) and waits until Kafka has them.
func publishWorkResync(ctx context.Context, url string, pcfg transport.PublisherConfig, topic string, clusters []string, logger *zap.Logger) (wf.ResyncStats, error) {
	ctx, cancel := context.WithTimeout(ctx, workResyncTimeout)
	defer cancel()
	pool, err := db.Connect(ctx, url, 2)
	if err != nil {
		return wf.ResyncStats{}, err
	}
	defer pool.Close()
	pub, err := transport.NewPublisher(pcfg, logger)
	if err != nil {
		return wf.ResyncStats{}, err
	}
	defer pub.Close()
	st, err := wf.Resync(ctx, pool, pub, topic, clusters, time.Now())
	if err != nil {
		return st, fmt.Errorf("work resync: %w", err)
	}
	if err := pub.Flush(ctx); err != nil {
		return st, fmt.Errorf("work resync: %w", err)
	}
	return st, nil
}

// startupWorkResync is `stb run --work-resync-topic`: once the database is
// migrated and before the bridge reads, every cluster's agent is asked for
// the statuses that differ from the stored ones. A failure is logged, not
// fatal: the agents still send every change.
func startupWorkResync(ctx context.Context, cfg bridge.Config, topic string, logger *zap.Logger) {
	st, err := publishWorkResync(ctx, cfg.DatabaseURL, transport.PublisherConfig{Brokers: cfg.Reader.Brokers, Properties: cfg.Reader.Properties},
		topic, nil, logger.Named("work-resync"))
	if err != nil {
		logger.Warn("work status resync at start-up failed", zap.Error(err))
		return
	}
	logger.Info("work status resync requested", zap.String("topic", topic), zap.Int("clusters", st.Clusters),
		zap.Int("requests", st.Requests), zap.Int("hashes", st.Hashes))
}
