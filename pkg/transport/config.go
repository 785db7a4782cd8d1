package transport

import (
	"errors"
	"fmt"
	"regexp"
	"strconv"
	"strings"
	"time"

	"github.com/confluentinc/confluent-kafka-go/v2/kafka"
)

// Defaults applied to zero-valued Config fields.
const (
	DefaultGroupID         = "stb"
	DefaultAutoOffsetReset = "earliest"
	// DefaultMaxBundleBytes is the default cap on a bundle's data.
	DefaultMaxBundleBytes = 4 << 20
	// MinMaxBundleBytes is the floor of MaxBundleBytes: the wire format
	// promises hubs that bundles of this size are always accepted.
	MinMaxBundleBytes = 64 << 10
	// DefaultPollTimeout bounds one consumer poll, and with it how long Run
	// takes to notice that its context ended.
	DefaultPollTimeout = 100 * time.Millisecond
	// DefaultAssignTimeout bounds loading the stored positions of one
	// assignment. The load runs inside the consumer's poll, so a slow
	// database must not hold it past the group's max.poll.interval.ms.
	DefaultAssignTimeout = 10 * time.Second
	// DefaultRevokeTimeout bounds the final commit of revoked partitions.
	DefaultRevokeTimeout = 10 * time.Second
	// DefaultChunkTimeout bounds how long the chunks of a global-hub event
	// are held for the rest of it. The agent sends an event's chunks one
	// right after the other, so a whole event takes well under a second;
	// two minutes leave room for a slow broker and a pause of reading by
	// backpressure.
	DefaultChunkTimeout = 2 * time.Minute
)

// mandatoryProperties are librdkafka settings the reader depends on; Config
// Properties cannot change them.
//   - Offsets are stored only by the reader, and only positions already in
//     Postgres (enable.auto.offset.store=false); librdkafka commits what was
//     stored to the consumer group in the background, on revocation and on
//     close, so lag tools follow the bridge without any call blocking the
//     poll loop.
//   - fetch.queue.backoff.ms: librdkafka's default (1 s) pauses fetching
//     whenever its queue is full, which stalls a fast consumer.
//   - enable.metrics.push: client telemetry is not collected by anyone.
var mandatoryProperties = map[string]string{
	"enable.auto.commit":       "true",
	"enable.auto.offset.store": "false",
	"fetch.queue.backoff.ms":   "10",
	"enable.metrics.push":      "false",
}

// reservedProperties are set from Config fields or by the Go client wrapper
// for the reader's own use.
var reservedProperties = map[string]string{
	"bootstrap.servers":               "Brokers",
	"group.id":                        "GroupID",
	"auto.offset.reset":               "AutoOffsetReset",
	"go.logs.channel.enable":          "the reader's log forwarding",
	"go.logs.channel":                 "the reader's log forwarding",
	"go.application.rebalance.enable": "the reader's rebalance callback",
	"go.events.channel.enable":        "the reader's poll loop",
}

// defaultProperties are sensible librdkafka settings that Properties may
// override.
var defaultProperties = map[string]string{
	"client.id": "stb",
	// Cooperative rebalancing moves only the partitions that change owner,
	// so adding a replica does not stop every other partition's reading.
	"partition.assignment.strategy": "cooperative-sticky",
	// Statistics feed the high watermark, lag and broker round-trip
	// metrics; every 5 s is cheap and fresh enough for alerts.
	"statistics.interval.ms": "5000",
	// A broker answers a fetch once it holds fetch.min.bytes for it or
	// fetch.wait.max.ms has passed. librdkafka's 1 byte has it answer for
	// every batch a producer sends, so live traffic wakes the whole path
	// (librdkafka's threads, the poll loop, the decoder, a worker) a few
	// hundred times a second for a handful of bundles each time. Waiting
	// up to 25 ms for 64 KiB cut the bridge's CPU per bundle at 1,000
	// bundles/s by a quarter for about 17 ms more freshness at the median
	// (BENCHMARKS.md, "Steady state"); a partition behind its end fills
	// 64 KiB at once and is not slowed.
	"fetch.wait.max.ms": "25",
	"fetch.min.bytes":   "65536",
}

// Config configures a Reader. Start from DefaultConfig: the zero value of
// VerifySource turns the source check off.
type Config struct {
	// Brokers is the bootstrap list, "host:port[,host:port…]".
	Brokers string
	// GroupID is the consumer group; "" means DefaultGroupID.
	GroupID string
	// Topics to subscribe to. An entry starting with '^' is a regular
	// expression matching topic names.
	Topics []string
	// TypePrefix precedes the bundle type in the CloudEvents type; ""
	// means DefaultTypePrefix.
	TypePrefix string
	// AutoOffsetReset is where a partition without a usable stored
	// position starts: "earliest" or "latest"; "" means earliest.
	AutoOffsetReset string
	// VerifySource rejects events whose source is not the message key, so
	// one hub cannot write another hub's state.
	VerifySource bool
	// MaxBundleBytes caps a bundle's data; 0 means DefaultMaxBundleBytes,
	// and smaller values are raised to MinMaxBundleBytes.
	MaxBundleBytes int
	// Properties are extra librdkafka properties, applied after the
	// reader's defaults. The mandatory properties and those set from the
	// fields above cannot be overridden.
	Properties map[string]string
	// MaxBufferedBytes pauses every assigned partition while the bundles
	// held downstream (Deps.Buffer) exceed it, and resumes them below 80 %
	// of it, so memory does not grow with the backlog waiting in Kafka.
	// 0 never pauses.
	MaxBufferedBytes int64
	// PollTimeout bounds one poll; 0 means DefaultPollTimeout.
	PollTimeout time.Duration
	// AssignTimeout bounds loading stored positions on assignment; 0 means
	// DefaultAssignTimeout.
	AssignTimeout time.Duration
	// RevokeTimeout bounds the final commit on revocation; 0 means
	// DefaultRevokeTimeout.
	RevokeTimeout time.Duration
	// ChunkTimeout bounds how long the global-hub profile holds the
	// chunks of an event that is not whole, from its first chunk read: it
	// is then dead-lettered (chunk_timeout) and its partition's committed
	// position moves on. 0 means DefaultChunkTimeout.
	ChunkTimeout time.Duration
}

// DefaultConfig returns a configuration with every default set but the
// rebalance callbacks' bounds (derived when the reader starts), the source
// check on, and no brokers or topics.
func DefaultConfig() Config {
	c := Config{VerifySource: true}.withDefaults()
	// Left 0: the reader derives them from max.poll.interval.ms, which the
	// properties set later may lower (withDefaults).
	c.AssignTimeout, c.RevokeTimeout = 0, 0
	return c
}

func (c Config) withDefaults() Config {
	if c.GroupID == "" {
		c.GroupID = DefaultGroupID
	}
	if c.TypePrefix == "" {
		c.TypePrefix = DefaultTypePrefix
	}
	if c.AutoOffsetReset == "" {
		c.AutoOffsetReset = DefaultAutoOffsetReset
	}
	switch {
	case c.MaxBundleBytes == 0:
		c.MaxBundleBytes = DefaultMaxBundleBytes
	case c.MaxBundleBytes > 0 && c.MaxBundleBytes < MinMaxBundleBytes:
		c.MaxBundleBytes = MinMaxBundleBytes
	}
	if c.PollTimeout == 0 {
		c.PollTimeout = DefaultPollTimeout
	}
	if c.ChunkTimeout == 0 {
		c.ChunkTimeout = DefaultChunkTimeout
	}
	// The rebalance callbacks run on the poll loop: with a
	// max.poll.interval.ms below twice their default bounds, each gets a
	// quarter of it, so that an assignment and a revocation in one poll
	// against a hung database still leave the consumer in its group.
	limit := DefaultAssignTimeout
	if ms, err := strconv.Atoi(c.Properties["max.poll.interval.ms"]); err == nil && ms > 0 {
		limit = min(limit, time.Duration(ms)*time.Millisecond/4)
	}
	if c.AssignTimeout == 0 {
		c.AssignTimeout = min(DefaultAssignTimeout, limit)
	}
	if c.RevokeTimeout == 0 {
		c.RevokeTimeout = min(DefaultRevokeTimeout, limit)
	}
	return c
}

// Rules returns the decoding rules of c, defaults applied, decoding
// payloads with d: what the reader applies to every message, and a replay
// of dead letters to every letter, so that both decode alike.
func (c Config) Rules(d Decoder) Rules {
	c = c.withDefaults()
	return Rules{TypePrefix: c.TypePrefix, VerifySource: c.VerifySource, MaxBundleBytes: c.MaxBundleBytes, Decoder: d}
}

// Validate checks the configuration as NewReader will use it, that is with
// defaults applied.
func (c *Config) Validate() error {
	d := c.withDefaults()
	var errs []error
	if strings.TrimSpace(d.Brokers) == "" {
		errs = append(errs, errors.New("brokers: at least one bootstrap address is required"))
	}
	if len(d.Topics) == 0 {
		errs = append(errs, errors.New("topics: at least one topic is required"))
	}
	for _, t := range d.Topics {
		switch {
		case t == "":
			errs = append(errs, errors.New("topics: empty topic name"))
		case strings.HasPrefix(t, "^"):
			// librdkafka has its own regex engine; Go's catches the
			// typos before the consumer silently matches nothing.
			if _, err := regexp.Compile(t); err != nil {
				errs = append(errs, fmt.Errorf("topics: pattern %q: %w", t, err))
			}
		}
	}
	if d.AutoOffsetReset != "earliest" && d.AutoOffsetReset != "latest" {
		errs = append(errs, fmt.Errorf("auto offset reset must be earliest or latest, got %q", d.AutoOffsetReset))
	}
	if d.MaxBundleBytes < 0 {
		errs = append(errs, fmt.Errorf("max bundle bytes must not be negative, got %d", d.MaxBundleBytes))
	}
	for name, v := range map[string]time.Duration{
		"poll timeout": d.PollTimeout, "assign timeout": d.AssignTimeout, "revoke timeout": d.RevokeTimeout,
		"chunk timeout": d.ChunkTimeout,
	} {
		if v < 0 {
			errs = append(errs, fmt.Errorf("%s must not be negative, got %v", name, v))
		}
	}
	if ms, err := strconv.Atoi(d.Properties["max.poll.interval.ms"]); err == nil && ms > 0 {
		if poll := time.Duration(ms) * time.Millisecond; d.AssignTimeout+d.RevokeTimeout >= poll {
			errs = append(errs, fmt.Errorf("assign timeout %v and revoke timeout %v together must stay below max.poll.interval.ms (%v): the rebalance callbacks run on the poll loop", d.AssignTimeout, d.RevokeTimeout, poll))
		}
	}
	for k, v := range d.Properties {
		if want, ok := mandatoryProperties[k]; ok && v != want {
			errs = append(errs, fmt.Errorf("property %s=%s: the reader requires %s", k, v, want))
		}
		if field, ok := reservedProperties[k]; ok {
			errs = append(errs, fmt.Errorf("property %s is set by %s", k, field))
		}
	}
	return errors.Join(errs...)
}

// Bounds of librdkafka's prefetch settings: fetch.max.bytes must hold the
// largest message (message.max.bytes, 1,000,000 by default) and stay below
// receive.message.max.bytes (100,000,000).
const (
	minFetchMaxBytes = 1 << 20
	maxFetchMaxBytes = 50 << 20 // librdkafka's default
	minQueuedKBytes  = 4 << 10
	maxQueuedKBytes  = 64 << 10 // librdkafka's default, 64 MiB
)

// prefetchProperties bounds what librdkafka prefetches by the memory
// budget, so that --max-buffered-bytes bounds the process and not only the
// Go heap: the consumer queue (queued.max.messages.kbytes) gets an eighth
// of it and one fetch response (fetch.max.bytes) a sixteenth, within
// librdkafka's limits. Properties set explicitly win. No budget, no change.
func (c Config) prefetchProperties() map[string]string {
	if c.MaxBufferedBytes <= 0 {
		return nil
	}
	queued := min(max(c.MaxBufferedBytes/8>>10, minQueuedKBytes), maxQueuedKBytes)
	fetch := min(max(c.MaxBufferedBytes/16, minFetchMaxBytes), maxFetchMaxBytes)
	return map[string]string{
		"queued.max.messages.kbytes": strconv.FormatInt(queued, 10),
		"fetch.max.bytes":            strconv.FormatInt(fetch, 10),
	}
}

// consumerConfig returns the librdkafka configuration of a validated,
// defaulted Config: defaults, then the fields, then Properties, then the
// mandatory settings, so that nothing can undo the latter.
func (c Config) consumerConfig() *kafka.ConfigMap {
	m := kafka.ConfigMap{}
	for k, v := range defaultProperties {
		m[k] = v
	}
	m["bootstrap.servers"] = c.Brokers
	m["group.id"] = c.GroupID
	m["auto.offset.reset"] = c.AutoOffsetReset
	for k, v := range c.prefetchProperties() {
		m[k] = v
	}
	for k, v := range c.Properties {
		m[k] = v
	}
	for k, v := range mandatoryProperties {
		m[k] = v
	}
	// librdkafka's own log lines go through zap like everything else.
	m["go.logs.channel.enable"] = true
	return &m
}
