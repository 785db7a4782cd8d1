package work

import (
	"context"
	"fmt"
	"time"

	"go.uber.org/zap"

	wf "github.com/stbridge/stb/dbsyncers/work"
	"github.com/stbridge/stb/internal/profiles/profile"
	"github.com/stbridge/stb/pkg/db"
	"github.com/stbridge/stb/pkg/transport"
)

// ResyncTimeout bounds a status resync: reading the hashes and handing
// every request to Kafka.
const ResyncTimeout = 2 * time.Minute

// Resync sends the status resync requests of clusters (all when empty)
// to topic, as `stb work resync` does, and waits until Kafka has them:
// per cluster and source, status.resync_request events listing the stored
// status hashes of the database at url (dbsyncers/work Resync).
func Resync(ctx context.Context, url string, pcfg transport.PublisherConfig, topic string, clusters []string, logger *zap.Logger) (wf.ResyncStats, error) {
	ctx, cancel := context.WithTimeout(ctx, ResyncTimeout)
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

// startupResync is `stb run --work-resync-topic`: once the database is
// migrated and before the bridge reads, every cluster's agent is asked for
// the statuses that differ from the stored ones.
func startupResync(ctx context.Context, env profile.StartupEnv) ([]zap.Field, error) {
	st, err := Resync(ctx, env.DatabaseURL, env.Kafka, env.Value, nil, env.Logger)
	if err != nil {
		return nil, err
	}
	return []zap.Field{zap.String("topic", env.Value), zap.Int("clusters", st.Clusters),
		zap.Int("requests", st.Requests), zap.Int("hashes", st.Hashes)}, nil
}
