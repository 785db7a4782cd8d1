package bench

import (
	"context"
	"fmt"
	"math"
	"time"

	"github.com/stbridge/stb/internal/humanize"
	"github.com/stbridge/stb/internal/metricview"
)

// calibrationWindow is how long the baseline runs to measure what the
// database absorbs, when catch-up did not measure it in this invocation.
const calibrationWindow = 20 * time.Second

// overloadReadSample is how many messages of the overload stream the read
// ceiling reads back.
const overloadReadSample = 200_000

// freshnessMetric is the histogram of the time from a bundle's event time
// to its commit.
const freshnessMetric = "stb_bundle_freshness_seconds"

// benchOverload: the hubs publish --overload-factor times what the
// database absorbs message by message (the baseline's throughput) for
// --duration, with the bridge reading live. Freshness is taken from the
// bridge's own histogram, per half of the run; RSS is sampled every
// second. Afterwards the bridge (with conflation) must catch up and hold
// the final state.
func benchOverload(ctx context.Context, e *benchEnv, res *scenarioResult) error {
	rate := e.cfg.OverloadRate
	if rate == 0 {
		absorb := e.baselineRate
		how := "the baseline's write rate in catch-up"
		if absorb == 0 {
			var err error
			if absorb, err = e.calibrate(ctx); err != nil {
				return err
			}
			how = fmt.Sprintf("the baseline's write rate over %s of a backlog", calibrationWindow)
		}
		res.row("c", "absorbed message by message").
			set("asked rate", "messagesPerSecond", absorb, perSecond(absorb, time.Second)+"/s").
			Note = how
		rate = e.cfg.OverloadFactor * absorb
	}
	res.Params["hubs"], res.Params["duration"], res.Params["rate"] = e.cfg.Hubs, e.cfg.Duration.String(), fmt.Sprintf("%.0f/s", rate)
	half := e.cfg.Duration / 2

	var stb, base overloadRun
	for _, v := range []struct {
		role, name, db string
		conflation     bool
	}{
		{"a", "stb (conflation)", "stb_bench_overload_stb", true},
		{"b", "baseline (--conflation=false)", "stb_bench_overload_baseline", false},
	} {
		short := map[bool]string{true: "stb", false: "baseline"}[v.conflation]
		r, err := e.overloadVariant(ctx, "overload/"+short, v.db, v.conflation, e.topic("overload-"+short), rate)
		if err != nil {
			return err
		}
		row := res.row(v.role, v.name).
			set("asked rate", "askedRate", rate, perSecond(rate, time.Second)+"/s").
			set("sent rate", "sentRate", r.sentRate, perSecond(r.sentRate, time.Second)+"/s").
			set("read/s", "readPerSecond", r.readRate, perSecond(r.readRate, time.Second)).
			set("written/s", "writtenPerSecond", r.writtenRate, perSecond(r.writtenRate, time.Second)).
			set("fresh p50 1st/2nd half", "freshnessP50", r.p50[1], humanize.Seconds(r.p50[0])+" / "+humanize.Seconds(r.p50[1])).
			set("fresh p99 1st/2nd half", "freshnessP99", r.p99[1], humanize.Seconds(r.p99[0])+" / "+humanize.Seconds(r.p99[1])).
			set("rss at half → end", "rssEnd", float64(r.rss2.Last), mib(float64(r.rss2.First))+" → "+mib(float64(r.rss2.Last))).
			set("rss slope 2nd half", "rssSlopePerMinute", r.rss2.SlopePerMinute, mib(r.rss2.SlopePerMinute)+"/min").
			peakRSS(r.peak).
			set("go heap at half → end", "goHeapEnd", float64(r.heap[1]), mib(float64(r.heap[0]))+" → "+mib(float64(r.heap[1])))
		row.Values["freshnessP50FirstHalf"], row.Values["freshnessP99FirstHalf"] = r.p50[0], r.p99[0]
		row.Values["rssHalf"], row.Values["rssMaxSecondHalf"] = float64(r.rss2.First), float64(r.rss2.Max)
		row.Values["heldBytesEnd"], row.Values["goHeapHalf"] = float64(r.heldEnd), float64(r.heap[0])
		row.Values["unreadEnd"] = float64(r.unread)
		row.Note = r.note
		if !v.conflation {
			base = r
		}
		if v.conflation {
			stb = r
			if r.checked {
				row.set("state", "verified", boolValue(r.verified), verifiedText(r.verified, false))
			} else {
				row.set("state", "verified", math.NaN(), "not checked")
			}
		}
		res.note("%s held at the end of the run: %s bundles (%s of payload)", short, r.held, mib(float64(r.heldEnd)))
	}
	// c: how fast this machine reads and decodes such a stream at all.
	if n := min(stb.sent, overloadReadSample); n > 0 {
		rd, err := readAndDecode(ctx, e.brokers, []string{e.topic("overload-stb")}, e.group("stb_bench_overload_read"), n, e.decoder(0), nil, nil)
		if err != nil {
			return err
		}
		read := float64(rd.Messages) / rd.Elapsed.Seconds()
		res.row("c", "read+decode ceiling").
			set("read/s", "readPerSecond", read, perSecond(read, time.Second)).
			Note = fmt.Sprintf("the first %s messages of the stb variant's topic read back as fast as possible, nothing else running", thousands(rd.Messages))
		res.ratio("asked rate / read+decode ceiling", rate/read, "above 1, the machine cannot even read the load")
		raw, err := readRaw(ctx, e.brokers, []string{e.topic("overload-stb")}, e.group("stb_bench_overload_raw"), n, nil)
		if err != nil {
			return err
		}
		rawRate := float64(raw.Messages) / raw.Elapsed.Seconds()
		res.row("c", "raw read ceiling").
			set("read/s", "readPerSecond", rawRate, perSecond(rawRate, time.Second)).
			Note = "the same messages, polled and touched, nothing decoded"
		res.ratio("asked rate / raw read ceiling", rate/rawRate, "")
	}
	res.ratio("stb freshness p99 2nd half / 1st half", stb.p99[1]/stb.p99[0], "").atMost(1.2, "×")
	res.rssBudget(stb.peak, e.cfg.MaxBufferedBytes, "over the whole variant: the overload, then the catch-up and the check")
	growth := float64(stb.rss2.First) + stb.rss2.SlopePerMinute*half.Minutes()
	res.ratio("stb RSS fitted over the 2nd half: end / start", growth/float64(stb.rss2.First),
		fmt.Sprintf("%s/min; samples %s → %s", mib(stb.rss2.SlopePerMinute), mib(float64(stb.rss2.First)), mib(float64(stb.rss2.Last)))).atMost(1.05, "× (flat within GC noise)")
	res.note("freshness is the bridge's stb_bundle_freshness_seconds histogram (event time → commit), the difference of snapshots at the start, half and end of the run; quantiles are interpolated in buckets that double")
	res.note("RSS is this process only: the bridge (the broker and the producer are child processes); go heap is the live heap after the last GC")
	res.note("read/s and written/s are over the second half; stb had about %s messages sent but not yet read at the end, the baseline about %s",
		thousands(stb.unread), thousands(base.unread))
	return nil
}

// overloadRun is how a variant did under overload.
type overloadRun struct {
	sentRate, readRate, writtenRate float64
	p50, p99                        [2]float64 // per half
	rss2                            rssTrend   // over the second half
	heap                            [2]int64   // Go's live heap at the half and the end
	peak                            memUse     // from the variant's start to its stop
	heldEnd, unread, sent           int64
	checked, verified               bool
	note, held                      string
}

// overloadVariant runs one variant for --duration under the rate, then,
// with conflation, lets it catch up and verifies the final state.
func (e *benchEnv) overloadVariant(ctx context.Context, label, dbName string, conflation bool, topic string, rate float64) (overloadRun, error) {
	var r overloadRun
	// Produced ahead: the producers build the window's messages first and
	// then only send them, so that they reach the rate asked for.
	l, err := e.startLiveSpec(ctx, label, dbName, conflation, topic, rate, e.cfg.OverloadProducers, produceSpec{Ahead: true})
	if err != nil {
		return r, err
	}
	defer func() { _ = l.stop() }()
	// finish stops the variant and takes its peak, over all of its run.
	finish := func() (overloadRun, error) {
		err := l.stop()
		r.peak = l.bb.peak()
		return r, err
	}
	snap := func() histSnapshot {
		return snapshotHistogram(metricview.Gather(l.bb.b.Gatherer()), freshnessMetric, nil)
	}
	half, full := e.cfg.Duration/2, e.cfg.Duration
	h0 := snap()
	cpu0 := struct{ producer, broker time.Duration }{l.p.cpu(), cpuOf(e.broker.pid())}
	if err := l.until(ctx, e, half); err != nil {
		return r, err
	}
	h1 := snap()
	w1 := l.sample()
	r.heap[0] = goLiveHeap()
	if err := l.until(ctx, e, full); err != nil {
		return r, err
	}
	h2 := snap()
	w2 := l.sample()
	r.heap[1] = goLiveHeap()
	r.held = l.bb.heldSummary()
	e.out.done()
	first, second := h1.minus(h0), h2.minus(h1)
	r.p50 = [2]float64{first.quantile(0.5), second.quantile(0.5)}
	r.p99 = [2]float64{first.quantile(0.99), second.quantile(0.99)}
	r.rss2 = trendOf(l.rssBetween(half, full+time.Second))
	r.sentRate = float64(w2.Sent) / w2.At.Seconds()
	r.sent = w2.Sent
	r.writtenRate = (w2.Written - w1.Written) / (w2.At - w1.At).Seconds()
	r.readRate = (w2.Read - w1.Read) / (w2.At - w1.At).Seconds()
	r.heldEnd, r.unread = w2.Held, max(0, w2.Sent-int64(w2.Read))
	r.note = joinNotes(r.note, fmt.Sprintf("the producers (%d) used %.2f cores, the broker %.2f", len(l.p.ps),
		(l.p.cpu()-cpu0.producer).Seconds()/w2.At.Seconds(), (cpuOf(e.broker.pid())-cpu0.broker).Seconds()/w2.At.Seconds()))
	r.note = joinNotes(l.describe(full), r.note)

	if !conflation {
		// The baseline would take ten times the run to drain; it is
		// compared under overload only.
		return finish()
	}
	// Let the producer finish its last round, then the bridge catch up.
	select {
	case <-l.p.done():
	case <-time.After(full / 2):
		l.p.stop()
		r.note = joinNotes(r.note, "the producer had not finished within half of --duration after it; not verified")
		return finish()
	case <-ctx.Done():
		return r, ctx.Err()
	}
	exp, err := l.p.wait(ctx)
	if err != nil {
		return r, err
	}
	drainStart := time.Now()
	cu, err := e.waitCaughtUp(ctx, l.bb, int64(exp.Messages), 0, verifyCheck(exp))
	if err != nil {
		return r, err
	}
	r.checked, r.verified = true, cu.Complete
	r.note = joinNotes(r.note, fmt.Sprintf("%s messages; after the producer stopped, the final state was written and verified in %s",
		thousands(int64(exp.Messages)), secs(time.Since(drainStart))))
	return finish()
}

// calibrate measures what the database absorbs message by message: the
// baseline's write rate over a backlog.
func (e *benchEnv) calibrate(ctx context.Context) (float64, error) {
	topic := e.topic("overload-calibrate")
	exp, _, err := e.produce(ctx, "overload/calibrate", e.simConfig(topic, 5000*calibrationWindow.Seconds()))
	if err != nil {
		return 0, err
	}
	bb, err := e.startBridge(ctx, variantOpts{label: "overload/calibrate", topics: []string{topic}, db: "stb_bench_overload_calibrate"})
	if err != nil {
		return 0, err
	}
	r, err := e.waitCaughtUp(ctx, bb, int64(exp.Messages), calibrationWindow, verifyCheck(exp))
	if stopErr := bb.stop(); err == nil {
		err = stopErr
	}
	if err != nil {
		return 0, err
	}
	_, rate := r.estimate(int64(exp.Messages))
	if rate <= 0 || math.IsNaN(rate) {
		return 0, fmt.Errorf("calibration: the baseline wrote nothing in %s", calibrationWindow)
	}
	return rate, nil
}

func joinNotes(a, b string) string {
	switch {
	case a == "":
		return b
	case b == "":
		return a
	}
	return a + "; " + b
}
