package bench

import (
	"context"
	"fmt"
	"time"
)

// catchUpResult is how a variant caught up with a backlog.
type catchUpResult struct {
	// Elapsed runs from the start to the moment every message was done
	// and the database then held the final state, or to the limit.
	Elapsed time.Duration
	// FirstWrite runs from the start to the first bundle written.
	FirstWrite time.Duration
	Finished   int64
	Counters   counters
	// Peak is the most memory the variant used from its start to its
	// stop (the bridge's sampler), set by catchUpVariant once it stopped.
	Peak memUse
	// ReadAll is when the reader had read every message, and
	// WrittenAtReadAll the bundles written by type by then.
	ReadAll          time.Duration
	WrittenAtReadAll map[string]float64
	HeldAtReadAll    string
	// Complete: every message done and the check passed.
	Complete bool
	// CheckSummary says what the last failed check found.
	CheckSummary string
}

// estimate returns the time the variant took, or would have taken at the
// rate it processed messages at after its first write, to finish total
// messages, and that rate in messages per second.
func (r catchUpResult) estimate(total int64) (time.Duration, float64) {
	window := (r.Elapsed - r.FirstWrite).Seconds()
	if r.Complete {
		return r.Elapsed, float64(total) / max(window, 1e-9)
	}
	rate := r.Counters.processed / max(window, 1e-9)
	if rate <= 0 {
		return r.Elapsed, 0
	}
	return r.FirstWrite + time.Duration(float64(total)/rate*float64(time.Second)), rate
}

// stateCheck says whether the variant's database holds the final state,
// and if not, what differs.
type stateCheck func(ctx context.Context, bb *benchBridge) (ok bool, summary string, err error)

// catchUpPoll is how often a catching-up bridge is looked at.
const catchUpPoll = 50 * time.Millisecond

// waitCaughtUp polls the bridge until it is done with total messages and
// check passes, or limit (if not 0) or the bench timeout passes.
func (e *benchEnv) waitCaughtUp(ctx context.Context, bb *benchBridge, total int64, limit time.Duration, check stateCheck) (catchUpResult, error) {
	var res catchUpResult
	tick := time.NewTicker(catchUpPoll)
	defer tick.Stop()
	var lastShown time.Time
	var lastWritten float64
	lastCheck := time.Time{}
	for {
		select {
		case <-ctx.Done():
			return res, ctx.Err()
		case <-tick.C:
		}
		if err := bb.failed(); err != nil {
			return res, err
		}
		now := time.Now()
		elapsed := now.Sub(bb.started)
		res.Finished = bb.finished()
		// The registry is gathered every poll only until the first write;
		// after that once a second, as it costs a share of a core.
		if res.FirstWrite == 0 || now.Sub(lastShown) >= time.Second {
			res.Counters = bb.counters()
			if res.FirstWrite == 0 && res.Counters.written > 0 {
				res.FirstWrite = elapsed
			}
		}
		if res.ReadAll == 0 && int64(bb.b.Stats().Read) >= total {
			res.ReadAll, res.WrittenAtReadAll, res.HeldAtReadAll = elapsed, bb.writtenByType(), bb.heldSummary()
		}
		if now.Sub(lastShown) >= time.Second {
			rate := (res.Counters.written - lastWritten) / max(now.Sub(lastShown).Seconds(), 1e-9)
			if lastShown.IsZero() {
				rate = 0
			}
			lastShown, lastWritten = now, res.Counters.written
			e.out.progress("%s [%5.1fs] read %s/%s | done %s | written %s (%.0f/s) | conflated %s | held %s | rss %s",
				bb.label, elapsed.Seconds(), thousands(int64(res.Counters.read)), thousands(total), thousands(res.Finished),
				thousands(int64(res.Counters.written)), rate, thousands(int64(res.Counters.conflated)),
				mib(float64(res.Counters.held)), mib(float64(selfRSS())))
		}
		if res.Finished >= total && now.Sub(lastCheck) >= time.Second {
			lastCheck = now
			ok, summary, err := check(ctx, bb)
			if err != nil {
				return res, fmt.Errorf("%s: check: %w", bb.label, err)
			}
			if ok {
				res.Elapsed, res.Complete, res.CheckSummary = elapsed, true, ""
				res.Counters = bb.counters()
				e.out.done()
				return res, nil
			}
			res.CheckSummary = summary
		}
		if limit > 0 && elapsed >= limit {
			res.Elapsed = elapsed
			res.Counters = bb.counters()
			e.out.done()
			return res, nil
		}
		if elapsed >= e.cfg.Timeout {
			res.Elapsed = elapsed
			res.Counters = bb.counters()
			e.out.done()
			if res.Finished >= total {
				return res, fmt.Errorf("%s: every message done, but the database does not hold the final state after %v: %s",
					bb.label, e.cfg.Timeout, res.CheckSummary)
			}
			return res, fmt.Errorf("%s: %d of %d messages done after %v (--timeout)", bb.label, res.Finished, total, e.cfg.Timeout)
		}
	}
}
