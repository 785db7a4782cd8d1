package transport

import (
	"time"

	"github.com/confluentinc/confluent-kafka-go/v2/kafka"
	"go.uber.org/zap"
	"go.uber.org/zap/zapcore"

	"github.com/stbridge/stb/pkg/logsum"
)

// forwardLogs writes librdkafka's log lines to logger until the client
// closes the channel, which it does when the client itself is closed.
func forwardLogs(logs <-chan kafka.LogEvent, logger *zap.Logger) {
	for ev := range logs {
		lvl := syslogLevel(ev.Level)
		if logger.Core().Enabled(lvl) {
			logger.Log(lvl, ev.Message, zap.String("client", ev.Name), zap.String("facility", ev.Tag))
		}
	}
}

// syslogLevel maps librdkafka's syslog levels to zap's. Level 3 (err) is
// mostly lost connections that librdkafka retries on its own and reports
// again as error events if they matter, so it is a warning here.
func syslogLevel(l int) zapcore.Level {
	switch {
	case l <= 2:
		return zapcore.ErrorLevel
	case l <= 4:
		return zapcore.WarnLevel
	case l <= 6:
		return zapcore.InfoLevel
	}
	return zapcore.DebugLevel
}

// LogSummary sums up a warning that may come once per message, as the
// dispatcher's retry log sums up failed writes: one line per undecodable
// bundle, at error level with a stack, was 3,586 lines in a flood of
// malformed payloads (issue 34, item 11), and buried what mattered. The
// first occurrence after a quiet interval is logged at once, with its
// fields; the others are counted by key (such as "type reason") and
// summed up in one line per interval, with the counts and the last one's
// fields, by the next Log after the interval ends or by Flush, which the
// owner calls on a ticker and once when it stops. An interval without any
// makes it quiet again, so that the next is logged at once. Lines are
// warnings: the message is a sender's, and a stack says nothing of it.
// Safe for concurrent use; it logs outside its lock.
type LogSummary struct {
	msg string
	c   *logsum.Counter[[]zap.Field]
}

// NewLogSummary returns a summary of the warning msg, summed up every
// interval.
func NewLogSummary(msg string, interval time.Duration) *LogSummary {
	return &LogSummary{msg: msg, c: logsum.New[[]zap.Field](interval)}
}

// Log records one occurrence at now, counted under key: logged at once
// with fields when the summary is quiet, else counted; an interval that
// has ended is summed up first.
func (s *LogSummary) Log(now time.Time, logger *zap.Logger, key string, fields ...zap.Field) {
	if s.c.Add(now, key, fields) {
		logger.Warn(s.msg, append(fields, zap.Duration("summedUpEvery", s.c.Interval()))...)
		return
	}
	s.Flush(now, logger)
}

// Flush logs what was counted since the interval began, if it has ended
// by now, and starts the next one.
func (s *LogSummary) Flush(now time.Time, logger *zap.Logger) {
	sum, ok := s.c.Take(now)
	if !ok {
		return
	}
	fields := make([]zap.Field, 0, len(sum.Keys)+3)
	fields = append(fields, zap.Int("count", sum.Total), zap.Duration("over", sum.Over))
	for _, k := range sum.Keys {
		fields = append(fields, zap.Int(k, sum.Counts[k]))
	}
	fields = append(fields, zap.Dict("last", sum.Last...))
	logger.Warn(s.msg+" (summed up)", fields...)
}
