package broker

import (
	"fmt"

	"github.com/twmb/franz-go/pkg/kfake"
	"go.uber.org/zap"
	"go.uber.org/zap/zapcore"
)

// zapLogger forwards kfake's log lines to zap.
type zapLogger struct{ l *zap.Logger }

func (z zapLogger) Logf(level kfake.LogLevel, format string, args ...any) {
	lvl := zapcore.DebugLevel
	switch level {
	case kfake.LogLevelError:
		lvl = zapcore.ErrorLevel
	case kfake.LogLevelWarn:
		lvl = zapcore.WarnLevel
	case kfake.LogLevelInfo:
		// kfake logs every request at info: far too much for an
		// operator's info stream, useful when debugging a client.
		lvl = zapcore.DebugLevel
	}
	// Format only when the line is going to be written.
	if z.l.Core().Enabled(lvl) {
		z.l.Log(lvl, fmt.Sprintf(format, args...), zap.String("component", "kfake"))
	}
}
