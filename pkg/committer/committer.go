package committer

import (
	"context"
	"errors"
	"fmt"
	"slices"
	"sort"
	"sync"
	"time"

	"github.com/prometheus/client_golang/prometheus"
	"go.uber.org/zap"
)

// Position is a committed place in one partition, as stored in
// status.transport.
type Position struct {
	Topic     string `json:"topic"`
	Partition int32  `json:"partition"`
	Offset    int64  `json:"offset"`
	ClusterID string `json:"clusterId"`
}

// Store persists positions.
type Store interface {
	Save(ctx context.Context, ps []Position) error
}

// Config configures a Committer.
type Config struct {
	// Interval between commits of positions that moved.
	Interval time.Duration
	// Timeout bounds each save of positions, whatever the caller's
	// context says: a database that hangs fails the commit, which the next
	// one retries, instead of holding the commit that a revocation waits
	// for. 0 means DefaultTimeout.
	Timeout time.Duration
}

// Deps are the committer's collaborators.
type Deps struct {
	// Store persists positions; required.
	Store Store
	// Logger; nil logs nothing.
	Logger *zap.Logger
	// Registerer receives the committer's metrics; nil registers none.
	Registerer prometheus.Registerer
	// TopicLabel maps a topic to the value of the metrics' `topic` label;
	// nil labels each topic with itself. The bridge passes
	// transport.TopicLabels.Label: a topic matched by a pattern of
	// --kafka-topics is labelled with the pattern, and its partitions'
	// series are summed into one (README, "Metrics").
	TopicLabel func(topic string) string
}

const (
	// DefaultInterval is the default commit interval.
	DefaultInterval = 5 * time.Second
	// DefaultTimeout is the default bound of one save: a commit is one
	// small statement, so anything near this long is a database in
	// trouble, and it is well below the reader's revocation timeout and
	// librdkafka's max.poll.interval.ms.
	DefaultTimeout = 5 * time.Second
)

// DefaultConfig returns the defaults.
func DefaultConfig() Config { return Config{Interval: DefaultInterval, Timeout: DefaultTimeout} }

// Validate checks the configuration; it changes nothing.
func (c Config) Validate() error {
	if c.Interval <= 0 {
		return fmt.Errorf("commit interval must be positive, got %v", c.Interval)
	}
	if c.Timeout < 0 {
		return fmt.Errorf("commit timeout must not be negative, got %v", c.Timeout)
	}
	return nil
}

func (c Config) withDefaults() Config {
	if c.Timeout == 0 {
		c.Timeout = DefaultTimeout
	}
	return c
}

// Committer owns the Partition trackers of the assigned partitions and
// persists their positions.
//
// Lock order: commitSem, then Committer.mu, then Partition.mu. Store I/O
// happens with neither mutex held. commitSem serialises whole commits, so
// that a position saved is never overwritten by an older one taken before
// it; it is held across the save, so it is a semaphore and not a mutex:
// whoever waits for it (Revoke, from the Kafka rebalance callback) waits
// only until its context ends, and whoever holds it saves within
// Config.Timeout. A hung database therefore costs a revocation at most
// its own deadline, never the poll loop's group membership.
type Committer struct {
	cfg    Config
	store  Store
	logger *zap.Logger

	commitSem chan struct{} // one token: the commit in progress

	mu        sync.Mutex
	parts     map[key]*Partition
	clusterID string
	lastErr   error
	lastOK    time.Time

	metrics *collector
}

type key struct {
	topic     string
	partition int32
}

// New returns a committer persisting to deps.Store.
func New(cfg Config, deps Deps) (*Committer, error) {
	if err := cfg.Validate(); err != nil {
		return nil, err
	}
	if deps.Store == nil {
		return nil, errors.New("committer: a Store is required")
	}
	logger := deps.Logger
	if logger == nil {
		logger = zap.NewNop()
	}
	c := &Committer{cfg: cfg.withDefaults(), store: deps.Store, logger: logger, parts: map[key]*Partition{},
		commitSem: make(chan struct{}, 1)}
	c.metrics = newCollector(c, deps.TopicLabel)
	if deps.Registerer != nil {
		if err := deps.Registerer.Register(c.metrics); err != nil {
			return nil, fmt.Errorf("register committer metrics: %w", err)
		}
	}
	return c, nil
}

// SetClusterID records the Kafka cluster id stored beside each position.
func (c *Committer) SetClusterID(id string) {
	c.mu.Lock()
	c.clusterID = id
	c.mu.Unlock()
}

// Assign starts tracking a partition whose reading starts at start (-1 when
// the broker decides, for example by auto.offset.reset).
func (c *Committer) Assign(topic string, partition int32, start int64) *Partition {
	p := newPartition(topic, partition, start)
	c.mu.Lock()
	c.parts[key{topic, partition}] = p
	c.mu.Unlock()
	return p
}

// Partitions returns the trackers of all assigned partitions, sorted.
func (c *Committer) Partitions() []*Partition {
	c.mu.Lock()
	ps := make([]*Partition, 0, len(c.parts))
	for _, p := range c.parts {
		ps = append(ps, p)
	}
	c.mu.Unlock()
	sort.Slice(ps, func(i, j int) bool {
		if ps[i].Topic != ps[j].Topic {
			return ps[i].Topic < ps[j].Topic
		}
		return ps[i].Partition < ps[j].Partition
	})
	return ps
}

// Revoke commits a partition a last time and stops tracking it. It waits
// for a commit in progress only until ctx ends, and its own save ends by
// ctx or Config.Timeout, whichever comes first: the reader calls it from
// the Kafka rebalance callback, which must return within
// max.poll.interval.ms whatever the database does. When the final commit
// fails, the partition is forgotten anyway and its new owner replays from
// the last position stored.
//
// Once Revoke returns, the partition's position is never stored again,
// not even by a Commit that listed the partitions before and waited for
// this final one: the reader then drops the partition's held bundles,
// which releases their offsets, and a position stored after that would
// make the new owner resume past bundles nobody wrote (docs/design.md, Scaling out).
func (c *Committer) Revoke(ctx context.Context, topic string, partition int32) error {
	c.mu.Lock()
	p, ok := c.parts[key{topic, partition}]
	c.mu.Unlock()
	if !ok {
		return nil
	}
	return c.commit(ctx, []*Partition{p}, true)
}

// Commit persists every position that moved since the last commit, within
// ctx and Config.Timeout.
func (c *Committer) Commit(ctx context.Context) error {
	return c.commit(ctx, c.Partitions(), false)
}

// ErrCommitBusy is returned when ctx ended while waiting for another
// commit to finish: nothing was saved.
var ErrCommitBusy = errors.New("another commit of offsets is still in progress")

// commit saves the positions of parts that moved. A final commit (Revoke)
// then retires parts, whatever became of the save, before it lets another
// commit start: parts listed before are skipped from then on (pending).
func (c *Committer) commit(ctx context.Context, parts []*Partition, final bool) error {
	select {
	case c.commitSem <- struct{}{}:
	case <-ctx.Done():
		if final {
			// The commit in progress computed its positions before
			// the reader drops anything; those waiting skip them.
			c.forget(parts...)
		}
		return fmt.Errorf("%w: %w", ErrCommitBusy, context.Cause(ctx))
	}
	defer func() { <-c.commitSem }()
	if final {
		defer c.forget(parts...) // before the semaphore is released
	}
	ctx, cancel := context.WithTimeout(ctx, c.cfg.Timeout)
	defer cancel()

	c.mu.Lock()
	clusterID := c.clusterID
	c.mu.Unlock()

	var (
		ps    []Position
		moved []*Partition
	)
	for _, p := range parts {
		if off, ok := p.pending(); ok {
			ps = append(ps, Position{Topic: p.Topic, Partition: p.Partition, Offset: off, ClusterID: clusterID})
			moved = append(moved, p)
		}
	}
	var err error
	if len(ps) > 0 {
		err = c.store.Save(ctx, ps)
	}
	var lost *LostError
	if errors.As(err, &lost) {
		// Not a failure: the others were stored, and these partitions
		// belong to another bridge now.
		ps, moved = c.dropLost(ps, moved, lost.Lost)
		err = nil
	}
	c.mu.Lock()
	c.lastErr = err
	if err == nil {
		c.lastOK = time.Now()
	}
	c.mu.Unlock()
	if err != nil {
		c.metrics.commits.WithLabelValues("error").Inc()
		return fmt.Errorf("commit %d positions (within %v): %w", len(ps), c.cfg.Timeout, err)
	}
	for i, p := range moved {
		p.markCommitted(ps[i].Offset)
	}
	if len(ps) > 0 {
		c.metrics.commits.WithLabelValues("ok").Inc()
	}
	return nil
}

// dropLost forgets the partitions whose positions the store refused
// because another bridge claimed them, and returns the positions (and
// their partitions) that were stored. Kafka revokes such a partition from
// this bridge soon; until then what this bridge writes of it is fenced by
// version, and its position is no longer this bridge's to move.
func (c *Committer) dropLost(ps []Position, moved []*Partition, lost []Position) ([]Position, []*Partition) {
	var keptPs []Position
	var keptParts []*Partition
	for i, p := range ps {
		if !slices.Contains(lost, p) {
			keptPs = append(keptPs, p)
			keptParts = append(keptParts, moved[i])
			continue
		}
		c.forget(moved[i])
		c.metrics.commits.WithLabelValues("lost").Inc()
		c.logger.Warn("partition claimed by another bridge; no longer committing it",
			zap.String("topic", p.Topic), zap.Int32("partition", p.Partition), zap.Int64("position", p.Offset))
	}
	return keptPs, keptParts
}

// forget retires partitions and stops tracking them: their positions are
// never stored again, even by a commit that listed them before.
func (c *Committer) forget(parts ...*Partition) {
	for _, p := range parts {
		p.retire()
		k := key{p.Topic, p.Partition}
		c.mu.Lock()
		if c.parts[k] == p {
			delete(c.parts, k)
		}
		c.mu.Unlock()
	}
}

// Err returns the error of the last commit, nil when it succeeded.
func (c *Committer) Err() error {
	c.mu.Lock()
	defer c.mu.Unlock()
	return c.lastErr
}

// Run commits every interval until ctx ends, each commit within
// Config.Timeout. It does not commit on the way
// out: the shutdown sequence calls Commit once the workers have stopped, so
// the final position includes their last writes.
func (c *Committer) Run(ctx context.Context) error {
	t := time.NewTicker(c.cfg.Interval)
	defer t.Stop()
	for {
		select {
		case <-ctx.Done():
			return nil
		case <-t.C:
			if err := c.Commit(ctx); err != nil && !errors.Is(err, context.Canceled) {
				// A failing database is retried at the next tick; the
				// positions only ever move forward, so nothing is lost.
				c.logger.Warn("commit offsets failed", zap.Error(err))
			}
		}
	}
}
