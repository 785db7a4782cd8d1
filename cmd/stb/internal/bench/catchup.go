package bench

import (
	"context"
	"fmt"
	"math"
	"strings"
	"time"

	"github.com/confluentinc/confluent-kafka-go/v2/kafka"
	cneprof "github.com/stbridge/stb/internal/profiles/cne"
	workprof "github.com/stbridge/stb/internal/profiles/work"
	"github.com/stbridge/stb/pkg/bundle"
	"github.com/stbridge/stb/pkg/db"
	"github.com/stbridge/stb/pkg/sim"
	"github.com/stbridge/stb/pkg/transport"
	"github.com/stbridge/stb/pkg/verify"
)

// benchCatchUp: a backlog of --messages messages of --hubs hubs (every
// bundle type in the simulator's mix) is in Kafka before anything reads
// it. Each variant runs until its database holds the hubs' final state,
// checked with verify.Verify once every message is done; the baseline
// stops at --baseline-limit and its total is extrapolated.
func benchCatchUp(ctx context.Context, e *benchEnv, res *scenarioResult) error {
	if v := e.agent.Bench.CatchUp; v != "" {
		run, ok := familyCatchUps[v]
		if !ok {
			return fmt.Errorf("--agent %s: the bench has no catch-up variant %q", e.agent.Name, v)
		}
		return run(e, ctx, res)
	}
	return e.catchUp(ctx, res, "catchup", e.cfg.Hubs, true)
}

// familyCatchUps are the status families' catch-up variants, by the
// name their agent's profile.Bench.CatchUp gives (the bench's code, in
// cmd/stb/internal, cannot live in the profiles' packages).
var familyCatchUps = map[string]func(*benchEnv, context.Context, *scenarioResult) error{
	workprof.Name: (*benchEnv).catchUpWork,
	cneprof.Name:  (*benchEnv).catchUpCNE,
}

// benchCatchUpManyHubs: the same backlog size from ten times the hubs
// (fewer rounds each), so that per-hub costs (units, their jobs, the
// fence rows) weigh more; stb against the ceilings, no baseline.
func benchCatchUpManyHubs(ctx context.Context, e *benchEnv, res *scenarioResult) error {
	return e.catchUp(ctx, res, "catchup-hubs", 10*e.cfg.Hubs, false)
}

// catchUp runs the catch-up scenario on a backlog of hubs hubs in topic
// suffix, with or without the baseline.
func (e *benchEnv) catchUp(ctx context.Context, res *scenarioResult, suffix string, hubs int, baseline bool) error {
	topic := e.topic(suffix)
	read := e.readTopic(topic)                                  // what the readers subscribe to
	name := "stb_bench_" + strings.ReplaceAll(suffix, "-", "_") // of databases and groups
	simCfg := e.backlogConfig(topic, float64(e.cfg.Messages))
	simCfg.Hubs = hubs
	simCfg.Generations = max(1, int(math.Ceil(float64(e.cfg.Messages)*roundsMargin/(simCfg.MessagesPerRound()*float64(hubs)))))
	res.Params["hubs"], res.Params["clusters"], res.Params["rounds"] = hubs, e.cfg.Clusters, simCfg.Generations

	// The backlog, once, read by every variant.
	exp, took, err := e.produce(ctx, "catch-up", simCfg)
	if err != nil {
		return fmt.Errorf("backlog: %w", err)
	}
	total := int64(exp.Messages)
	res.Params["messages"] = exp.Messages
	if exp.Messages < e.cfg.Messages {
		res.note("the simulation sent fewer messages than --messages: %s", thousands(total))
	}
	res.note("backlog: %s messages %v from %d hubs, produced in %s before any variant reads",
		thousands(total), exp.MessagesByType, len(exp.Hubs), took.Round(time.Second))

	// a: the bridge, first: every variant runs in this process, and its
	// peak RSS is held to the budget; the ceilings leave memory behind
	// that the C and Go heaps do not all hand back (the read+decode one
	// keeps every hub's final state for the pgx ceiling).
	a, aRows, err := e.catchUpVariant(ctx, res, catchUpSpec{role: "a", name: "stb (conflation)", label: "stb", db: name + "_stb",
		conflation: true, topic: read, total: total, exp: exp})
	if err != nil {
		return err
	}

	// c: reading alone, decoding nothing.
	raw, err := e.rawCeiling(ctx, res, []string{read}, e.group(name+"_raw"), total)
	if err != nil {
		return err
	}

	// c: reading and decoding, keeping the final state for the pgx ceiling.
	st := newFinalState(e.reg)
	rd, err := e.readDecodeCeiling(ctx, res, []string{read}, e.group(name+"_read"), total, e.decoder(0), st, "")
	if err != nil {
		return err
	}

	// c: the final state written straight through the handlers.
	pgxRes, pgxRows, pgxOK, err := e.pgxCeiling(ctx, name+"_pgx", exp, st)
	if err != nil {
		return err
	}
	finalBundles := st.bundles()
	st = nil // the bridge variants need the memory more
	res.row("c", "pgx ceiling (final state)").
		set("time", "seconds", pgxRes.Elapsed.Seconds(), secs(pgxRes.Elapsed)).
		set("bundles written", "bundlesWritten", float64(pgxRes.Bundles), thousands(pgxRes.Bundles)).
		set("rows", "rows", float64(pgxRows), thousands(pgxRows)).
		set("rows/s", "rowsPerSecond", float64(pgxRows)/pgxRes.Elapsed.Seconds(), perSecond(float64(pgxRows), pgxRes.Elapsed)).
		set("state", "verified", boolValue(pgxOK), verifiedText(pgxOK, false)).
		Note = fmt.Sprintf("%d hubs, one transaction each, %d workers", pgxRes.Transactions, e.cfg.PoolSize)

	// b: the baseline.
	var bTime time.Duration
	if baseline {
		var bDetail string
		if bTime, bDetail, err = e.catchUpBaseline(ctx, res, simCfg, read, total, exp); err != nil {
			return err
		}
		res.ratio("baseline time / stb time", bTime.Seconds()/a.Elapsed.Seconds(), bDetail).atLeast(50, "×")
	}
	res.ratio("stb time / raw read ceiling time", a.Elapsed.Seconds()/raw.Elapsed.Seconds(), "").atMost(1.5, "×")
	res.ratio("stb time / read+decode ceiling time", a.Elapsed.Seconds()/rd.Elapsed.Seconds(), "").atMost(1.2, "×")
	res.rssBudget(a.Peak, e.cfg.MaxBufferedBytes, "")
	res.ratio("stb time / pgx ceiling time", a.Elapsed.Seconds()/pgxRes.Elapsed.Seconds(), "")
	res.ratio("stb rows/s / pgx ceiling rows/s", (float64(aRows)/a.Elapsed.Seconds())/(float64(pgxRows)/pgxRes.Elapsed.Seconds()),
		"rows/s over the whole catch-up, reading included")
	if baseline && e.baselineWindow > 0 {
		res.ratio("baseline' (window) time / stb time", e.baselineWindow.Seconds()/a.Elapsed.Seconds(),
			"the window extrapolation, for comparison: it flatters the baseline")
	}
	if baseline {
		res.ratio("baseline time / read+decode ceiling time", bTime.Seconds()/rd.Elapsed.Seconds(),
			"the most any variant that reads the backlog can gain on the baseline")
	}
	res.note("conflation: stb wrote %s bundles for %s messages (%.1f:1); the final state is %s bundles",
		thousands(int64(a.Counters.written)), thousands(total), float64(total)/max(a.Counters.written, 1), thousands(int64(finalBundles)))
	if a.ReadAll > 0 {
		res.note("stb had read the whole backlog after %s (%.0f%% of its time), with %s written by then; it then held %s",
			secs(a.ReadAll), 100*a.ReadAll.Seconds()/a.Elapsed.Seconds(), formatByType(a.WrittenAtReadAll, exp.MessagesByType), a.HeldAtReadAll)
	}
	return nil
}

// baselineSampleRate sizes the baseline's sample: the messages per second
// a per-record sink writes (docs/design.md, Performance: 1–2k bundles/s).
const baselineSampleRate = 2000

// catchUpBaseline measures the baseline. With --baseline-limit 0 it runs
// over the whole backlog. Otherwise it runs to the end over a sample: the
// first rounds of the same simulation (the same hubs and mix; the
// simulation is reproducible from its seed), sized to take about
// --baseline-limit, and its time is scaled to the backlog's messages. It
// then also runs for --baseline-limit over the whole backlog, the
// extrapolation the issue describes, which flatters the baseline: with
// conflation off a hub's unit still serves its types in priority order,
// so the first minute writes mostly heartbeats, the cheapest bundles.
func (e *benchEnv) catchUpBaseline(ctx context.Context, res *scenarioResult, simCfg sim.Config, read string, total int64, exp *sim.Expected) (time.Duration, string, error) {
	const name = "baseline (--conflation=false)"
	if e.cfg.BaselineLimit == 0 {
		b, _, err := e.catchUpVariant(ctx, res, catchUpSpec{role: "b", name: name, label: "baseline", db: "stb_bench_catchup_baseline",
			topic: read, total: total, exp: exp})
		e.baselineRate = float64(total) / (b.Elapsed - b.FirstWrite).Seconds()
		return b.Elapsed, "baseline measured to the end", err
	}
	sample := simCfg
	e.simTopic(&sample, e.topic("catchup-sample"))
	perRound := sample.MessagesPerRound() * float64(sample.Hubs)
	sample.Generations = min(simCfg.Generations, max(1, int(math.Ceil(baselineSampleRate*e.cfg.BaselineLimit.Seconds()/perRound))))
	sampleExp, _, err := e.produce(ctx, "catch-up/baseline-sample", sample)
	if err != nil {
		return 0, "", fmt.Errorf("baseline sample: %w", err)
	}
	n := int64(sampleExp.Messages)
	scale := float64(total) / float64(n)
	b, _, err := e.catchUpVariant(ctx, res, catchUpSpec{role: "b", name: name, label: "baseline-sample", db: "stb_bench_catchup_baseline",
		topic: e.readTopic(e.topic("catchup-sample")), total: n, exp: sampleExp, scale: scale,
		note: fmt.Sprintf("wrote the first %d rounds (%s messages, the same hubs and mix) to the end; time scaled ×%.1f", sample.Generations, thousands(n), scale)})
	if err != nil {
		return 0, "", err
	}
	e.baselineRate = float64(n) / (b.Elapsed - b.FirstWrite).Seconds()
	bTime := time.Duration(float64(b.Elapsed) * scale)

	w, _, err := e.catchUpVariant(ctx, res, catchUpSpec{role: "b'", name: "baseline, window over the backlog", label: "baseline-window", db: "stb_bench_catchup_baseline_window",
		topic: read, total: total, exp: exp, limit: e.cfg.BaselineLimit})
	if err != nil {
		return 0, "", err
	}
	wTime, wRate := w.estimate(total)
	e.baselineWindow = wTime
	res.note("the window over the whole backlog extrapolates %s at %.0f messages/s; the sample, which writes every type of its rounds, %s at %.0f/s",
		secs(wTime), wRate, secs(bTime), e.baselineRate)
	return bTime, fmt.Sprintf("baseline SCALED from the first %d rounds, ×%.1f", sample.Generations, scale), nil
}

// catchUpSpec is one bridge variant of catch-up.
type catchUpSpec struct {
	role, name, label, db string
	conflation            bool
	topic                 string
	total                 int64
	exp                   *sim.Expected
	// limit stops the variant early; its time is then extrapolated from
	// its rate.
	limit time.Duration
	// scale, above 1, multiplies the time of a variant that ran over a
	// sample of the backlog.
	scale float64
	note  string
}

// catchUpVariant runs one bridge variant over a backlog and adds its row.
func (e *benchEnv) catchUpVariant(ctx context.Context, res *scenarioResult, v catchUpSpec) (catchUpResult, int64, error) {
	label := "catch-up/" + v.label
	bb, err := e.startBridge(ctx, variantOpts{label: label, conflation: v.conflation, topics: []string{v.topic}, db: v.db})
	if err != nil {
		return catchUpResult{}, 0, err
	}
	r, err := e.waitCaughtUp(ctx, bb, v.total, v.limit, verifyCheck(v.exp))
	var rows int64
	if err == nil && r.Complete {
		rows, err = countRows(ctx, bb.pool)
	}
	if stopErr := bb.stop(); err == nil && stopErr != nil {
		err = fmt.Errorf("%s: %w", label, stopErr)
	}
	r.Peak = bb.peak()
	if err != nil {
		return r, 0, err
	}
	row := res.row(v.role, v.name)
	switch {
	case r.Complete && v.scale > 1:
		est := time.Duration(float64(r.Elapsed) * v.scale)
		row.set("time", "seconds", est.Seconds(), secs(est)+" (scaled)")
		row.Values["measuredSeconds"], row.Values["scale"] = r.Elapsed.Seconds(), v.scale
	case r.Complete:
		row.set("time", "seconds", r.Elapsed.Seconds(), secs(r.Elapsed))
	default:
		est, _ := r.estimate(v.total)
		row.set("time", "seconds", est.Seconds(), secs(est)+" (extrapolated)")
		row.Values["measuredSeconds"] = r.Elapsed.Seconds()
		row.Values["extrapolated"] = 1
	}
	done := max(float64(r.Finished), r.Counters.processed)
	row.set("messages/s", "messagesPerSecond", done/r.Elapsed.Seconds(), perSecond(done, r.Elapsed)).
		set("bundles written", "bundlesWritten", r.Counters.written, thousands(int64(r.Counters.written)))
	if r.Complete && v.scale <= 1 {
		row.set("rows", "rows", float64(rows), thousands(rows)).
			set("rows/s", "rowsPerSecond", float64(rows)/r.Elapsed.Seconds(), perSecond(float64(rows), r.Elapsed))
	}
	row.peakRSS(r.Peak).
		set("peak go heap", "peakLiveHeap", float64(r.Peak.Heap), mib(float64(r.Peak.Heap))).
		set("state", "verified", boolValue(r.Complete), verifiedText(r.Complete, !r.Complete))
	switch {
	case v.note != "":
		row.Note = v.note
	case r.Complete:
		row.Note = fmt.Sprintf("first write after %s", secs(r.FirstWrite))
	default:
		row.Note = fmt.Sprintf("stopped after %s (--baseline-limit), %s of %s messages processed; time extrapolated at that rate",
			secs(r.Elapsed), thousands(int64(r.Counters.processed)), thousands(v.total))
	}
	return r, rows, nil
}

// pgxCeiling writes a final state into a fresh database with the bridge's
// pool size, then verifies it and counts its rows.
func (e *benchEnv) pgxCeiling(ctx context.Context, dbName string, exp *sim.Expected, st *finalState) (pgxResult, int64, bool, error) {
	url, err := e.freshDB(ctx, dbName)
	if err != nil {
		return pgxResult{}, 0, false, err
	}
	if _, _, err := db.Migrate(ctx, url, e.logger); err != nil {
		return pgxResult{}, 0, false, err
	}
	pool, err := db.Connect(ctx, url, int32(e.cfg.PoolSize))
	if err != nil {
		return pgxResult{}, 0, false, err
	}
	defer pool.Close()
	e.out.say("pgx ceiling: writing %s bundles of %d hubs", thousands(int64(st.bundles())), len(st.hubs))
	w := &pgxWriter{pool: pool, reg: e.reg, workers: e.cfg.PoolSize}
	r, err := w.writeState(ctx, st)
	if err != nil {
		return r, 0, false, err
	}
	ok := true
	if exp != nil {
		rep, err := verify.Verify(ctx, pool, exp)
		if err != nil {
			return r, 0, false, err
		}
		if ok = rep.OK(); !ok {
			e.out.say("pgx ceiling: the database does not hold the expected state: %s", strings.ReplaceAll(rep.Summary(), "\n", "; "))
		}
	}
	rows, err := countRows(ctx, pool)
	return r, rows, ok, err
}

// verifyCheck compares a variant's database with the simulation's
// expected state.
func verifyCheck(exp *sim.Expected) stateCheck {
	return func(ctx context.Context, bb *benchBridge) (bool, string, error) {
		rep, err := verify.Verify(ctx, bb.pool, exp)
		if err != nil {
			return false, "", err
		}
		return rep.OK(), strings.ReplaceAll(rep.Summary(), "\n", "; "), nil
	}
}

func boolValue(b bool) float64 {
	if b {
		return 1
	}
	return 0
}

func verifiedText(ok, partial bool) string {
	switch {
	case ok:
		return "verified"
	case partial:
		return "partial"
	}
	return "MISMATCH"
}

// formatByType lists written bundles by type against the messages of that
// type, in the order of the bundle types' priority.
func formatByType(written map[string]float64, sent map[string]int) string {
	var parts []string
	for _, t := range bundleTypeOrder {
		if sent[t] == 0 && written[t] == 0 {
			continue
		}
		parts = append(parts, fmt.Sprintf("%s %s/%s", t, thousands(int64(written[t])), thousands(int64(sent[t]))))
	}
	return strings.Join(parts, ", ")
}

// rawCeiling reads total messages of topics in a group of its own,
// polling and touching every value and header but decoding nothing, and
// adds its row: what reading alone costs.
func (e *benchEnv) rawCeiling(ctx context.Context, res *scenarioResult, topics []string, group string, total int64) (readResult, error) {
	raw, err := readRaw(ctx, e.brokers, topics, group, total,
		func(n int64, el time.Duration) {
			e.out.progress("catch-up/raw read [%5.1fs] read %s/%s", el.Seconds(), thousands(n), thousands(total))
		})
	e.out.done()
	if err != nil {
		return raw, err
	}
	res.row("c", "raw read ceiling").
		set("time", "seconds", raw.Elapsed.Seconds(), secs(raw.Elapsed)).
		set("messages/s", "messagesPerSecond", float64(raw.Messages)/raw.Elapsed.Seconds(), perSecond(float64(raw.Messages), raw.Elapsed)).
		Note = "librdkafka polling, every value and header touched, nothing decoded"
	return raw, nil
}

// readDecodeCeiling reads total messages of topics in a group of its own
// and decodes them with dec, keeping the final state in keep when it is
// not nil, and adds its row (with note, when given, before the figures):
// what reading costs when it must look into everything.
func (e *benchEnv) readDecodeCeiling(ctx context.Context, res *scenarioResult, topics []string, group string, total int64,
	dec decoder, keep *finalState, note string) (readResult, error) {
	rd, err := readAndDecode(ctx, e.brokers, topics, group, total, dec, keep,
		func(n int64, el time.Duration) {
			e.out.progress("catch-up/read+decode [%5.1fs] read %s/%s", el.Seconds(), thousands(n), thousands(total))
		})
	e.out.done()
	if err != nil {
		return rd, err
	}
	if note != "" {
		note += "; "
	}
	res.row("c", "read+decode ceiling").
		set("time", "seconds", rd.Elapsed.Seconds(), secs(rd.Elapsed)).
		set("messages/s", "messagesPerSecond", float64(rd.Messages)/rd.Elapsed.Seconds(), perSecond(float64(rd.Messages), rd.Elapsed)).
		Note = fmt.Sprintf("%s%.0f MiB of data; first message after %s (group join)", note, float64(rd.Bytes)/(1<<20), secs(rd.FirstMessage))
	return rd, nil
}

// familyDecoder decodes as a reader with family f on does (and then as a
// worker does, readAndDecode's part).
func (e *benchEnv) familyDecoder(f transport.Family) decoder {
	families := []transport.Family{f}
	return decoder{rules: e.rules(0), decode: func(msg *kafka.Message, rules transport.Rules, at time.Time) (*bundle.Bundle, *transport.Reject) {
		return transport.DecodeProfiles(msg, rules, nil, families, at)
	}}
}

// familyVariant runs a family's bridge variant (o) over a backlog of total
// messages until check finds the family's final state, then stops it; last,
// when set, reads what it needs of the database before the bridge stops.
// The result carries the variant's peak.
func (e *benchEnv) familyVariant(ctx context.Context, o variantOpts, total int64, check stateCheck,
	last func(ctx context.Context, bb *benchBridge) error) (catchUpResult, error) {
	bb, err := e.startBridge(ctx, o)
	if err != nil {
		return catchUpResult{}, err
	}
	a, err := e.waitCaughtUp(ctx, bb, total, 0, check)
	if err == nil && last != nil {
		err = last(ctx, bb)
	}
	if stopErr := bb.stop(); err == nil && stopErr != nil {
		err = fmt.Errorf("%s: %w", o.label, stopErr)
	}
	a.Peak = bb.peak()
	return a, err
}
