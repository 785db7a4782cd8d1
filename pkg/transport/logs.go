package transport

import (
	"github.com/confluentinc/confluent-kafka-go/v2/kafka"
	"go.uber.org/zap"
	"go.uber.org/zap/zapcore"
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
