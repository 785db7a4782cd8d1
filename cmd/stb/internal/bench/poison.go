package bench

import (
	"context"
	"fmt"
	"time"

	"github.com/stbridge/stb/internal/humanize"
	"github.com/stbridge/stb/internal/metricview"
)

// benchPoisonFlood: the hubs publish valid bundles live at --steady-rate
// while, a few seconds in, a second producer floods the same topic with
// --poison-messages rejects as fast as it can (half of an unknown type,
// half bundles of hubs of their own whose data is not JSON): the reject
// throughput. Then the same live traffic with a reject after every valid
// message (mixed 1:1), and without any: the valid traffic's freshness p99
// (event time → committed) with rejects mixed in against without. Every
// run verifies. Every message of an unknown type must be stored exactly
// once, by the reader; bad data is decoded only when a worker takes it, so
// only the bad bundles not replaced by a newer one of their poison hub are
// dead-lettered, each once, and nothing valid is.
func benchPoisonFlood(ctx context.Context, e *benchEnv, res *scenarioResult) error {
	rate, window := e.cfg.SteadyRate, min(e.cfg.Duration, 30*time.Second)
	const floodAfter = 5 * time.Second
	res.Params["hubs"], res.Params["rate"], res.Params["window"] = e.cfg.Hubs, fmt.Sprintf("%.0f/s", rate), window.String()
	res.Params["rejects"] = e.cfg.PoisonMessages

	type run struct {
		label            string
		fresh50, fresh99 float64
		rejects, letters int64
		// unknown and bad are the letters of unknown_type (the reader's)
		// and of bad_payload (the workers'); strays the bad_payload
		// letters of hubs other than the poison ones.
		unknown, bad, strays int64
		rejectTime           time.Duration
		verified             bool
		peak                 memUse
	}
	countLetters := func(ctx context.Context, l *liveRun, out *run) error {
		return l.bb.pool.QueryRow(ctx, `SELECT count(*),
			count(*) FILTER (WHERE reason = 'unknown_type'),
			count(*) FILTER (WHERE reason = 'bad_payload'),
			count(*) FILTER (WHERE reason = 'bad_payload' AND right(hub, length($1)) <> $1)
			FROM stb.dead_letters`, poisonHub).Scan(&out.letters, &out.unknown, &out.bad, &out.strays)
	}
	variant := func(label, topic, dbName string, flood, mix bool) (run, error) {
		out := run{label: label}
		saved := e.cfg.Duration
		e.cfg.Duration = window
		l, err := e.startLiveSpec(ctx, label, dbName, true, topic, rate, 1, produceSpec{PoisonMix: mix})
		e.cfg.Duration = saved
		if err != nil {
			return out, err
		}
		defer func() { _ = l.stop() }()
		if flood {
			if err := l.until(ctx, e, floodAfter); err != nil {
				return out, err
			}
			cfg := e.backlogConfig(topic, float64(e.cfg.PoisonMessages)/roundsMargin)
			cfg.Seed++ // other contents than the live hubs'; its versions never reach a unit
			p, err := startProducer(e.produceCmd, produceSpec{Brokers: e.brokers, Sim: cfg, Poison: true})
			if err != nil {
				return out, err
			}
			start := time.Now()
			flooded, err := p.wait(ctx)
			if err != nil {
				return out, fmt.Errorf("flood: %w", err)
			}
			out.rejects = int64(flooded.Messages)
			// The reader's rejects are stored as they are read; the bad
			// data waits in its units for a worker, like valid bundles.
			for out.unknown < unknownRejects(out.rejects) {
				if err := countLetters(ctx, l, &out); err != nil {
					return out, err
				}
				if err := l.bb.failed(); err != nil {
					return out, err
				}
				if time.Since(start) > e.cfg.Timeout {
					return out, fmt.Errorf("%s: %d of %d rejects of an unknown type dead-lettered after %v", label, out.unknown, unknownRejects(out.rejects), e.cfg.Timeout)
				}
				select {
				case <-ctx.Done():
					return out, ctx.Err()
				case <-time.After(100 * time.Millisecond):
				}
				l.sample()
			}
			out.rejectTime = time.Since(start)
		}
		if err := l.until(ctx, e, window); err != nil {
			return out, err
		}
		exp, err := l.p.wait(ctx)
		if err != nil {
			return out, err
		}
		if mix {
			out.rejects = int64(exp.Messages) // one after each valid message
		}
		r, err := e.waitCaughtUp(ctx, l.bb, int64(exp.Messages)+out.rejects, 0, verifyCheck(exp))
		if err != nil {
			return out, err
		}
		out.verified = r.Complete
		if err := countLetters(ctx, l, &out); err != nil {
			return out, err
		}
		h := snapshotHistogram(metricview.Gather(l.bb.b.Gatherer()), freshnessMetric, nil)
		out.fresh50, out.fresh99 = h.quantile(0.5), h.quantile(0.99)
		err = l.stop()
		out.peak = l.bb.peak()
		return out, err
	}

	flooded, err := variant("poison-flood/burst", e.topic("poison"), "stb_bench_poison", true, false)
	if err != nil {
		return err
	}
	mixed, err := variant("poison-flood/mixed", e.topic("poison-mixed"), "stb_bench_poison_mixed", false, true)
	if err != nil {
		return err
	}
	clean, err := variant("poison-flood/clean", e.topic("poison-clean"), "stb_bench_poison_clean", false, false)
	if err != nil {
		return err
	}
	rejectRate := float64(flooded.rejects) / flooded.rejectTime.Seconds()
	for _, v := range []run{flooded, mixed, clean} {
		row := res.row("a", v.label).
			set("rejects", "rejects", float64(v.rejects), thousands(v.rejects)).
			set("dead letters", "deadLetters", float64(v.letters), thousands(v.letters))
		if v.rejects > 0 {
			row.set("rejects/s", "rejectsPerSecond", float64(v.rejects)/v.rejectTime.Seconds(), perSecond(float64(v.rejects), v.rejectTime))
		}
		row.set("fresh p50/p99", "freshnessP99", v.fresh99, humanize.Seconds(v.fresh50)+" / "+humanize.Seconds(v.fresh99)).
			peakRSS(v.peak).
			set("state", "verified", boolValue(v.verified), verifiedText(v.verified, false))
		if v.rejects > 0 {
			row.Note = fmt.Sprintf("%s unknown_type, %s bad_payload (the other bad bundles replaced unread)", thousands(v.unknown), thousands(v.bad))
		}
	}
	for _, v := range []run{flooded, mixed} {
		switch {
		case v.unknown != unknownRejects(v.rejects):
			return fmt.Errorf("%s: %d unknown_type dead letters stored for %d such rejects: each must be stored exactly once", v.label, v.unknown, unknownRejects(v.rejects))
		case v.strays > 0 || v.bad > v.rejects-unknownRejects(v.rejects):
			return fmt.Errorf("%s: %d bad_payload dead letters, %d of them of valid hubs, for %d bad bundles of poison hubs", v.label, v.bad, v.strays, v.rejects-unknownRejects(v.rejects))
		case v.letters != v.unknown+v.bad:
			return fmt.Errorf("%s: %d dead letters, of which %d neither unknown_type nor bad_payload", v.label, v.letters, v.letters-v.unknown-v.bad)
		}
	}
	rr := res.ratio("rejects dead-lettered per second", rejectRate,
		fmt.Sprintf("%s rejects read in %s (their unknown_type letters stored, their bad data in units), while the live traffic went on",
			thousands(flooded.rejects), secs(flooded.rejectTime)))
	rr.Unit = "/s"
	rr.atLeast(10_000, "/s")
	res.ratio("valid freshness p99, mixed 1:1 / none", mixed.fresh99/clean.fresh99,
		"every valid message followed by a reject, at the same rate").atMost(2, "×")
	res.ratio("valid freshness p99, burst / none", flooded.fresh99/clean.fresh99,
		"the valid messages behind the burst in their partitions wait until it is read")
	worst := flooded
	for _, v := range []run{mixed, clean} {
		if v.peak.RSS > worst.peak.RSS {
			worst = v
		}
	}
	res.rssBudget(worst.peak, e.cfg.MaxBufferedBytes, "the worst run, "+worst.label)
	return nil
}
