package dispatcher

import (
	"cmp"
	"slices"
	"sync"
	"time"

	"go.uber.org/zap"

	"github.com/stbridge/stb/conflation"
)

// retryLog sums up transient write failures: an outage of a minute fails
// every hub's bundles again and again, and one warning per retried job
// (29,459 lines in 160 s for 300 hubs) buries what matters. The first
// failure after a quiet interval is logged at once, with its hub and
// error; the others are counted by type and class, and flush logs one line
// per interval with the counts and the last error. Safe for concurrent
// use; it does no I/O under its lock (the logger writes after unlock).
type retryLog struct {
	interval time.Duration

	mu      sync.Mutex
	since   time.Time // start of the interval being counted; zero when quiet
	counts  map[retryKey]int
	lastErr error
}

type retryKey struct{ typ, class string }

func newRetryLog(interval time.Duration) *retryLog {
	return &retryLog{interval: interval, counts: map[retryKey]int{}}
}

// add records a job's transient failure at now.
func (l *retryLog) add(now time.Time, job *conflation.Job, class string, err error, logger *zap.Logger) {
	l.mu.Lock()
	first := l.since.IsZero()
	if first {
		l.since = now
	} else {
		l.counts[retryKey{job.Type, class}]++
		l.lastErr = err
	}
	l.mu.Unlock()
	if first {
		logger.Warn("write failed, will retry (further failures are summed up every interval)",
			zap.String("hub", job.Unit.Hub), zap.String("type", job.Type), zap.String("class", class),
			zap.Stringer("version", job.Last().Version), zap.Int("attempt", job.Attempt+1),
			zap.Duration("interval", l.interval), zap.Error(err))
	}
}

// flush logs the failures counted since the interval began, if it has
// ended by now, and starts the next one; an interval without failures
// after one with them makes the log quiet again, so that the next failure
// is logged at once.
func (l *retryLog) flush(now time.Time, logger *zap.Logger) {
	l.mu.Lock()
	if l.since.IsZero() || now.Sub(l.since) < l.interval {
		l.mu.Unlock()
		return
	}
	counts, lastErr, since := l.counts, l.lastErr, l.since
	if len(counts) == 0 {
		l.since = time.Time{}
	} else {
		l.since = now
		l.counts, l.lastErr = map[retryKey]int{}, nil
	}
	l.mu.Unlock()
	if len(counts) == 0 {
		return
	}
	keys := make([]retryKey, 0, len(counts))
	total := 0
	for k, n := range counts {
		keys = append(keys, k)
		total += n
	}
	slices.SortFunc(keys, func(a, b retryKey) int {
		return cmp.Or(cmp.Compare(a.typ, b.typ), cmp.Compare(a.class, b.class))
	})
	fields := make([]zap.Field, 0, len(keys)+3)
	fields = append(fields, zap.Int("failures", total), zap.Duration("over", now.Sub(since).Round(time.Second)))
	for _, k := range keys {
		fields = append(fields, zap.Int(k.typ+" "+k.class, counts[k]))
	}
	fields = append(fields, zap.NamedError("lastError", lastErr))
	logger.Warn("writes failed, will retry", fields...)
}
