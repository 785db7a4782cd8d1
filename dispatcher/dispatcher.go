package dispatcher

import (
	"context"
	"errors"
	"fmt"
	"runtime/debug"
	"slices"
	"sync"
	"sync/atomic"
	"time"

	"github.com/jackc/pgx/v5/pgxpool"
	"github.com/prometheus/client_golang/prometheus"
	"go.uber.org/zap"

	"github.com/stbridge/stb/conflation"
	"github.com/stbridge/stb/dbsyncers"
	"github.com/stbridge/stb/pkg/bundle"
	"github.com/stbridge/stb/pkg/deadletter"
	"github.com/stbridge/stb/pkg/transport"
)

// Applier writes jobs' bundles (a group per job) in one transaction of
// their own and reports which were written (false: the database already
// held a version at least as new). dbsyncers.Registry implements it: the
// version fences and statements of small jobs go out as one batch, one
// round trip in all, and dbsyncers.ErrStale says that a job of the batch
// was stale and nothing was written.
//
// Bundles come to the dispatcher raw (bundle.Bundle.Raw, and a family's
// Attrs beside it): the reader decodes no payload, since most bundles are replaced before they are
// written. A worker decodes a job's bundles with DecodeBundle when it
// takes the job, so that a bundle whose data does not decode is
// dead-lettered on its own (its error carries the reason, bad_payload or
// the decoder's own) while the rest of its group is written; a bundle
// keeps its payload once decoded, for a retry.
type Applier interface {
	DecodeBundle(b *bundle.Bundle) error
	Write(ctx context.Context, conn dbsyncers.Conn, groups [][]*bundle.Bundle) (applied []bool, err error)
}

// DeadLetters stores the dead letters of bundles that can never be
// written, all of a job's in one statement; deadletter.Writer implements
// it.
type DeadLetters interface {
	Write(ctx context.Context, letters ...deadletter.Letter) (int64, error)
}

// EventLetters is what a status family (transport.Family) offers whose
// bundles keep what their event says besides its data in
// bundle.Bundle.Attrs (dbsyncers/work and dbsyncers/cne: its attributes
// and extensions, checked). A worker's dead letter keeps a bundle's Raw
// as the event's data and the message's headers as read
// (deadletter.Bundles), which of an event read in structured mode hold no
// attributes; with these, it stores the event itself, so that a replay
// from the stored copy reads it through the family as the reader did, in
// either mode. (These families' Raw used to carry the attributes in a
// line before the data, which a replay handed the family as data:
// bad_payload.)
type EventLetters interface {
	// EventOf returns the event b was read from, rebuilt from its Attrs
	// and Raw: the CloudEvents attributes as binary-mode Kafka headers
	// (ce_*, content-type) and the data. ok is false for a bundle that is
	// not the family's, or has no attributes of it.
	EventOf(b *bundle.Bundle) (headers map[string]string, data []byte, ok bool)
}

// Config configures a Dispatcher. Start from DefaultConfig.
type Config struct {
	// Workers is the number of concurrent writers; it must not exceed the
	// pool's MaxConns, and should equal it.
	Workers int
	// JobTimeout bounds one job's transaction.
	JobTimeout time.Duration
	// WakeInterval is how often units are checked for retries that fell
	// due and dependency waits that expired.
	WakeInterval time.Duration
	// BatchJobs is the most jobs, from different units, that one worker
	// writes in one transaction when more units are ready than workers;
	// 1 writes every job on its own. Only small jobs (BatchBytes) join a
	// batch: what a batch saves is the commit of each small job.
	BatchJobs int
	// BatchBytes is the payload size above which a job is written alone.
	BatchBytes int
	// BatchWait is how long a worker that took a small job waits for
	// more ready units to join its batch when none is ready; 0 never
	// waits. While it waits, the other workers do not take jobs from the
	// queue, so that at a low rate the jobs that come in meanwhile share
	// one transaction instead of one each. It adds at most BatchWait to a
	// bundle's freshness; under load, ready units fill batches at once.
	BatchWait time.Duration
	// MaxUnclassifiedAttempts is how many times a job whose write fails
	// with an error the dispatcher cannot classify (not a timeout, a lost
	// connection or a database error of a SQLSTATE class it knows: an
	// encode error, a bug, an internal error of the database's, a
	// trigger's RAISE; see bySQLState) is tried before it is dead-lettered
	// permanent_error. Known transient failures are retried for ever: a
	// database problem must never lose a bundle.
	MaxUnclassifiedAttempts int
	// RetryLogInterval is how often the transient failures of the
	// interval are logged, as one line with counts by type and class;
	// the first failure after a quiet interval is logged at once.
	RetryLogInterval time.Duration
}

// Batching defaults: a commit (a WAL flush) costs about as much as a small
// bundle's statements, so batching many small jobs per transaction roughly
// halves their cost, while big bundles gain nothing from sharing one.
const (
	DefaultBatchJobs  = 32
	DefaultBatchBytes = 64 << 10
	DefaultBatchWait  = 5 * time.Millisecond
)

// DefaultJobTimeout bounds a job that the database does not answer.
const DefaultJobTimeout = 60 * time.Second

// DefaultWakeInterval is how often due retries and expired waits are checked.
const DefaultWakeInterval = time.Second

// DefaultMaxUnclassifiedAttempts tries an unclassified failure for about
// a minute with the default backoff (100 ms doubling to 30 s).
const DefaultMaxUnclassifiedAttempts = 10

// DefaultRetryLogInterval is how often retried failures are summed up in
// the log.
const DefaultRetryLogInterval = 10 * time.Second

// DefaultConfig returns the defaults with workers workers.
func DefaultConfig(workers int) Config {
	return Config{
		Workers:      workers,
		JobTimeout:   DefaultJobTimeout,
		WakeInterval: DefaultWakeInterval,
		BatchJobs:    DefaultBatchJobs,
		BatchBytes:   DefaultBatchBytes,
		BatchWait:    DefaultBatchWait,

		MaxUnclassifiedAttempts: DefaultMaxUnclassifiedAttempts,
		RetryLogInterval:        DefaultRetryLogInterval,
	}
}

// Validate checks the configuration; it changes nothing.
func (c Config) Validate() error {
	var errs []error
	if c.Workers < 1 {
		errs = append(errs, fmt.Errorf("dispatcher: need at least one worker, got %d", c.Workers))
	}
	if c.JobTimeout <= 0 || c.WakeInterval <= 0 {
		errs = append(errs, fmt.Errorf("dispatcher: job timeout and wake interval must be positive, got %v and %v", c.JobTimeout, c.WakeInterval))
	}
	if c.MaxUnclassifiedAttempts < 1 || c.RetryLogInterval <= 0 {
		errs = append(errs, fmt.Errorf("dispatcher: max unclassified attempts must be at least 1 and the retry log interval positive, got %d and %v", c.MaxUnclassifiedAttempts, c.RetryLogInterval))
	}
	if c.BatchJobs < 1 || c.BatchBytes < 0 || c.BatchWait < 0 {
		errs = append(errs, fmt.Errorf("dispatcher: batch jobs must be at least 1, batch bytes and wait not negative, got %d, %d and %v", c.BatchJobs, c.BatchBytes, c.BatchWait))
	}
	return errors.Join(errs...)
}

// Deps are the dispatcher's collaborators.
type Deps struct {
	// Pool gives each worker its connection; its MaxConns must be at
	// least Config.Workers.
	Pool *pgxpool.Pool
	// Manager hands out ready units and takes their outcomes.
	Manager *conflation.Manager
	// Applier writes a job's bundles (dbsyncers.Registry).
	Applier Applier
	// DeadLetters records what can never be written; nil only counts it.
	DeadLetters DeadLetters
	Logger      *zap.Logger
	// Registerer receives the dispatcher's metrics; nil registers none.
	Registerer prometheus.Registerer
	// Events are the status families whose bundles keep their event's
	// attributes beside the data (bundle.Bundle.Attrs), for the dead
	// letters of their bundles; see EventLetters.
	Events []EventLetters
}

// Dispatcher owns the workers.
type Dispatcher struct {
	cfg     Config
	pool    *pgxpool.Pool
	mgr     *conflation.Manager
	applier Applier
	takeMu  sync.Mutex // one worker takes jobs from the queue at a time
	dead    DeadLetters
	events  []EventLetters
	logger  *zap.Logger
	metrics *metrics

	// jobCtx is the parent of every job's context; Abort cancels it.
	jobCtx context.Context
	abort  context.CancelFunc

	busy    atomic.Int64
	lastErr atomic.Pointer[failure]
	retries *retryLog
	// undecodable sums up the warnings of bundles whose data does not
	// decode, as retries sums up failed writes: one error line with a
	// stack each was 3,586 lines in a flood (issue 34, item 11).
	undecodable *transport.LogSummary

	// timers are the pending retry timers (wakeAfter). timersWG counts
	// the callbacks that may still run: one per timer, done when the
	// callback returns or the timer is stopped before it fired, so that
	// Run waits for every one it does not stop.
	timersMu sync.Mutex
	timers   map[*time.Timer]struct{}
	timersWG sync.WaitGroup
	// wake is the timers' action, Manager.Wake; tests replace it.
	wake func(*conflation.Unit)
}

type failure struct {
	err error
	at  time.Time
}

// New returns a dispatcher writing through deps.Pool.
func New(cfg Config, deps Deps) (*Dispatcher, error) {
	if err := cfg.Validate(); err != nil {
		return nil, err
	}
	if deps.Pool == nil || deps.Manager == nil || deps.Applier == nil {
		return nil, errors.New("dispatcher: Pool, Manager and Applier are required")
	}
	if max := int(deps.Pool.Config().MaxConns); cfg.Workers > max {
		return nil, fmt.Errorf("dispatcher: %d workers but the pool has %d connections", cfg.Workers, max)
	}
	logger := deps.Logger
	if logger == nil {
		logger = zap.NewNop()
	}
	d := &Dispatcher{cfg: cfg, pool: deps.Pool, mgr: deps.Manager, applier: deps.Applier, dead: deps.DeadLetters,
		events: deps.Events, logger: logger, timers: map[*time.Timer]struct{}{}, retries: newRetryLog(cfg.RetryLogInterval),
		undecodable: transport.NewLogSummary("bundle data does not decode, dead-lettering it", cfg.RetryLogInterval)}
	d.wake = d.mgr.Wake
	metrics, err := newMetrics(deps.Registerer, d)
	if err != nil {
		return nil, err
	}
	d.metrics = metrics
	d.jobCtx, d.abort = context.WithCancel(context.Background())
	return d, nil
}

// Abort cancels the jobs in flight, for a shutdown whose time is up. Their
// transactions roll back and their bundles stay in their units, so the
// committed offsets stay behind them and a restart writes them.
func (d *Dispatcher) Abort() { d.abort() }

// Run starts the workers and returns once ctx ended and every worker has
// finished its in-flight job. Jobs already taken are completed with their
// own timeout, not cut short by ctx: stopping means no new pops. Abort
// cuts them short.
func (d *Dispatcher) Run(ctx context.Context) error {
	var wg sync.WaitGroup
	wg.Add(1)
	go func() {
		defer wg.Done()
		t := time.NewTicker(d.cfg.WakeInterval)
		defer t.Stop()
		for {
			select {
			case <-ctx.Done():
				return
			case now := <-t.C:
				d.mgr.WakeAll()
				d.retries.flush(now, d.logger)
				d.undecodable.Flush(now, d.logger)
			}
		}
	}()
	for i := 0; i < d.cfg.Workers; i++ {
		wg.Add(1)
		go func() {
			defer wg.Done()
			d.work(ctx)
		}()
	}
	wg.Wait()
	d.stopTimers()
	d.retries.flush(time.Now().Add(d.cfg.RetryLogInterval), d.logger)
	d.undecodable.Flush(time.Now().Add(d.cfg.RetryLogInterval), d.logger)
	return nil
}

func (d *Dispatcher) work(ctx context.Context) {
	jobs := make([]*conflation.Job, 0, d.cfg.BatchJobs)
	for {
		jobs = d.take(ctx, jobs[:0])
		if len(jobs) == 0 {
			return
		}
		d.busy.Add(1)
		outs := d.processBatch(d.jobCtx, jobs)
		d.busy.Add(-1)
		for i, j := range jobs {
			if retryIn := d.mgr.Report(j, outs[i]); retryIn > 0 {
				d.wakeAfter(j.Unit, retryIn)
			}
		}
	}
}

// take waits for a ready unit and returns its job and, when that job is
// small, up to BatchJobs-1 more small jobs of other units: those ready
// now, then those that become ready within BatchWait. It returns none once
// ctx ends. One worker takes at a time (takeMu), so that a worker waiting
// for its batch to fill is not raced for the units it waits for.
func (d *Dispatcher) take(ctx context.Context, jobs []*conflation.Job) []*conflation.Job {
	d.takeMu.Lock()
	defer d.takeMu.Unlock()
	q := d.mgr.Queue()
	for len(jobs) == 0 {
		u, err := q.Pop(ctx)
		if err != nil {
			return jobs
		}
		if job, err := u.Next(); err == nil {
			jobs = append(jobs, job)
		}
	}
	var wait context.Context
	for small(jobs[len(jobs)-1], d.cfg.BatchBytes) && len(jobs) < d.cfg.BatchJobs {
		u := q.TryPop()
		if u == nil && d.cfg.BatchWait > 0 {
			if wait == nil {
				var cancel context.CancelFunc
				wait, cancel = context.WithTimeout(ctx, d.cfg.BatchWait)
				defer cancel()
			}
			u, _ = q.Pop(wait)
		}
		if u == nil {
			break
		}
		if j, err := u.Next(); err == nil {
			jobs = append(jobs, j)
		}
	}
	return jobs
}

// small reports whether a job may share a transaction with others.
func small(j *conflation.Job, limit int) bool {
	if j.Expired {
		return false
	}
	n := 0
	for _, b := range j.Bundles {
		n += b.Size
	}
	return n <= limit
}

// processBatch writes jobs of different units in one transaction. If that
// fails transiently (a timeout, a lost connection, a transient SQLSTATE),
// every job goes back to its unit's backoff at once: writing each again
// alone would only wait the same timeout once per job against a database
// that does not answer. If it fails in a way that may be one job's fault
// (a permanent or unclassified error, a stale fence), each job is written
// again on its own, so that one bad bundle decides only its own job's
// outcome.
//
// A job with a bundle whose data does not decode is written on its own
// (process), which dead-letters that bundle.
func (d *Dispatcher) processBatch(ctx context.Context, jobs []*conflation.Job) []conflation.Outcome {
	outs := make([]conflation.Outcome, len(jobs))
	if len(jobs) == 1 {
		outs[0] = d.process(ctx, jobs[0])
		return outs
	}
	batch := make([]int, 0, len(jobs)) // the jobs written together, by index
	for i, j := range jobs {
		if j.Expired || len(d.decode(j)) > 0 {
			outs[i] = d.process(ctx, j)
			continue
		}
		batch = append(batch, i)
	}
	switch len(batch) {
	case 0:
		return outs
	case 1:
		outs[batch[0]] = d.process(ctx, jobs[batch[0]])
		return outs
	}
	bctx, cancel := context.WithTimeout(ctx, d.cfg.JobTimeout)
	start := time.Now()
	groups := make([][]*bundle.Bundle, len(batch))
	for k, i := range batch {
		groups[k] = jobs[i].Bundles
	}
	applied, err := d.write(bctx, groups)
	cancel()
	if err != nil {
		if v := classify(err); v.outcome == conflation.Transient && !v.unclassified && !errors.Is(err, dbsyncers.ErrStale) {
			took := time.Since(start)
			for _, i := range batch {
				outs[i] = d.retry(jobs[i], v, err, took)
			}
			return outs
		}
		d.metrics.batchSplits.Inc()
		for _, i := range batch {
			outs[i] = d.process(ctx, jobs[i])
		}
		return outs
	}
	took := time.Since(start) / time.Duration(len(batch))
	d.lastErr.Store(nil)
	d.metrics.batches.Observe(float64(len(batch)))
	for k, i := range batch {
		outs[i] = conflation.Applied
		d.metrics.observe(jobs[i], conflation.Applied, applied[k], took)
	}
	return outs
}

// undecodable is a bundle of a job whose data does not decode, and why.
type undecodable struct {
	b   *bundle.Bundle
	err error
}

// decode decodes the payloads of a job's bundles that were not decoded
// before (a retried job's were) and returns those that do not decode. A
// decoder that panics (a bug of the bridge's) fails its bundle as
// decode_panic, with the stack in the log, rather than the process.
func (d *Dispatcher) decode(job *conflation.Job) []undecodable {
	var bad []undecodable
	for _, b := range job.Bundles {
		if err := d.decodeBundle(b); err != nil {
			bad = append(bad, undecodable{b, err})
		}
	}
	return bad
}

func (d *Dispatcher) decodeBundle(b *bundle.Bundle) (err error) {
	defer func() {
		if v := recover(); v != nil {
			d.logger.Error("decoding a payload panicked", zap.String("hub", b.Hub), zap.String("type", b.Type),
				zap.Stringer("version", b.Version), zap.Any("panic", v), zap.ByteString("stack", debug.Stack()))
			err = &dbsyncers.PermanentError{Reason: deadletter.DecodePanic, Err: fmt.Errorf("decoding panicked: %v", v)}
		}
	}()
	return d.applier.DecodeBundle(b)
}

// process writes a job and returns its outcome. Permanent failures, and
// unclassified ones tried MaxUnclassifiedAttempts times, are dead-lettered
// here; if even that fails, the job counts as transient so nothing is
// lost.
func (d *Dispatcher) process(ctx context.Context, job *conflation.Job) conflation.Outcome {
	ctx, cancel := context.WithTimeout(ctx, d.cfg.JobTimeout)
	defer cancel()
	if job.Expired {
		return d.deadLetter(ctx, job, deadletter.DependencyTimeout, fmt.Errorf("waited longer than the dependency timeout for %s", job.Type))
	}
	start := time.Now()
	bad := d.decode(job)
	if len(bad) == len(job.Bundles) {
		d.metrics.observe(job, conflation.Permanent, false, time.Since(start))
		job.Err = bad[len(bad)-1].err
		if !d.deadLetterUndecodable(ctx, job, bad) {
			return conflation.Transient
		}
		return conflation.Permanent
	}
	group := job.Bundles
	if len(bad) > 0 {
		// The others of a group of deltas or events are written without
		// them, as they would have been had the reader rejected them.
		group = make([]*bundle.Bundle, 0, len(job.Bundles)-len(bad))
		for _, b := range job.Bundles {
			if !slices.ContainsFunc(bad, func(u undecodable) bool { return u.b == b }) {
				group = append(group, b)
			}
		}
	}
	var applied bool
	a, err := d.write(ctx, [][]*bundle.Bundle{group})
	switch {
	case err == nil:
		applied = a[0]
	case errors.Is(err, dbsyncers.ErrStale):
		// Sent with its statements, its fence refused it and nothing
		// was written: the database holds a newer version.
		err = nil
	}
	v := classify(err)
	switch v.outcome {
	case conflation.Applied:
		d.metrics.observe(job, v.outcome, applied, time.Since(start))
		d.lastErr.Store(nil)
		// Only now, once the others are written: a write retried must
		// not store them again. The unit releases their messages with
		// the others'.
		if len(bad) > 0 && !d.deadLetterUndecodable(ctx, job, bad) {
			return conflation.Transient
		}
		return v.outcome
	case conflation.Transient:
		if !v.unclassified || job.Attempt+1 < d.cfg.MaxUnclassifiedAttempts {
			return d.retry(job, v, err, time.Since(start))
		}
		d.metrics.unclassified.Inc()
		v.outcome, v.reason = conflation.Permanent, deadletter.PermanentError
		err = fmt.Errorf("failed %d times with an unclassified error: %w", job.Attempt+1, err)
	}
	d.metrics.observe(job, v.outcome, applied, time.Since(start))
	if len(bad) > 0 {
		// The others failed for good too: each bundle is dead-lettered
		// with its own reason.
		if !d.deadLetterUndecodable(ctx, job, bad) {
			return conflation.Transient
		}
		good := *job
		good.Bundles = group
		out := d.deadLetter(ctx, &good, v.reason, err)
		job.Err = good.Err
		return out
	}
	return d.deadLetter(ctx, job, v.reason, err)
}

// deadLetterUndecodable records the bundles of a job whose data does not
// decode as dead letters, each with its error's reason (bad_payload, or
// the decoder's own). It reports false when they could not be stored: the
// job is then retried, whatever became of its other bundles.
func (d *Dispatcher) deadLetterUndecodable(ctx context.Context, job *conflation.Job, bad []undecodable) bool {
	letters := make([]deadletter.Letter, 0, len(bad))
	for _, u := range bad {
		reason := Reason(u.err)
		d.undecodable.Log(time.Now(), d.logger, u.b.Type+" "+string(reason),
			zap.String("hub", u.b.Hub), zap.String("type", u.b.Type),
			zap.Stringer("version", u.b.Version), zap.String("reason", string(reason)), zap.Error(u.err))
		letters = append(letters, d.letters([]*bundle.Bundle{u.b}, reason, u.err)...)
	}
	if d.dead != nil {
		if _, derr := d.dead.Write(ctx, letters...); derr != nil {
			d.logger.Warn("dead letter not written, will retry the bundle",
				zap.String("hub", job.Unit.Hub), zap.String("type", job.Type), zap.Error(derr))
			return false
		}
	}
	for _, l := range letters {
		d.metrics.deadLettered(job.Type, string(l.Reason), 1)
	}
	return true
}

// retry records a job's transient failure: counted, remembered for
// readiness, and summed up in the retry log.
func (d *Dispatcher) retry(job *conflation.Job, v verdict, err error, took time.Duration) conflation.Outcome {
	d.metrics.observe(job, conflation.Transient, false, took)
	if v.schema {
		d.metrics.schemaErrors.Inc()
	}
	if v.unclassified {
		d.metrics.unclassified.Inc()
	}
	job.Err = err
	d.lastErr.Store(&failure{err: err, at: time.Now()})
	d.retries.add(time.Now(), job, v.class, err, d.logger)
	return conflation.Transient
}

// write is the applier's Write, with a panic (a bug of the bridge's in a
// plan or a handler) turned into a permanent write_panic error: the batch
// is split and the bundle that panics alone is dead-lettered, where the
// panic would stop the bridge at that bundle after every restart. The
// transaction it ran in is rolled back on the way out (pgx.BeginFunc).
func (d *Dispatcher) write(ctx context.Context, groups [][]*bundle.Bundle) (applied []bool, err error) {
	defer func() {
		if v := recover(); v != nil {
			d.logger.Error("writing panicked", zap.Any("panic", v), zap.ByteString("stack", debug.Stack()))
			applied, err = nil, &dbsyncers.PermanentError{Reason: deadletter.WritePanic, Err: fmt.Errorf("write panicked: %v", v)}
		}
	}()
	return d.applier.Write(ctx, d.pool, groups)
}

// deadLetter records a job's bundles as dead letters and returns the
// outcome to report: Permanent, or Transient when even that failed.
func (d *Dispatcher) deadLetter(ctx context.Context, job *conflation.Job, reason deadletter.Reason, err error) conflation.Outcome {
	if reason == "" {
		reason = deadletter.PermanentError
	}
	job.Err = fmt.Errorf("%s: %w", reason, err)
	d.logger.Error("bundle can never be written, dead-lettering it",
		zap.String("hub", job.Unit.Hub), zap.String("type", job.Type),
		zap.Stringer("version", job.Last().Version), zap.String("reason", string(reason)), zap.Error(err))
	letters := d.letters(job.Bundles, reason, err)
	if d.dead != nil {
		if _, derr := d.dead.Write(ctx, letters...); derr != nil {
			d.logger.Warn("dead letter not written, will retry the bundle",
				zap.String("hub", job.Unit.Hub), zap.String("type", job.Type), zap.Error(derr))
			return conflation.Transient
		}
	}
	// One per letter, as stored: a job of several bundles (a batch, a
	// merged delta's parts) is as many letters.
	d.metrics.deadLettered(job.Type, string(reason), len(letters))
	return conflation.Permanent
}

// letters returns the dead letters of bundles (deadletter.Bundles), each
// holding the event it was read from: for a bundle of a family that keeps
// its event's attributes beside the data (EventLetters), the event's
// data, and, when it was read in structured mode (its headers hold no
// attributes), the attributes as binary-mode headers. A letter of a bundle read in binary
// mode keeps its headers as read: with the data, the message itself.
func (d *Dispatcher) letters(bs []*bundle.Bundle, reason deadletter.Reason, cause error) []deadletter.Letter {
	out := deadletter.Bundles(bs, reason, cause)
	if len(d.events) == 0 {
		return out
	}
	for i, b := range bs {
		if b.Message == nil {
			continue // built from others (merged deltas): no event of its own
		}
		for _, e := range d.events {
			headers, data, ok := e.EventOf(b)
			if !ok {
				continue
			}
			l := &out[i]
			l.Data = data
			if _, binary := l.Headers[ceSpecVersion]; !binary {
				if l.Headers == nil {
					l.Headers = make(map[string]string, len(headers))
				}
				// Its content-type said the value is the whole event; the
				// rebuilt one, if any, is the data's.
				delete(l.Headers, "content-type")
				for k, v := range headers {
					l.Headers[k] = v
				}
			}
			break
		}
	}
	return out
}

// ceSpecVersion is the header a binary-mode CloudEvent always has.
const ceSpecVersion = "ce_specversion"

// wakeAfter makes the unit ready again once its retry falls due. The timer
// only pushes onto the ready queue; it does no I/O. Its callback is
// counted in timersWG until it returns.
func (d *Dispatcher) wakeAfter(u *conflation.Unit, after time.Duration) {
	d.timersMu.Lock()
	defer d.timersMu.Unlock()
	d.timersWG.Add(1)
	var t *time.Timer
	t = time.AfterFunc(after, func() {
		defer d.timersWG.Done()
		d.timersMu.Lock()
		delete(d.timers, t)
		d.timersMu.Unlock()
		d.wake(u)
	})
	d.timers[t] = struct{}{}
}

// stopTimers stops the pending retry timers and waits for the callbacks
// of those that fired already, so that none runs after Run returned. The
// workers have stopped: no timer is added meanwhile.
func (d *Dispatcher) stopTimers() {
	d.timersMu.Lock()
	for t := range d.timers {
		if t.Stop() {
			d.timersWG.Done() // its callback will never run
		}
		delete(d.timers, t)
	}
	d.timersMu.Unlock()
	d.timersWG.Wait() // outside timersMu, which a running callback takes
}

// Busy returns the number of workers writing now.
func (d *Dispatcher) Busy() int { return int(d.busy.Load()) }

// Err returns the last write error if the most recent job failed
// transiently, else nil. Readiness uses it.
func (d *Dispatcher) Err() error {
	if f := d.lastErr.Load(); f != nil {
		return f.err
	}
	return nil
}
