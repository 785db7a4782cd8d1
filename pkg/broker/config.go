package broker

import (
	"errors"
	"fmt"
)

// Defaults applied by Start to zero-valued Config fields.
const (
	// DefaultPartitions is the partition count of seeded and auto-created
	// topics. Several partitions let the bridge's per-partition ordering and
	// commit tracking be exercised locally, as in production.
	DefaultPartitions int32 = 8

	// DefaultMaxMessageBytes is the largest record batch the broker accepts.
	// Kafka's own default (about 1 MiB) is below the bridge's default
	// --max-bundle-bytes (4 MiB), so large hubs could not be simulated.
	DefaultMaxMessageBytes = 16 << 20
)

// Config configures an embedded broker.
type Config struct {
	// Port to listen on at 127.0.0.1; 0 picks a free port.
	Port int
	// DataDir keeps the broker's state on disk across restarts; "" keeps it
	// in memory only.
	DataDir string
	// Topics are created at start if they do not exist yet. Other topics
	// are created on first use by clients that ask for it.
	Topics []string
	// Partitions of every created topic; 0 means DefaultPartitions.
	Partitions int32
	// ClusterID reported to clients. "" generates a random one, so that a
	// broker started on a fresh data directory never looks like the cluster
	// a bridge stored offsets for. A data directory that already holds a
	// cluster keeps the id it was created with; Broker.ClusterID reports
	// the one in effect.
	ClusterID string
	// MaxMessageBytes is the broker's message.max.bytes; 0 means
	// DefaultMaxMessageBytes.
	MaxMessageBytes int
}

// Validate checks the configuration.
func (c *Config) Validate() error {
	var errs []error
	if c.Port < 0 || c.Port > 65535 {
		errs = append(errs, fmt.Errorf("port %d out of range 0..65535", c.Port))
	}
	if c.Partitions < 0 {
		errs = append(errs, fmt.Errorf("partitions must not be negative, got %d", c.Partitions))
	}
	if c.MaxMessageBytes < 0 {
		errs = append(errs, fmt.Errorf("max message bytes must not be negative, got %d", c.MaxMessageBytes))
	}
	for _, t := range c.Topics {
		if t == "" {
			errs = append(errs, errors.New("empty topic name"))
		}
	}
	return errors.Join(errs...)
}

func (c Config) withDefaults() Config {
	if c.Partitions == 0 {
		c.Partitions = DefaultPartitions
	}
	if c.MaxMessageBytes == 0 {
		c.MaxMessageBytes = DefaultMaxMessageBytes
	}
	return c
}
