package main

import (
	"context"
	"errors"
	"fmt"

	wf "github.com/stbridge/stb/dbsyncers/work"
	"github.com/stbridge/stb/internal/profiles/work"
	"github.com/stbridge/stb/pkg/db"
	"github.com/stbridge/stb/pkg/transport"
)

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
	st, err := work.Resync(ctx, *url, transport.PublisherConfig{Brokers: *brokers, Properties: props}, *topic, clusters, logger)
	if err != nil {
		return err
	}
	fmt.Printf("work resync: %d requests listing %d status hashes sent to %d clusters\n", st.Requests, st.Hashes, st.Clusters)
	return nil
}
