package broker

import (
	"context"
	"crypto/rand"
	"encoding/base64"
	"errors"
	"fmt"
	"strconv"
	"sync"
	"time"

	"github.com/twmb/franz-go/pkg/kerr"
	"github.com/twmb/franz-go/pkg/kfake"
	"github.com/twmb/franz-go/pkg/kgo"
	"github.com/twmb/franz-go/pkg/kmsg"
	"go.uber.org/zap"
)

// clusterIDTimeout bounds the metadata round trip Start makes to its own
// listener; it only fails if the process cannot reach its own loopback port.
const clusterIDTimeout = 10 * time.Second

// Broker is a running embedded Kafka broker.
type Broker struct {
	cluster   *kfake.Cluster
	addr      string
	clusterID string
	logger    *zap.Logger

	closeOnce sync.Once
}

// Start starts a single-node broker listening on 127.0.0.1 and creates the
// configured topics. Close it when done.
func Start(cfg Config, logger *zap.Logger) (*Broker, error) {
	if err := cfg.Validate(); err != nil {
		return nil, fmt.Errorf("broker config: %w", err)
	}
	cfg = cfg.withDefaults()
	if logger == nil {
		logger = zap.NewNop()
	}
	if cfg.ClusterID == "" {
		id, err := randomClusterID()
		if err != nil {
			return nil, err
		}
		cfg.ClusterID = id
	}

	opts := []kfake.Opt{
		// One node is enough: clients learn its address from metadata,
		// and a single port is what an operator passes as bootstrap.
		kfake.NumBrokers(1),
		kfake.ClusterID(cfg.ClusterID),
		kfake.AllowAutoTopicCreation(),
		kfake.DefaultNumPartitions(int(cfg.Partitions)),
		kfake.BrokerConfigs(map[string]string{"message.max.bytes": strconv.Itoa(cfg.MaxMessageBytes)}),
		kfake.WithLogger(zapLogger{logger}),
	}
	if cfg.Port != 0 {
		opts = append(opts, kfake.Ports(cfg.Port))
	}
	if cfg.DataDir != "" {
		opts = append(opts, kfake.DataDir(cfg.DataDir))
	}
	cluster, err := kfake.NewCluster(opts...)
	if err != nil {
		return nil, fmt.Errorf("start embedded kafka: %w", err)
	}
	b := &Broker{cluster: cluster, addr: cluster.ListenAddrs()[0], logger: logger}

	// CreateTopic rather than the SeedTopics option: seeds are ignored when
	// the data directory already holds a cluster, but topics added to the
	// configuration since must still appear.
	for _, t := range cfg.Topics {
		if err := cluster.CreateTopic(t, cfg.Partitions, nil); err != nil && !errors.Is(err, kerr.TopicAlreadyExists) {
			b.Close()
			return nil, fmt.Errorf("create topic %q: %w", t, err)
		}
	}

	// Ask the running broker rather than trusting cfg.ClusterID: a data
	// directory from an earlier run restores the id it was created with.
	ctx, cancel := context.WithTimeout(context.Background(), clusterIDTimeout)
	defer cancel()
	b.clusterID, err = fetchClusterID(ctx, b.addr)
	if err != nil {
		b.Close()
		return nil, err
	}
	if b.clusterID != cfg.ClusterID {
		logger.Info("data directory keeps its earlier cluster id",
			zap.String("clusterId", b.clusterID), zap.String("configured", cfg.ClusterID))
	}
	logger.Info("embedded kafka started",
		zap.String("addr", b.addr), zap.String("clusterId", b.clusterID),
		zap.String("dataDir", cfg.DataDir), zap.Strings("topics", cfg.Topics))
	return b, nil
}

// Addr returns the bootstrap address, "127.0.0.1:<port>".
func (b *Broker) Addr() string { return b.addr }

// ClusterID returns the cluster id the broker reports to clients.
func (b *Broker) ClusterID() string { return b.clusterID }

// Close stops the broker and, with a data directory, writes its state to
// disk. It is safe to call more than once.
func (b *Broker) Close() {
	b.closeOnce.Do(func() {
		b.cluster.Close()
		b.logger.Info("embedded kafka stopped", zap.String("addr", b.addr))
	})
}

// fetchClusterID reads the cluster id from a metadata response over the
// Kafka protocol.
func fetchClusterID(ctx context.Context, addr string) (string, error) {
	cl, err := kgo.NewClient(kgo.SeedBrokers(addr))
	if err != nil {
		return "", fmt.Errorf("metadata client: %w", err)
	}
	defer cl.Close()
	req := kmsg.NewPtrMetadataRequest()
	req.Topics = []kmsg.MetadataRequestTopic{} // none: we only want the cluster id
	resp, err := req.RequestWith(ctx, cl)
	if err != nil {
		return "", fmt.Errorf("read cluster id from %s: %w", addr, err)
	}
	if resp.ClusterID == nil {
		return "", fmt.Errorf("broker at %s reported no cluster id", addr)
	}
	return *resp.ClusterID, nil
}

// randomClusterID returns an id in Kafka's own format: a base64url-encoded
// random UUID without padding.
func randomClusterID() (string, error) {
	var u [16]byte
	if _, err := rand.Read(u[:]); err != nil {
		return "", fmt.Errorf("generate cluster id: %w", err)
	}
	u[6] = u[6]&0x0f | 0x40 // version 4
	u[8] = u[8]&0x3f | 0x80 // RFC 4122 variant
	return base64.RawURLEncoding.EncodeToString(u[:]), nil
}
