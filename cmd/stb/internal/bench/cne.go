package bench

import (
	"context"
	"fmt"
	"math"
	"strings"
	"time"

	"github.com/stbridge/stb/dbsyncers/cne"
	"github.com/stbridge/stb/pkg/sim"
	cnesim "github.com/stbridge/stb/pkg/sim/cne"
)

// cneMessagesPerRound estimates the messages a simulated Cloud Native
// Events node sends per round with the simulator's defaults: one event,
// every resource again on a restart (5%: 4 more), a duplicate (5%), a late
// copy (5%).
const cneMessagesPerRound = 1 + 0.05*4 + 0.05 + 0.05

// catchUpCNE is catch-up for --agent cne: a backlog of --messages Cloud
// Native Events of --hubs nodes (restarts, duplicates, late copies, clock
// steps back; no bad events, which the read ceilings would count as
// rejects), read by the bridge (profiles stb and cne) until
// stb.cne_state verifies, against the raw read and read+decode
// ceilings. The backlog is produced in this process, before anything
// reads it.
func (e *benchEnv) catchUpCNE(ctx context.Context, res *scenarioResult) error {
	topic := e.topic("catchup")
	nodes := e.cfg.Hubs
	scfg := cnesim.Config{Nodes: nodes, Seed: e.cfg.Seed, Topic: topic, Bad: -1,
		Rounds: max(1, int(math.Ceil(float64(e.cfg.Messages)/(cneMessagesPerRound*float64(nodes)))))}
	res.Params["nodes"], res.Params["rounds"] = nodes, scfg.Rounds

	start := time.Now()
	pub, err := cnesim.NewKafkaPublisher(sim.PublisherConfig{Brokers: e.brokers}, e.logger)
	if err != nil {
		return err
	}
	exp, err := cnesim.Run(ctx, scfg, pub, func(n int) {
		if n%10_000 == 0 {
			e.out.progress("catch-up/produce %s messages", thousands(int64(n)))
		}
	})
	pub.Close()
	e.out.done()
	if err != nil {
		return fmt.Errorf("backlog: %w", err)
	}
	total := int64(exp.Messages)
	res.Params["messages"] = exp.Messages
	res.note("backlog: %s Cloud Native Events from %d nodes (%d restarts, %d clock steps back, %d duplicates, %d late copies; %s values behind their key), %s keys, produced in %s before any variant reads",
		thousands(total), nodes, exp.Restarts, exp.ClockSteps, exp.Duplicates, exp.LateCopies, thousands(int64(exp.Behind)),
		thousands(int64(len(exp.Rows))), time.Since(start).Round(time.Second))

	raw, err := e.rawCeiling(ctx, res, []string{topic}, e.group("stb_bench_cne_raw"), total)
	if err != nil {
		return err
	}
	rd, err := e.readDecodeCeiling(ctx, res, []string{topic}, e.group("stb_bench_cne_read"), total, e.familyDecoder(cne.NewFamily()), nil,
		"the family checks every event as the reader does, then decodes it as a worker does")
	if err != nil {
		return err
	}

	var rows int64
	a, err := e.familyVariant(ctx, variantOpts{label: "catch-up/stb", conflation: true, topics: []string{topic}, db: "stb_bench_cne_stb"}, total,
		func(ctx context.Context, bb *benchBridge) (bool, string, error) {
			rep, err := cnesim.Verify(ctx, bb.pool, exp)
			if err != nil {
				return false, "", err
			}
			return rep.OK(), strings.ReplaceAll(rep.Summary(), "\n", "; "), nil
		},
		func(ctx context.Context, bb *benchBridge) error {
			return bb.pool.QueryRow(ctx, `SELECT count(*) FROM stb.cne_state`).Scan(&rows)
		})
	if err != nil {
		return err
	}
	res.row("a", "stb (conflation)").
		set("time", "seconds", a.Elapsed.Seconds(), secs(a.Elapsed)).
		set("messages/s", "messagesPerSecond", float64(total)/a.Elapsed.Seconds(), perSecond(float64(total), a.Elapsed)).
		set("bundles written", "bundlesWritten", a.Counters.written, thousands(int64(a.Counters.written))).
		set("rows", "rows", float64(rows), thousands(rows)).
		peakRSS(a.Peak).
		set("state", "verified", boolValue(a.Complete), verifiedText(a.Complete, false)).
		Note = fmt.Sprintf("first write after %s; profiles stb,cne", secs(a.FirstWrite))
	res.ratio("stb time / raw read ceiling time", a.Elapsed.Seconds()/raw.Elapsed.Seconds(), "").atMost(1.5, "×")
	res.ratio("stb time / read+decode ceiling time", a.Elapsed.Seconds()/rd.Elapsed.Seconds(), "").atMost(1.2, "×")
	res.rssBudget(a.Peak, e.cfg.MaxBufferedBytes, "")
	res.note("stb wrote %s bundles (one per event; a node's waiting events go as one group per job) for %s events",
		thousands(int64(a.Counters.written)), thousands(total))
	return nil
}
