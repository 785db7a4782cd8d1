package bench

import (
	"context"
	"errors"
	"fmt"
	"time"

	"github.com/jackc/pgx/v5/pgxpool"
	"github.com/stbridge/stb/pkg/db"
	"github.com/stbridge/stb/pkg/verify"
)

// Upstream's published figures for its own scale test (multicluster-global-hub
// doc/simulation/scenario, "Scenario 7: Manage 3,000 clusters and 500 policies
// on OCP Hub", run 2026-03-04 on their cluster: an OCP single-node global hub,
// Kafka of 3 KRaft brokers, PostgreSQL up to ~9 cores): theirs, not ours.
const (
	upstreamInitialSync = 35 * time.Minute
	upstreamRotation    = 23 * time.Minute
)

// scalePoll is how often the database is counted while a phase runs.
const scalePoll = 250 * time.Millisecond

// scaleCounts are the rows of the global hub's tables a phase waits for.
type scaleCounts struct {
	clusters, compliance, compliant, events int64
}

// countScale counts what the global hub's own schema holds.
func countScale(ctx context.Context, pool *pgxpool.Pool) (scaleCounts, error) {
	var c scaleCounts
	err := pool.QueryRow(ctx, `SELECT
		(SELECT count(*) FROM status.managed_clusters WHERE deleted_at IS NULL),
		(SELECT count(*) FROM local_status.compliance),
		(SELECT count(*) FROM local_status.compliance WHERE compliance = 'compliant'),
		(SELECT count(*) FROM event.local_policies)`).Scan(&c.clusters, &c.compliance, &c.compliant, &c.events)
	return c, err
}

// benchScale is upstream's own scale test in the agent's format (the agent's
// profile.Bench.Scale): the initial sync of every hub's clusters, policies,
// compliance and events, read from Kafka as a backlog by a bridge started
// after the agents sent it, then one rotation of every compliance, sent with
// that bridge stopped and read by a bridge started again on the same
// database. Each phase runs from its bridge's start to the moment the global
// hub's tables hold the phase's state; the bridge's CPU is this process's
// (the agents run in a producer process, done before the bridge starts),
// PostgreSQL's its processes'. The final state is verified in full.
func benchScale(ctx context.Context, e *benchEnv, res *scenarioResult) error {
	shape := e.agent.Bench.Scale
	if shape == nil {
		return fmt.Errorf("--agent %s has no scale test (the scale scenario is the global-hub agent's)", e.agent.Name)
	}
	cfg := *shape
	cfg.Seed = e.cfg.Seed
	topic := e.topic("scale")
	e.simTopic(&cfg, topic)
	read := e.readTopic(topic)
	pairs := int64((cfg.Hubs - 1) * cfg.Policies * cfg.Clusters)
	res.Params["hubs"], res.Params["clusters"], res.Params["policies"] = cfg.Hubs, cfg.Hubs*cfg.Clusters, cfg.Hubs*cfg.Policies
	res.Params["replicated policies"] = pairs

	type phase struct {
		name    string
		elapsed time.Duration
		cpu, pg time.Duration
		peak    memUse
		counts  scaleCounts
	}
	var phases []phase
	var url string
	// run starts a bridge on the backlog and waits until the tables hold want.
	run := func(ctx context.Context, name string, want scaleCounts) error {
		releaseMemory()
		cpu0, pg0 := selfCPU(), postgresCPU()
		bb, err := e.startBridge(ctx, variantOpts{label: "scale/" + name, conflation: true, topics: []string{read},
			db: "stb_bench_scale", reuseURL: url})
		if err != nil {
			return err
		}
		url = bb.url
		var got scaleCounts
		deadline := time.Now().Add(e.cfg.Timeout)
		for {
			if got, err = countScale(ctx, bb.pool); err != nil {
				break
			}
			if got.clusters >= want.clusters && got.compliance >= want.compliance && got.compliant == want.compliant && got.events >= want.events {
				break
			}
			if err = bb.failed(); err != nil {
				break
			}
			if time.Now().After(deadline) {
				err = fmt.Errorf("%s: not synced after --timeout %v: %+v, want %+v", name, e.cfg.Timeout, got, want)
				break
			}
			e.out.progress("scale %s [%5.1fs] clusters %s, compliance %s (%s compliant), events %s", name,
				time.Since(bb.started).Seconds(), thousands(got.clusters), thousands(got.compliance), thousands(got.compliant), thousands(got.events))
			time.Sleep(scalePoll)
		}
		e.out.done()
		elapsed := time.Since(bb.started)
		cpu, pg := selfCPU()-cpu0, postgresCPU()-pg0
		if stopErr := bb.stop(); err == nil {
			err = stopErr
		}
		phases = append(phases, phase{name: name, elapsed: elapsed, cpu: cpu, pg: pg, peak: bb.peak(), counts: got})
		return err
	}

	// The agents run in a producer process of their own, as in every
	// scenario: the first round, then, with the bridge stopped, the second
	// alone (sim.Config.FromRound), the same agents moved on.
	clusters := int64(cfg.Hubs * cfg.Clusters)
	cfg.Generations = 1
	exp, took, err := e.produce(ctx, "scale: initial state", cfg)
	if err != nil {
		return fmt.Errorf("scale, initial state: %w", err)
	}
	res.note("initial state: %s messages %v from %d hubs, produced in %s before the bridge reads",
		thousands(int64(exp.Messages)), exp.MessagesByType, len(exp.Hubs), took.Round(time.Second))
	if err := run(ctx, "initial sync", scaleCounts{clusters: clusters, compliance: pairs, compliant: 0, events: 2 * pairs}); err != nil {
		return err
	}
	cfg.Generations, cfg.FromRound = 2, 2
	if exp, took, err = e.produce(ctx, "scale: rotation", cfg); err != nil {
		return fmt.Errorf("scale, rotation: %w", err)
	}
	res.note("rotation: %s messages %v, produced in %s with the bridge stopped",
		thousands(int64(exp.Messages)), exp.MessagesByType, took.Round(time.Second))
	if err := run(ctx, "rotation", scaleCounts{clusters: clusters, compliance: pairs, compliant: pairs, events: 3 * pairs}); err != nil {
		return err
	}
	pool, err := db.Connect(ctx, url, 2)
	if err != nil {
		return err
	}
	defer pool.Close()
	rep, err := verify.Verify(ctx, pool, exp)
	if err != nil {
		return err
	}
	ok := rep.OK()
	for _, p := range phases {
		row := res.row("a", "stb: "+p.name).
			set("time", "seconds", p.elapsed.Seconds(), secs(p.elapsed)).
			set("bridge cpu", "bridgeCPUSeconds", p.cpu.Seconds(), fmt.Sprintf("%.2fs", p.cpu.Seconds())).
			set("postgres cpu", "postgresCPUSeconds", p.pg.Seconds(), fmt.Sprintf("%.2fs", p.pg.Seconds())).
			set("compliance rows", "complianceRows", float64(p.counts.compliance), thousands(p.counts.compliance)).
			set("events", "events", float64(p.counts.events), thousands(p.counts.events)).
			peakRSS(p.peak)
		row.set("state", "verified", boolValue(ok), verifiedText(ok, false))
	}
	if len(phases) == 2 {
		res.ratio("initial sync / 60 s", phases[0].elapsed.Seconds()/60, "the issue's bound on this 2-core machine; upstream's own run: about 35 min on their cluster").atMost(1, "×")
		res.ratio("compliance rotation / 30 s", phases[1].elapsed.Seconds()/30, "the issue's bound; upstream's own run: about 23 min (24 min the second)").atMost(1, "×")
		res.ratio("upstream's initial sync / stb's", upstreamInitialSync.Seconds()/phases[0].elapsed.Seconds(), "theirs on their cluster, ours on this machine")
		res.ratio("upstream's rotation / stb's", upstreamRotation.Seconds()/phases[1].elapsed.Seconds(), "theirs on their cluster, ours on this machine")
		for _, p := range phases {
			res.rssBudget(p.peak, e.cfg.MaxBufferedBytes, p.name)
		}
	}
	if !ok {
		return errors.New("scale: the final state does not verify: " + rep.Summary())
	}
	return nil
}
