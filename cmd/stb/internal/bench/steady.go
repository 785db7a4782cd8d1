package bench

import (
	"context"
	"fmt"
	"time"

	"github.com/stbridge/stb/internal/humanize"
	"github.com/stbridge/stb/internal/metricview"
)

// benchSteady: the hubs publish at a realistic rate (--steady-rate) for
// --duration with the bridge reading live; after a warm-up, the CPU time
// of this process (the bridge alone: the broker and the producer are
// child processes) and of the PostgreSQL server is taken before and after
// and divided by the bundles read and written in between.
func benchSteady(ctx context.Context, e *benchEnv, res *scenarioResult) error {
	rate := e.cfg.SteadyRate
	warm := min(10*time.Second, e.cfg.Duration/4)
	res.Params["hubs"], res.Params["rate"], res.Params["window"] = e.cfg.Hubs, fmt.Sprintf("%.0f/s", rate),
		fmt.Sprintf("%s after a %s warm-up", e.cfg.Duration-warm, warm)

	var perMsg [2]float64
	var topicStb string
	var readStb int64
	var stb steadyMeasure
	var stbPeak memUse
	for i, v := range []struct {
		role, name, db string
		conflation     bool
	}{
		{"a", "stb (conflation)", "stb_bench_steady_stb", true},
		{"b", "baseline (--conflation=false)", "stb_bench_steady_baseline", false},
	} {
		short := map[bool]string{true: "stb", false: "baseline"}[v.conflation]
		topic := e.topic("steady-" + short)
		if v.conflation {
			topicStb = topic
		}
		l, err := e.startLive(ctx, "steady/"+short, v.db, v.conflation, topic, rate)
		if err != nil {
			return err
		}
		m, err := e.steadyWindow(ctx, l, warm)
		if stopErr := l.stop(); err == nil {
			err = stopErr
		}
		if err != nil {
			return err
		}
		peak := l.bb.peak()
		if v.conflation {
			readStb, stb, stbPeak = int64(l.bb.b.Stats().Read), m, peak
		}
		perMsg[i] = m.cpu.Seconds() / m.read * 1000
		row := res.row(v.role, v.name).
			set("read/s", "readPerSecond", m.read/m.took.Seconds(), perSecond(m.read, m.took)).
			set("written/s", "writtenPerSecond", m.written/m.took.Seconds(), perSecond(m.written, m.took)).
			set("cpu s/1k read", "cpuSecondsPer1000Read", perMsg[i], fmt.Sprintf("%.3f", perMsg[i])).
			set("cpu s/1k written", "cpuSecondsPer1000Written", m.cpu.Seconds()/m.written*1000, fmt.Sprintf("%.3f", m.cpu.Seconds()/m.written*1000)).
			set("bridge cores", "bridgeCores", m.cpu.Seconds()/m.took.Seconds(), fmt.Sprintf("%.2f", m.cpu.Seconds()/m.took.Seconds())).
			set("postgres s/1k read", "postgresCPUSecondsPer1000Read", m.pgCPU.Seconds()/m.read*1000, fmt.Sprintf("%.3f", m.pgCPU.Seconds()/m.read*1000)).
			set("fresh p50/p99", "freshnessP99", m.p99, humanize.Seconds(m.p50)+" / "+humanize.Seconds(m.p99)).
			peakRSS(peak)
		row.Values["bridgeAndPostgresCPUSecondsPer1000Read"] = m.withPostgresPer1000Read()
		row.Note = joinNotes(fmt.Sprintf("broker %.2f, producer %.2f cores", m.brokerCPU.Seconds()/m.took.Seconds(), m.producerCPU.Seconds()/m.took.Seconds()),
			l.describe(e.cfg.Duration))
	}

	// c: the CPU time of reading and decoding alone, over the messages
	// the first variant read.
	if readStb > 0 {
		cpu0 := selfCPU()
		rd, err := readAndDecode(ctx, e.brokers, []string{topicStb}, e.group("stb_bench_steady_read"), readStb, e.decoder(0), nil, nil)
		if err != nil {
			return err
		}
		cpu := selfCPU() - cpu0
		per := cpu.Seconds() / float64(rd.Messages) * 1000
		res.row("c", "read+decode ceiling").
			set("read/s", "readPerSecond", float64(rd.Messages)/rd.Elapsed.Seconds(), perSecond(float64(rd.Messages), rd.Elapsed)).
			set("cpu s/1k read", "cpuSecondsPer1000Read", per, fmt.Sprintf("%.3f", per)).
			Note = fmt.Sprintf("%s messages of the stb variant's topic read back as fast as possible", thousands(rd.Messages))
		res.ratio("stb cpu per bundle read / read+decode ceiling", perMsg[0]/per, "")
		cpu0 = selfCPU()
		raw, err := readRaw(ctx, e.brokers, []string{topicStb}, e.group("stb_bench_steady_raw"), readStb, nil)
		if err != nil {
			return err
		}
		rawPer := (selfCPU() - cpu0).Seconds() / float64(raw.Messages) * 1000
		res.row("c", "raw read ceiling").
			set("read/s", "readPerSecond", float64(raw.Messages)/raw.Elapsed.Seconds(), perSecond(float64(raw.Messages), raw.Elapsed)).
			set("cpu s/1k read", "cpuSecondsPer1000Read", rawPer, fmt.Sprintf("%.3f", rawPer)).
			Note = "the same messages, polled and touched, nothing decoded"
		res.ratio("stb cpu per bundle read / raw read ceiling", perMsg[0]/rawPer, "")
	}
	res.ratio("stb cpu per bundle read / baseline", perMsg[0]/perMsg[1], "")
	both := stb.withPostgresPer1000Read()
	r := res.ratio("stb bridge + PostgreSQL CPU-s per 1,000 bundles", both,
		fmt.Sprintf("bridge %.3f + postgres %.3f CPU-s per 1,000 bundles read", stb.cpu.Seconds()/stb.read*1000, stb.pgCPU.Seconds()/stb.read*1000))
	r.Unit = "CPU-s"
	r.atMost(0.35, " CPU-s")
	res.rssBudget(stbPeak, e.cfg.MaxBufferedBytes, "")
	res.note("cpu is user+system time of this process (getrusage), the bridge alone; postgres is the CPU time of every postgres process over the window")
	return nil
}

// steadyMeasure is what a steady window measured.
type steadyMeasure struct {
	took                               time.Duration
	read, written                      float64
	cpu, pgCPU, brokerCPU, producerCPU time.Duration
	p50, p99                           float64
}

// withPostgresPer1000Read is the CPU time of the bridge and of PostgreSQL
// together per 1,000 bundles read: what the steady state costs (docs/design.md,
// Performance, holds it to 0.35 CPU-s).
func (m steadyMeasure) withPostgresPer1000Read() float64 {
	return (m.cpu + m.pgCPU).Seconds() / m.read * 1000
}

// steadyWindow waits out the warm-up, then measures until --duration.
func (e *benchEnv) steadyWindow(ctx context.Context, l *liveRun, warm time.Duration) (steadyMeasure, error) {
	var m steadyMeasure
	if err := l.until(ctx, e, warm); err != nil {
		return m, err
	}
	type point struct {
		at                        time.Time
		cpu, pg, broker, producer time.Duration
		c                         counters
		h                         histSnapshot
	}
	take := func() point {
		return point{at: time.Now(), cpu: selfCPU(), pg: postgresCPU(), broker: cpuOf(e.broker.pid()), producer: l.p.cpu(),
			c: l.bb.counters(), h: snapshotHistogram(metricview.Gather(l.bb.b.Gatherer()), freshnessMetric, nil)}
	}
	p0 := take()
	if err := l.until(ctx, e, e.cfg.Duration); err != nil {
		return m, err
	}
	p1 := take()
	e.out.done()
	h := p1.h.minus(p0.h)
	m = steadyMeasure{
		took: p1.at.Sub(p0.at), read: p1.c.read - p0.c.read, written: p1.c.written - p0.c.written,
		cpu: p1.cpu - p0.cpu, pgCPU: p1.pg - p0.pg, brokerCPU: p1.broker - p0.broker, producerCPU: p1.producer - p0.producer,
		p50: h.quantile(0.5), p99: h.quantile(0.99),
	}
	if m.read <= 0 {
		return m, fmt.Errorf("%s: nothing read in the measured window", l.label)
	}
	return m, nil
}
