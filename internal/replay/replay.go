package replay

import (
	"context"
	"errors"
	"fmt"
	"strconv"
	"strings"
	"time"

	"github.com/confluentinc/confluent-kafka-go/v2/kafka"
	"github.com/jackc/pgx/v5"
	"github.com/jackc/pgx/v5/pgxpool"
	"go.uber.org/zap"

	"github.com/stbridge/stb/conflation"
	"github.com/stbridge/stb/dbsyncers"
	"github.com/stbridge/stb/dispatcher"
	"github.com/stbridge/stb/internal/profiles"
	"github.com/stbridge/stb/pkg/bundle"
	"github.com/stbridge/stb/pkg/db"
	"github.com/stbridge/stb/pkg/deadletter"
	"github.com/stbridge/stb/pkg/transport"
)

// Config is what a replay takes. Start from DefaultConfig.
type Config struct {
	// Filter selects the letters; replay never takes one a replay already
	// applied or found stale. Its Limit caps the letters one Run replays
	// (0: every letter selected) and its After starts the run after that
	// id, where an earlier capped run stopped (Progress.Last).
	Filter deadletter.Filter
	// PageSize is how many letters are loaded at a time (0 is
	// DefaultPageSize): a run holds one page in memory, however many
	// letters it goes through.
	PageSize int
	// Reader is the bridge's reader configuration, of which a replay uses
	// the decoding rules (TypePrefix, VerifySource, MaxBundleBytes: raise
	// it to replay too_large letters) and the Kafka connection: Brokers,
	// when not empty, is where the events are fetched from first, with
	// the extra librdkafka Properties (security). The rest is not used.
	Reader transport.Config
	// Profiles are the wire profiles decoded (profiles.Parse).
	Profiles []string
	// FetchTimeout bounds the wait for one event from Kafka.
	FetchTimeout time.Duration
	// DryRun decodes and applies each letter in a transaction that is
	// rolled back, and marks nothing.
	DryRun bool
}

// DefaultFetchTimeout is how long a replay waits for one event from Kafka.
const DefaultFetchTimeout = 10 * time.Second

// DefaultPageSize is Config.PageSize by default: 100 letters of at most
// deadletter.MaxDataBytes (64 KiB) of data each, under 7 MiB held at once.
const DefaultPageSize = 100

// DefaultConfig returns the reader's default decoding rules, every
// profile, no Kafka (stored copies only) and DefaultFetchTimeout.
func DefaultConfig() Config {
	reader := transport.DefaultConfig()
	reader.Properties = map[string]string{}
	return Config{Reader: reader, Profiles: profiles.Default(), FetchTimeout: DefaultFetchTimeout, PageSize: DefaultPageSize}
}

// Result is what happened to one letter.
type Result struct {
	Row deadletter.Row
	// Outcome is deadletter.ReplayApplied, ReplayStale or ReplayFailed,
	// or ReplaySkipped when the event could not be had.
	Outcome deadletter.ReplayOutcome
	// Reason and Err say why a replay failed or was skipped.
	Reason deadletter.Reason
	Err    error
	// From says where the event came from.
	From deadletter.ReplaySource
}

// Progress is how far a Run went.
type Progress struct {
	// Replayed counts the letters passed to each; Pages the pages of
	// letters loaded (the last one can be empty).
	Replayed, Pages int
	// Last is the id of the last letter replayed, 0 if none: a run that
	// goes on where this one stopped sets Filter.After to it.
	Last int64
	// Remaining is how many letters the filter still selects after Last
	// when Filter.Limit ended the run; 0 when the run went through them
	// all.
	Remaining int64
}

// Run replays the letters cfg selects, in the order they were stored,
// calling each with every result. It loads them a page at a time
// (Config.PageSize, id > the last one seen), so that its memory holds one
// page whatever the number of letters, and stops after Filter.Limit of
// them, saying in Progress how many are left. It stops at the first error
// that is not the letter's fault (the database or Kafka unreachable): the
// letters before it keep their marks, and running it again goes on where
// it stopped.
//
// One letter is one transaction, and between letters Run holds no
// connection: on a pool of one connection it takes that one at a time.
func Run(ctx context.Context, pool *pgxpool.Pool, cfg Config, logger *zap.Logger, each func(Result)) (Progress, error) {
	var prog Progress
	set, err := profiles.Parse(cfg.Profiles)
	if err != nil {
		return prog, err
	}
	reg, err := set.Registry()
	if err != nil {
		return prog, err
	}
	rules := cfg.Reader.Rules(reg)
	pageSize := cfg.PageSize
	if pageSize <= 0 {
		pageSize = DefaultPageSize
	}
	limit := cfg.Filter.Limit
	var fetch *fetcher
	defer func() {
		if fetch != nil {
			fetch.close()
		}
	}()
	page := cfg.Filter
	page.NotApplied, page.Newest = true, false
	for limit <= 0 || prog.Replayed < limit {
		page.Limit = pageSize
		if limit > 0 {
			page.Limit = min(pageSize, limit-prog.Replayed)
		}
		rows, err := deadletter.List(ctx, pool, page)
		if err != nil {
			return prog, err
		}
		prog.Pages++
		if len(rows) == 0 {
			return prog, nil
		}
		if fetch == nil && cfg.Reader.Brokers != "" {
			if fetch, err = newFetcher(cfg.Reader.Brokers, cfg.Reader.Properties, cfg.FetchTimeout); err != nil {
				return prog, err
			}
		}
		for _, row := range rows {
			res, err := replayOne(ctx, pool, reg, set.Families, rules, fetch, row, cfg.DryRun)
			if err != nil {
				return prog, fmt.Errorf("dead letter %d: %w", row.ID, err)
			}
			if !cfg.DryRun && res.Outcome == deadletter.ReplayFailed {
				if err := deadletter.MarkReplayed(ctx, pool, row.ID, res.Outcome, res.Reason, res.Err); err != nil {
					return prog, err
				}
			}
			logger.Debug("replayed", zap.Int64("id", row.ID), zap.String("outcome", string(res.Outcome)))
			prog.Replayed++
			prog.Last = row.ID
			each(res)
		}
		if len(rows) < page.Limit {
			return prog, nil
		}
		page.After = prog.Last
	}
	page.Limit = 0
	if prog.Remaining, err = deadletter.Count(ctx, pool, page); err != nil {
		return prog, err
	}
	return prog, nil
}

// replayOne replays one letter. Its error is for failures that are not
// the letter's: the letter's own outcome is in the Result. An event a
// family that keeps state of its own claims (transport.Stateful: the
// global-hub agent's runs) is decoded knowing that family's state of the
// letter's hub, and only of that hub (restoreHub): each letter is decoded
// by families of its own (newFamilies).
func replayOne(ctx context.Context, pool *pgxpool.Pool, reg *dbsyncers.Registry,
	newFamilies func() []transport.Family, rules transport.Rules, fetch *fetcher, row deadletter.Row, dryRun bool) (Result, error) {
	res := Result{Row: row}
	msg, from, err := event(fetch, row)
	if err != nil {
		return res, err
	}
	if msg == nil {
		res.Outcome, res.Reason = deadletter.ReplaySkipped, row.Reason
		res.Err = errors.New("the event is no longer in Kafka, and the stored copy is not the whole event")
		return res, nil
	}
	res.From = from
	families := newFamilies()
	stateful := statefulFor(families, msg)
	if err := restoreHub(ctx, pool, stateful, row.Hub); err != nil {
		return res, err
	}
	b, rej := transport.DecodeFamilies(msg, rules, families, time.Now())
	if rej == nil && len(stateful) > 0 && b.Hub != row.Hub {
		// The letter does not name the event's hub (rejected before its
		// source was read): decoded again, knowing that hub's state.
		families = newFamilies()
		stateful = statefulFor(families, msg)
		if err := restoreHub(ctx, pool, stateful, b.Hub); err != nil {
			return res, err
		}
		b, rej = transport.DecodeFamilies(msg, rules, families, time.Now())
	}
	if rej != nil {
		res.Outcome, res.Reason, res.Err = deadletter.ReplayFailed, rej.Reason, rej.Err
		return res, nil
	}
	tx, err := pool.Begin(ctx)
	if err != nil {
		return res, fmt.Errorf("begin: %w", err)
	}
	defer func() { _ = tx.Rollback(ctx) }()
	if reason, err := dependencyMet(ctx, tx, reg, b); err != nil {
		return res, err
	} else if reason != "" {
		res.Outcome, res.Reason = deadletter.ReplayFailed, reason
		res.Err = fmt.Errorf("%s %s of hub %q depends on %s %s, which the database does not hold", b.Type, b.Version, b.Hub, dependsOn(reg, b.Type), b.Dependency)
		return res, nil
	}
	applied, err := reg.Apply(ctx, tx, []*bundle.Bundle{b})
	if err != nil {
		if dispatcher.Classify(err) != conflation.Permanent {
			return res, err
		}
		res.Outcome, res.Reason, res.Err = deadletter.ReplayFailed, dispatcher.Reason(err), err
		return res, nil
	}
	res.Outcome = deadletter.ReplayStale
	if applied {
		res.Outcome = deadletter.ReplayApplied
	}
	if dryRun {
		return res, nil // rolled back by the deferred Rollback
	}
	if err := deadletter.MarkReplayed(ctx, tx, row.ID, res.Outcome, "", nil); err != nil {
		return res, err
	}
	if err := tx.Commit(ctx); err != nil {
		return res, fmt.Errorf("commit: %w", err)
	}
	return res, nil
}

// statefulFor returns the families that keep state of their own and may
// own msg: its binary-mode type is theirs (a MessageDecoder's claim), or it
// has none (structured mode, which only parsing tells). Only those are
// given the letter's hub's state.
func statefulFor(families []transport.Family, msg *kafka.Message) []transport.Stateful {
	var typ string
	hasType := false
	for _, h := range msg.Headers {
		if h.Key == "ce_type" {
			typ, hasType = strings.TrimSpace(string(h.Value)), true
			break
		}
	}
	var out []transport.Stateful
	for _, f := range families {
		s, ok := f.(transport.Stateful)
		if !ok {
			continue
		}
		if !hasType || f.Owns(typ) {
			out = append(out, s)
		}
	}
	return out
}

// restoreHub gives each family the state stb.bundle_versions holds of
// one hub (db.LoadHubVersions): a global-hub event is numbered by the
// agent's runs of its hub and type (and of the type's base, of the same
// hub), never by another hub's. A replay loads those for each letter,
// where it loaded the whole table, every hub's, for every replay
// (millions of rows at 200,000 hubs, in the running bridge's heap when the
// console asks, for one letter). What an earlier letter of the run wrote is in the table by then; a dry
// run's is not.
func restoreHub(ctx context.Context, q db.Querier, families []transport.Stateful, hub string) error {
	if hub == "" || len(families) == 0 {
		return nil
	}
	versions, err := db.LoadHubVersions(ctx, q, hub)
	if err != nil {
		return err
	}
	for _, f := range families {
		for _, v := range versions {
			f.Restore(v.Hub, v.Type, v.Version, v.Origin, v.FamilyState)
		}
	}
	return nil
}

func dependsOn(reg *dbsyncers.Registry, typ string) string {
	if s, ok := reg.Lookup(typ); ok {
		return s.DependsOn
	}
	return ""
}

// dependencyMet checks what the conflation unit checks before a bundle
// may be written (conflation.CheckDependency), against the version of its
// dependency the database holds. It returns the reason the bundle cannot
// be written, or "".
func dependencyMet(ctx context.Context, tx pgx.Tx, reg *dbsyncers.Registry, b *bundle.Bundle) (deadletter.Reason, error) {
	s, ok := reg.Lookup(b.Type)
	if !ok || s.DependsOn == "" || s.Rule == bundle.NoDependency {
		return "", nil
	}
	held, has, err := db.LoadVersion(ctx, tx, b.Hub, s.DependsOn)
	if err != nil {
		return "", fmt.Errorf("read the version of %s: %w", s.DependsOn, err)
	}
	switch conflation.CheckDependency(s.Rule, held.Version, has, b.Dependency) {
	case conflation.DependencyPassed:
		return deadletter.StaleBase, nil
	case conflation.DependencyWaiting:
		return deadletter.DependencyTimeout, nil
	}
	return "", nil
}

// event returns the letter's event: from Kafka when it is still there,
// else the stored copy when it is the whole event, else nil.
func event(fetch *fetcher, row deadletter.Row) (*kafka.Message, deadletter.ReplaySource, error) {
	if fetch != nil && row.Origin.Topic != "" && row.Origin.Partition >= 0 && row.Origin.Offset >= 0 {
		msg, err := fetch.at(row.Origin)
		if err != nil {
			return nil, "", err
		}
		if msg != nil {
			return msg, deadletter.ReplayFromKafka, nil
		}
	}
	if msg := stored(row); msg != nil {
		return msg, deadletter.ReplayFromStored, nil
	}
	return nil, "", nil
}

// stored rebuilds a letter's message from its stored headers, key and
// data: a read-side letter's, and a worker's, which holds the event its
// bundle was read from (the headers as read and the data; a status
// family's rebuilt, dispatcher.EventLetters). A letter of a bundle built
// from others (merged deltas) holds their payload, not an event, and a
// copy cut at MaxDataBytes is not the event either.
func stored(row deadletter.Row) *kafka.Message {
	if _, raw := row.Headers["ce_specversion"]; !raw && !strings.HasPrefix(row.Headers["content-type"], "application/cloudevents") {
		return nil
	}
	if len(row.Data) >= deadletter.MaxDataBytes || row.Origin.Topic == "" {
		return nil
	}
	topic := row.Origin.Topic
	msg := &kafka.Message{
		TopicPartition: kafka.TopicPartition{Topic: &topic, Partition: row.Origin.Partition, Offset: kafka.Offset(max(row.Origin.Offset, 0))},
		Value:          row.Data,
	}
	for k, v := range row.Headers {
		if k == deadletter.KeyHeader {
			msg.Key = []byte(v)
			continue
		}
		msg.Headers = append(msg.Headers, kafka.Header{Key: k, Value: []byte(v)})
	}
	return msg
}

// fetcher reads single messages by offset.
type fetcher struct {
	c       *kafka.Consumer
	timeout time.Duration
}

func newFetcher(brokers string, props map[string]string, timeout time.Duration) (*fetcher, error) {
	cm := &kafka.ConfigMap{
		"bootstrap.servers":    brokers,
		"group.id":             "stb-deadletters-replay-" + strconv.FormatInt(time.Now().UnixNano(), 36),
		"enable.auto.commit":   false,
		"enable.partition.eof": true,
		// An offset the topic no longer holds is an error, not a jump.
		"auto.offset.reset": "error",
		// Warnings and above: the client's informational lines would mix
		// with the command's output.
		"log_level": 4,
	}
	for k, v := range props {
		if err := cm.SetKey(k, v); err != nil {
			return nil, fmt.Errorf("kafka property %s: %w", k, err)
		}
	}
	c, err := kafka.NewConsumer(cm)
	if err != nil {
		return nil, fmt.Errorf("create kafka consumer: %w", transport.RedactError(err, props))
	}
	return &fetcher{c: c, timeout: timeout}, nil
}

// at returns the message at o, or nil when the partition no longer holds
// it (deleted by retention or compaction).
func (f *fetcher) at(o bundle.Origin) (*kafka.Message, error) {
	topic := o.Topic
	if err := f.c.Assign([]kafka.TopicPartition{{Topic: &topic, Partition: o.Partition, Offset: kafka.Offset(o.Offset)}}); err != nil {
		return nil, fmt.Errorf("assign %s/%d: %w", o.Topic, o.Partition, err)
	}
	defer func() { _ = f.c.Unassign() }()
	deadline := time.Now().Add(f.timeout)
	for time.Now().Before(deadline) {
		switch ev := f.c.Poll(100).(type) {
		case *kafka.Message:
			if ev.TopicPartition.Error != nil {
				return nil, nil
			}
			if int64(ev.TopicPartition.Offset) == o.Offset {
				return ev, nil
			}
			return nil, nil // compacted away: the next one came
		case kafka.PartitionEOF:
			return nil, nil
		case kafka.Error:
			if ev.Code() == kafka.ErrAutoOffsetReset || ev.Code() == kafka.ErrOffsetOutOfRange {
				return nil, nil
			}
			if ev.IsFatal() {
				return nil, fmt.Errorf("kafka: %w", ev)
			}
		}
	}
	return nil, fmt.Errorf("no answer from Kafka for %s/%d@%d within %s", o.Topic, o.Partition, o.Offset, f.timeout)
}

func (f *fetcher) close() { _ = f.c.Close() }

// Line says what became of one letter, on one line, as `stb deadletters
// replay` prints it and the console shows it; verb is "replay" or
// "dry run".
func (r Result) Line(verb string) string {
	from := r.From
	if from == "" {
		from = "-"
	}
	line := fmt.Sprintf("%s %d: %s (%s %s %s, from %s)", verb, r.Row.ID, r.Outcome,
		deadletter.Quote(r.Row.Hub), deadletter.Quote(r.Row.Type), deadletter.Quote(r.Row.Version), from)
	if r.Err != nil {
		line += fmt.Sprintf(": %s: %s", r.Reason, deadletter.FirstLine(r.Err.Error(), 200))
	}
	return line
}
