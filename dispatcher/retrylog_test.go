package dispatcher

import (
	"errors"
	"testing"
	"time"

	"go.uber.org/zap"
	"go.uber.org/zap/zaptest/observer"

	"github.com/stbridge/stb/conflation"
	"github.com/stbridge/stb/pkg/bundle"
)

// A minute of outage fails every hub's bundles again and again: the log
// gets the first failure at once and then one line per interval with the
// counts by type and class, not a line per retried job (29,459 lines in
// 160 s for 300 hubs before).
func TestRetryLogSumsUpAnOutage(t *testing.T) {
	core, logs := observer.New(zap.WarnLevel)
	logger := zap.New(core)
	l := newRetryLog(10 * time.Second)
	t0 := time.Date(2026, 11, 26, 8, 0, 0, 0, time.UTC)
	m, err := conflation.NewManager(conflation.Config{Types: []bundle.TypeInfo{{Name: "a", Kind: bundle.Complete}, {Name: "b", Kind: bundle.Complete}}})
	if err != nil {
		t.Fatal(err)
	}
	jobOf := func(hub, typ string) *conflation.Job {
		m.Insert(&bundle.Bundle{Hub: hub, Type: typ, Version: bundle.Version{Incarnation: 1, Generation: 1}})
		u, _ := m.Lookup(hub)
		return &conflation.Job{Unit: u, Type: typ, Bundles: []*bundle.Bundle{{Hub: hub, Type: typ}}}
	}
	ja, jb := jobOf("h1", "a"), jobOf("h2", "b")
	timeout := errors.New("timeout: context deadline exceeded")
	// 30 s of outage: 3,000 failures, a tick a second.
	for s := range 30 {
		now := t0.Add(time.Duration(s) * time.Second)
		for i := range 100 {
			j, class := ja, "timeout"
			if i%4 == 0 {
				j, class = jb, "connection"
			}
			l.add(now, j, class, timeout, logger)
		}
		l.flush(now, logger)
	}
	// Then quiet: the next interval's flush logs what is left and the one
	// after it makes the log quiet again.
	l.flush(t0.Add(40*time.Second), logger)
	l.flush(t0.Add(50*time.Second), logger)
	l.add(t0.Add(51*time.Second), ja, "timeout", timeout, logger)

	entries := logs.All()
	if len(entries) != 5 {
		for _, e := range entries {
			t.Log(e.Message, e.ContextMap())
		}
		t.Fatalf("%d lines for 3,001 failures over 51 s, want 5: the first at once, one per 10 s interval, the next failure after the quiet one at once", len(entries))
	}
	total := 1 // the first, logged alone
	for _, e := range entries[1:4] {
		if e.Message != "writes failed, will retry" {
			t.Fatalf("line %q, want the summary", e.Message)
		}
		f := e.ContextMap()
		total += int(f["failures"].(int64))
		if f["a timeout"] == nil || f["b connection"] == nil || f["lastError"] == nil {
			t.Errorf("summary %v lacks the counts by type and class or the last error", f)
		}
	}
	if total != 3000 {
		t.Errorf("the lines account for %d failures, want 3,000", total)
	}
	if e := entries[4]; e.Message == "writes failed, will retry" || e.ContextMap()["hub"] != "h1" {
		t.Errorf("after a quiet interval the next failure is logged at once with its hub, got %q %v", e.Message, e.ContextMap())
	}
}
