package main

import (
	"context"
	"errors"
	"fmt"
	"runtime/debug"
	"runtime/pprof"
	"strings"
	"time"
)

// benchBridge is one variant of the bridge under test, running in this
// process on a fresh database and a fresh consumer group: the whole
// pipeline exactly as `stb run` builds it.
type benchBridge struct {
	label   string
	b       *bridge
	url     string
	started time.Time
	cancel  context.CancelFunc
	done    chan error
	stopped bool
	stopErr error
	// shutdownNote says why a bridge stopped with work left did not shut
	// down cleanly; empty otherwise.
	shutdownNote string
}

// benchShutdownTimeout is the --shutdown-timeout of the variants. A
// variant stopped with a backlog left (the baseline at --baseline-limit)
// spends all of it: its workers keep popping ready units after the stop
// (see BENCHMARKS.md), so a shorter one saves time.
const benchShutdownTimeout = 10 * time.Second

// variantOpts say how to build a bridge variant.
type variantOpts struct {
	label      string
	conflation bool
	topics     []string
	// db names the variant's database, created afresh; the consumer group
	// is named after it and the run.
	db string
	// maxBundleBytes overrides --max-bundle-bytes when not 0.
	maxBundleBytes byteSize
}

// startBridge creates the variant's database (migrated by newBridge, not
// timed) and starts the bridge; its clock starts when it starts reading.
func (e *benchEnv) startBridge(ctx context.Context, o variantOpts) (*benchBridge, error) {
	url, err := e.freshDB(ctx, o.db)
	if err != nil {
		return nil, err
	}
	var cfg runConfig
	cfg.bind(newFlagSet("run", ""))
	cfg.KafkaBrokers = e.brokers
	cfg.KafkaTopics = listFlag(o.topics)
	cfg.KafkaGroupID = e.group(o.db)
	cfg.DatabaseURL = url
	cfg.Conflation = o.conflation
	cfg.DBPoolSize = e.cfg.PoolSize
	cfg.CommitInterval = time.Second
	cfg.HTTPAddr = ""
	cfg.ShutdownTimeout = benchShutdownTimeout
	if o.maxBundleBytes > 0 {
		cfg.MaxBundleBytes = o.maxBundleBytes
	}
	// Start every variant from the same memory: what an earlier variant
	// left for the garbage collector would otherwise count as this one's.
	debug.FreeOSMemory()
	b, err := newBridge(ctx, cfg, e.logger)
	if err != nil {
		return nil, fmt.Errorf("%s: %w", o.label, err)
	}
	bctx, cancel := context.WithCancel(context.Background())
	bb := &benchBridge{label: o.label, b: b, url: url, cancel: cancel, done: make(chan error, 1)}
	bb.started = time.Now()
	// The label tells the variants apart in a --cpuprofile:
	// go tool pprof -tagfocus variant=catch-up/stb.
	go pprof.Do(bctx, pprof.Labels("variant", o.label), func(ctx context.Context) { bb.done <- b.run(ctx) })
	return bb, nil
}

// stop shuts the bridge down gracefully and returns what run returned.
// A bridge stopped while it still holds unwritten bundles (the baseline
// at --baseline-limit, a variant under overload) would not stop: its
// workers keep popping ready units after the stop (the ready queue's Pop
// returns a unit even when its context has ended), so the bench empties
// the queue, and keeps what happened in shutdownNote rather than
// returning an error.
func (bb *benchBridge) stop() error {
	if !bb.stopped {
		bb.stopped = true
		held := 0
		for _, p := range bb.b.committer.Partitions() {
			held += p.Outstanding()
		}
		begin := time.Now()
		bb.cancel()
		if held == 0 {
			bb.stopErr = <-bb.done
			return bb.stopErr
		}
		// Its measurement is over: empty the ready queue, or the workers
		// would write the whole backlog before the shutdown ends.
		dropped := 0
		for waiting := true; waiting; {
			for bb.b.manager.Queue().TryPop() != nil {
				dropped++
			}
			select {
			case bb.stopErr = <-bb.done:
				waiting = false
			case <-time.After(10 * time.Millisecond):
			}
		}
		bb.shutdownNote = fmt.Sprintf("stopped holding %s unwritten messages; the bench emptied its ready queue (%s units) so that its workers would stop, and it shut down in %s",
			thousands(int64(held)), thousands(int64(dropped)), secs(time.Since(begin)))
		if bb.stopErr != nil {
			bb.shutdownNote += fmt.Sprintf(" with: %v", bb.stopErr)
			bb.stopErr = nil
		}
	}
	return bb.stopErr
}

// failed returns run's error if the bridge stopped by itself.
func (bb *benchBridge) failed() error {
	select {
	case err := <-bb.done:
		bb.stopped, bb.stopErr = true, err
		if err == nil {
			err = errors.New("bridge stopped")
		}
		return fmt.Errorf("%s: %w", bb.label, err)
	default:
		return nil
	}
}

// finished returns the messages of its topics that the bridge is done
// with: written, conflated away, stale or dead-lettered. The topics are
// fresh, so a partition's position (its lowest outstanding offset, else
// the last read + 1) is the number of its messages done.
func (bb *benchBridge) finished() int64 {
	var n int64
	for _, p := range bb.b.committer.Partitions() {
		if pos, ok := p.Position(); ok && pos > 0 {
			n += pos
		}
	}
	return n
}

// waitAssigned waits until the bridge reads n partitions.
func (bb *benchBridge) waitAssigned(ctx context.Context, n int) error {
	deadline := time.Now().Add(time.Minute)
	for len(bb.b.committer.Partitions()) < n {
		if err := bb.failed(); err != nil {
			return err
		}
		if time.Now().After(deadline) {
			return fmt.Errorf("%s: %d of %d partitions assigned after a minute", bb.label, len(bb.b.committer.Partitions()), n)
		}
		select {
		case <-ctx.Done():
			return ctx.Err()
		case <-time.After(10 * time.Millisecond):
		}
	}
	return nil
}

// counters are the bridge's running totals, from its own registry.
type counters struct {
	read, written, conflated, stale, dead float64
	// processed counts the messages the bridge is done with, however:
	// written, fenced, dead-lettered, conflated away, stale or merged.
	processed float64
	held      int64
}

func (bb *benchBridge) counters() counters {
	m := gather(bb.b.registry)
	outcome := func(o string) float64 {
		return m.sum("stb_conflation_bundles_total", map[string]string{"outcome": o})
	}
	result := func(r string) float64 {
		return m.sum("stb_dispatcher_bundles_total", map[string]string{"result": r})
	}
	c := counters{
		read:      float64(bb.b.reader.Stats().Read),
		written:   result("applied"),
		conflated: outcome("conflated"),
		stale:     outcome("stale"),
		dead:      m.sum("stb_transport_rejected_total", nil) + result("permanent"),
		held:      bb.b.manager.HeldBytes(),
	}
	c.processed = c.written + result("fenced") + c.dead + c.conflated + c.stale + outcome("merged") + outcome("unknown_type")
	return c
}

// writtenByType returns the bundles written so far, by bundle type.
func (bb *benchBridge) writtenByType() map[string]float64 {
	out := map[string]float64{}
	mf := gather(bb.b.registry).families["stb_dispatcher_bundles_total"]
	if mf == nil {
		return out
	}
	for _, m := range mf.GetMetric() {
		var typ, result string
		for _, lp := range m.GetLabel() {
			switch lp.GetName() {
			case "type":
				typ = lp.GetValue()
			case "result":
				result = lp.GetValue()
			}
		}
		if result == "applied" {
			out[typ] += m.GetCounter().GetValue()
		}
	}
	return out
}

// heldSummary says what the bridge's units hold unwritten, by type: the
// bundles waiting and how long the oldest has waited.
func (bb *benchBridge) heldSummary() string {
	type held struct {
		n   int
		age float64
	}
	byType := map[string]*held{}
	for _, u := range bb.b.manager.Units() {
		for _, t := range u.Snapshot().Types {
			if t.HeldCount == 0 {
				continue
			}
			h := byType[t.Type]
			if h == nil {
				h = &held{}
				byType[t.Type] = h
			}
			h.n += t.HeldCount
			h.age = max(h.age, t.AgeSec)
		}
	}
	var parts []string
	for _, t := range bundleTypeOrder {
		if h := byType[t]; h != nil {
			parts = append(parts, fmt.Sprintf("%s %s (oldest %.0fs)", t, thousands(int64(h.n)), h.age))
		}
	}
	if len(parts) == 0 {
		return "nothing"
	}
	return strings.Join(parts, ", ")
}

// bundleTypeOrder is the priority order of the bundle types.
var bundleTypeOrder = []string{"heartbeat", "managedclusters", "clusterspolicies", "compliance", "compliancedelta", "policyevents"}
