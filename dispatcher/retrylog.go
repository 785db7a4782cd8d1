package dispatcher

import (
	"time"

	"go.uber.org/zap"

	"github.com/stbridge/stb/conflation"
	"github.com/stbridge/stb/pkg/logsum"
)

// retryLog sums up transient write failures: an outage of a minute fails
// every hub's bundles again and again, and one warning per retried job
// (29,459 lines in 160 s for 300 hubs) buries what matters. The first
// failure after a quiet interval is logged at once, with its hub and
// error; the others are counted by type and class, and flush logs one line
// per interval with the counts and the last error. Safe for concurrent
// use; it counts with a logsum.Counter and logs outside its lock.
type retryLog struct {
	c *logsum.Counter[error]
}

func newRetryLog(interval time.Duration) *retryLog {
	return &retryLog{c: logsum.New[error](interval)}
}

// add records a job's transient failure at now.
func (l *retryLog) add(now time.Time, job *conflation.Job, class string, err error, logger *zap.Logger) {
	if l.c.Add(now, job.Type+" "+class, err) {
		logger.Warn("write failed, will retry (further failures are summed up every interval)",
			zap.String("hub", job.Unit.Hub), zap.String("type", job.Type), zap.String("class", class),
			zap.Stringer("version", job.Last().Version), zap.Int("attempt", job.Attempt+1),
			zap.Duration("interval", l.c.Interval()), zap.Error(err))
	}
}

// flush logs the failures counted since the interval began, if it has
// ended by now, and starts the next one; an interval without failures
// after one with them makes the log quiet again, so that the next failure
// is logged at once.
func (l *retryLog) flush(now time.Time, logger *zap.Logger) {
	sum, ok := l.c.Take(now)
	if !ok {
		return
	}
	fields := make([]zap.Field, 0, len(sum.Keys)+3)
	fields = append(fields, zap.Int("failures", sum.Total), zap.Duration("over", sum.Over))
	for _, k := range sum.Keys {
		fields = append(fields, zap.Int(k, sum.Counts[k]))
	}
	fields = append(fields, zap.NamedError("lastError", sum.Last))
	logger.Warn("writes failed, will retry", fields...)
}
