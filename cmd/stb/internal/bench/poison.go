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
// half a known type whose data is not JSON): the reject throughput. Then
// the same live traffic with a reject after every valid message (mixed
// 1:1), and without any: the valid traffic's freshness p99 (event time →
// committed) with rejects mixed in against without. Every run verifies,
// and every reject must be stored exactly once.
func benchPoisonFlood(ctx context.Context, e *benchEnv, res *scenarioResult) error {
	rate, window := e.cfg.SteadyRate, min(e.cfg.Duration, 30*time.Second)
	const floodAfter = 5 * time.Second
	res.Params["hubs"], res.Params["rate"], res.Params["window"] = e.cfg.Hubs, fmt.Sprintf("%.0f/s", rate), window.String()
	res.Params["rejects"] = e.cfg.PoisonMessages

	type run struct {
		label            string
		fresh50, fresh99 float64
		rejects, letters int64
		rejectTime       time.Duration
		verified         bool
		peak             memUse
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
			for out.letters < out.rejects {
				if err := l.bb.pool.QueryRow(ctx, `SELECT count(*) FROM status.dead_letters`).Scan(&out.letters); err != nil {
					return out, err
				}
				if err := l.bb.failed(); err != nil {
					return out, err
				}
				if time.Since(start) > e.cfg.Timeout {
					return out, fmt.Errorf("%s: %d of %d rejects dead-lettered after %v", label, out.letters, out.rejects, e.cfg.Timeout)
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
		if err := l.bb.pool.QueryRow(ctx, `SELECT count(*) FROM status.dead_letters`).Scan(&out.letters); err != nil {
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
		if v.letters != v.rejects {
			row.Note = fmt.Sprintf("%d dead letters for %d rejects: each must be stored exactly once", v.letters, v.rejects)
		}
	}
	for _, v := range []run{flooded, mixed} {
		if v.letters != v.rejects {
			return fmt.Errorf("%s: %d dead letters stored for %d rejects", v.label, v.letters, v.rejects)
		}
	}
	rr := res.ratio("rejects dead-lettered per second", rejectRate,
		fmt.Sprintf("%s rejects stored in %s, while the live traffic went on", thousands(flooded.rejects), secs(flooded.rejectTime)))
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
	res.rssBudget(worst.peak.RSS, e.cfg.MaxBufferedBytes, "the worst run, "+worst.label)
	return nil
}
