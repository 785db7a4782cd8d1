package transport_test

import (
	"errors"
	"fmt"
	"testing"
	"time"

	"go.uber.org/zap"
	"go.uber.org/zap/zapcore"
	"go.uber.org/zap/zaptest/observer"

	"github.com/stbridge/stb/pkg/transport"
)

// TestLogSummaryFlood: a flood of 3,586 undecodable bundles over 30 s
// (issue 34, item 11: one error line with a stack each) makes a bounded
// number of warnings: the first at once, with its fields, then one line
// per interval with the counts by key, whose sum is the flood; after a
// quiet interval the next one is logged at once again.
func TestLogSummaryFlood(t *testing.T) {
	core, logs := observer.New(zapcore.DebugLevel)
	logger := zap.New(core)
	const n, seconds = 3586, 30
	interval := 10 * time.Second
	s := transport.NewLogSummary("bundle data does not decode, dead-lettering it", interval)
	t0 := time.Date(2026, 11, 27, 8, 0, 0, 0, time.UTC)
	bad := errors.New("payload: invalid character 'x' looking for beginning of value")
	for i := range n {
		now := t0.Add(time.Duration(i) * seconds * time.Second / n)
		typ := []string{"managedclusters", "compliance"}[i%2]
		s.Log(now, logger, typ+" bad_payload", zap.String("hub", fmt.Sprintf("hub-%d", i)), zap.String("type", typ), zap.Error(bad))
		if i%100 == 0 {
			s.Flush(now, logger) // a ticker's
		}
	}
	// What is left is summed up by the next flush after the interval, and
	// the one after an interval without any makes the summary quiet.
	s.Flush(t0.Add(seconds*time.Second+interval), logger)
	s.Flush(t0.Add(seconds*time.Second+2*interval), logger)
	s.Log(t0.Add(seconds*time.Second+2*interval+time.Second), logger, "heartbeat bad_payload", zap.String("hub", "hub-late"))

	entries := logs.All()
	if max := 2 + seconds/int(interval/time.Second) + 1; len(entries) > max {
		t.Fatalf("%d lines for a flood of %d over %d s, want at most %d", len(entries), n, seconds, max)
	}
	total := 0
	for i, e := range entries {
		if e.Level != zapcore.WarnLevel || e.Stack != "" {
			t.Errorf("line %d at %s with a stack of %d bytes, want a warning without", i, e.Level, len(e.Stack))
		}
		if count, ok := e.ContextMap()["count"]; ok {
			total += int(count.(int64))
			if e.ContextMap()["managedclusters bad_payload"] == nil || e.ContextMap()["last"] == nil {
				t.Errorf("summary %v without the counts by key or the last one", e.ContextMap())
			}
		} else {
			total++
			if e.ContextMap()["hub"] == nil {
				t.Errorf("line %d logged alone without its fields: %v", i, e.ContextMap())
			}
		}
	}
	if total != n+1 {
		for _, e := range entries {
			t.Log(e.Message, e.ContextMap())
		}
		t.Errorf("the lines count %d occurrences, want %d", total, n+1)
	}
	if last := entries[len(entries)-1]; last.ContextMap()["hub"] != "hub-late" {
		t.Errorf("after a quiet interval the next one is not logged at once: %v", last.ContextMap())
	}
	t.Logf("%d occurrences in %d lines", n+1, len(entries))
}
