package bench

import (
	"context"
	"fmt"
	"math"
	"strings"
	"time"

	"github.com/confluentinc/confluent-kafka-go/v2/kafka"

	wf "github.com/stbridge/stb/dbsyncers/work"
	"github.com/stbridge/stb/pkg/db"
	simwork "github.com/stbridge/stb/pkg/sim/work"
	"github.com/stbridge/stb/pkg/transport"
)

// workStatusBytes is the size of a simulated ManifestWork status in the
// catch-up: Maestro measures statuses of about 20 KB.
const workStatusBytes = 20_000

// catchUpWork is the catch-up of --agent work: a backlog of one status of
// each of --messages works on --hubs clusters (sdk-go's agent codec, binary
// mode, ~20 KB each) is in Kafka before anything reads it; the bridge with
// the work profile reads it into work.resource_status, against the raw
// read, read+decode and pgx ceilings, and the database is then compared
// with the agents' final state (pkg/sim/work Verify).
func (e *benchEnv) catchUpWork(ctx context.Context, res *scenarioResult) error {
	topic := e.topic("catchup")
	per := max(1, int(math.Ceil(float64(e.cfg.Messages)/float64(e.cfg.Hubs))))
	simCfg := simwork.Config{Clusters: e.cfg.Hubs, Resources: per, Sources: 2, Rounds: 1, Seed: uint64(e.cfg.Seed),
		Topic: topic, Prefix: "bench-" + e.runID, StatusBytes: workStatusBytes,
		RestartProbability: -1, DuplicateProbability: -1, LateProbability: -1, DeleteProbability: -1}
	res.Params["clusters"], res.Params["works per cluster"], res.Params["status bytes"] = simCfg.Clusters, per, workStatusBytes

	// The backlog, once, from this process: nothing reads it while it is
	// produced, and releaseMemory runs before each variant.
	start := time.Now()
	pub, err := transport.NewPublisher(transport.PublisherConfig{Brokers: e.brokers}, e.logger)
	if err != nil {
		return err
	}
	exp, err := simwork.Run(ctx, simCfg, func(ctx context.Context, m *kafka.Message) error { return pub.PublishMessage(ctx, m) },
		func(n int) {
			e.out.progress("catch-up/produce [%5.1fs] sent %s", time.Since(start).Seconds(), thousands(int64(n)))
		})
	if err == nil {
		err = pub.Flush(ctx)
	}
	pub.Close()
	e.out.done()
	if err != nil {
		return fmt.Errorf("backlog: %w", err)
	}
	total := int64(exp.Messages)
	res.Params["messages"] = exp.Messages
	res.note("backlog: %s statuses of %d clusters' works (binary mode, keyed <originalsource>@<cluster>), produced in %s before any variant reads",
		thousands(total), len(exp.Clusters), time.Since(start).Round(time.Second))

	raw, err := e.rawCeiling(ctx, res, []string{topic}, e.group("stb_bench_work_raw"), total)
	if err != nil {
		return err
	}
	// Read and decode as the reader does with the work family on, then
	// decode each payload as a worker does.
	st := newFinalState(e.reg)
	rd, err := e.readDecodeCeiling(ctx, res, []string{topic}, e.group("stb_bench_work_read"), total, e.familyDecoder(wf.NewFamily()), st, "")
	if err != nil {
		return err
	}

	// The final state straight through the handler.
	url, err := e.freshDB(ctx, "stb_bench_work_pgx")
	if err != nil {
		return err
	}
	if _, _, err := db.Migrate(ctx, url, e.logger); err != nil {
		return err
	}
	pool, err := db.Connect(ctx, url, int32(e.cfg.PoolSize))
	if err != nil {
		return err
	}
	w := &pgxWriter{pool: pool, reg: e.reg, workers: e.cfg.PoolSize}
	pgxRes, err := w.writeState(ctx, st)
	pgxOK := false
	if err == nil {
		var rep *simwork.Report
		if rep, err = simwork.Verify(ctx, pool, exp); err == nil {
			pgxOK = rep.OK()
		}
	}
	pool.Close()
	if err != nil {
		return err
	}
	st = nil
	res.row("c", "pgx ceiling (final state)").
		set("time", "seconds", pgxRes.Elapsed.Seconds(), secs(pgxRes.Elapsed)).
		set("bundles written", "bundlesWritten", float64(pgxRes.Bundles), thousands(pgxRes.Bundles)).
		set("rows/s", "rowsPerSecond", float64(total)/pgxRes.Elapsed.Seconds(), perSecond(float64(total), pgxRes.Elapsed)).
		set("state", "verified", boolValue(pgxOK), verifiedText(pgxOK, false)).
		Note = fmt.Sprintf("%d clusters, a transaction per cluster's statuses, %d workers", pgxRes.Transactions, e.cfg.PoolSize)

	// a: the bridge.
	a, err := e.familyVariant(ctx, variantOpts{label: "catch-up/stb", conflation: true, topics: []string{topic}, db: "stb_bench_work_stb", profiles: e.agent.Bench.Profiles}, total,
		func(ctx context.Context, bb *benchBridge) (bool, string, error) {
			rep, err := simwork.Verify(ctx, bb.pool, exp)
			if err != nil {
				return false, "", err
			}
			return rep.OK(), strings.ReplaceAll(rep.Summary(), "\n", "; "), nil
		}, nil)
	if err != nil {
		return err
	}
	res.row("a", "stb (conflation)").
		set("time", "seconds", a.Elapsed.Seconds(), secs(a.Elapsed)).
		set("messages/s", "messagesPerSecond", float64(total)/a.Elapsed.Seconds(), perSecond(float64(total), a.Elapsed)).
		set("bundles written", "bundlesWritten", a.Counters.written, thousands(int64(a.Counters.written))).
		peakRSS(a.Peak).
		set("peak go heap", "peakLiveHeap", float64(a.Peak.Heap), mib(float64(a.Peak.Heap))).
		set("state", "verified", boolValue(a.Complete), verifiedText(a.Complete, false)).
		Note = fmt.Sprintf("first write after %s", secs(a.FirstWrite))
	res.ratio("stb time / raw read ceiling time", a.Elapsed.Seconds()/raw.Elapsed.Seconds(), "").atMost(1.5, "×")
	res.ratio("stb time / read+decode ceiling time", a.Elapsed.Seconds()/rd.Elapsed.Seconds(), "").atMost(1.2, "×")
	res.ratio("stb time / pgx ceiling time", a.Elapsed.Seconds()/pgxRes.Elapsed.Seconds(), "")
	res.rssBudget(a.Peak, e.cfg.MaxBufferedBytes, "")
	return nil
}
