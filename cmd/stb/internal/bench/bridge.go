package bench

import (
	"context"
	"errors"
	"fmt"
	"runtime/pprof"
	"strings"
	"time"

	"github.com/jackc/pgx/v5/pgxpool"
	"github.com/stbridge/stb/internal/bridge"
	"github.com/stbridge/stb/internal/metricview"
	"github.com/stbridge/stb/internal/profiles"
	"github.com/stbridge/stb/pkg/db"
)

// benchBridge is one variant of the bridge under test, running in this
// process on a fresh database and a fresh consumer group: the whole
// pipeline exactly as `stb run` builds it, seen only through its API.
type benchBridge struct {
	label   string
	b       *bridge.Bridge
	url     string
	pool    *pgxpool.Pool // the bench's own, for counting and verifying
	started time.Time
	cancel  context.CancelFunc
	done    chan error
	stopped bool
	stopErr error
	// mem samples this process's memory from the start to the stop: the
	// variant's peak, in every scenario.
	mem *memSampler
}

// benchShutdownTimeout is the --shutdown-timeout of the variants. A
// variant stopped with a backlog left (the baseline at --baseline-limit)
// finishes only its in-flight jobs.
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
	maxBundleBytes int64
	// profiles overrides --profiles when not empty.
	profiles []string
	// reuseURL, when set, is the database of an earlier bridge of the
	// variant to go on with (its positions included), instead of a fresh
	// one named db.
	reuseURL string
}

// startBridge creates the variant's database (migrated by bridge.New, not
// timed) and starts the bridge; its clock starts when it starts reading.
func (e *benchEnv) startBridge(ctx context.Context, o variantOpts) (*benchBridge, error) {
	url := o.reuseURL
	if url == "" {
		var err error
		if url, err = e.freshDB(ctx, o.db); err != nil {
			return nil, err
		}
	}
	cfg := bridge.DefaultConfig()
	cfg.Reader.Brokers = e.brokers
	cfg.Reader.Topics = o.topics
	cfg.Reader.GroupID = e.group(o.db)
	cfg.DatabaseURL = url
	cfg.Conflation.NoConflation = !o.conflation
	cfg.Dispatcher.Workers = e.cfg.PoolSize
	cfg.Dispatcher.BatchWait = e.cfg.BatchWait
	cfg.Conflation.Linger = e.cfg.Linger
	cfg.Committer.Interval = time.Second
	cfg.HTTPAddr, cfg.AdminAddr = "", ""
	cfg.ShutdownTimeout = benchShutdownTimeout
	cfg.Reader.MaxBufferedBytes = e.cfg.MaxBufferedBytes
	if p := e.agent.Bench.Profiles; p != nil {
		cfg.Profiles = p
	}
	if o.maxBundleBytes > 0 {
		cfg.Reader.MaxBundleBytes = int(o.maxBundleBytes)
	}
	if len(o.profiles) > 0 {
		cfg.Profiles = o.profiles
	}
	// Start every variant from the same memory: what an earlier variant
	// left for the garbage collector would otherwise count as this one's.
	releaseMemory()
	b, err := bridge.New(ctx, cfg, bridge.Deps{Logger: e.logger})
	if err != nil {
		return nil, fmt.Errorf("%s: %w", o.label, err)
	}
	pool, err := db.Connect(ctx, url, 2)
	if err != nil {
		b.Close()
		return nil, fmt.Errorf("%s: %w", o.label, err)
	}
	bctx, cancel := context.WithCancel(context.Background())
	bb := &benchBridge{label: o.label, b: b, url: url, pool: pool, cancel: cancel, done: make(chan error, 1),
		mem: startMemSampler(memSampleInterval, processMemory)}
	bb.started = time.Now()
	// The label tells the variants apart in a --cpuprofile:
	// go tool pprof -tagfocus variant=catch-up/stb.
	go pprof.Do(bctx, pprof.Labels("variant", o.label), func(ctx context.Context) { bb.done <- b.Run(ctx) })
	return bb, nil
}

// stop shuts the bridge down gracefully and returns what Run returned. A
// bridge stopped while it still holds unwritten bundles (the baseline at
// --baseline-limit, a variant under overload) finishes its in-flight jobs
// and leaves the rest: the dispatcher stops popping at the stop.
func (bb *benchBridge) stop() error {
	if !bb.stopped {
		bb.stopped = true
		bb.cancel()
		bb.stopErr = <-bb.done
		bb.b.Close()
		bb.pool.Close()
		bb.mem.Stop()
	}
	return bb.stopErr
}

// peak returns the most memory this process used while the variant ran
// (so far, if it still runs).
func (bb *benchBridge) peak() memUse { return bb.mem.Peak() }

// failed returns Run's error if the bridge stopped by itself.
func (bb *benchBridge) failed() error {
	select {
	case err := <-bb.done:
		bb.stopped, bb.stopErr = true, err
		bb.b.Close()
		bb.pool.Close()
		bb.mem.Stop()
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
func (bb *benchBridge) finished() int64 { return bb.b.Stats().Done() }

// waitAssigned waits until the bridge reads n partitions.
func (bb *benchBridge) waitAssigned(ctx context.Context, n int) error {
	deadline := time.Now().Add(time.Minute)
	for len(bb.b.Stats().Partitions) < n {
		if err := bb.failed(); err != nil {
			return err
		}
		if time.Now().After(deadline) {
			return fmt.Errorf("%s: %d of %d partitions assigned after a minute", bb.label, len(bb.b.Stats().Partitions), n)
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
	m := metricview.Gather(bb.b.Gatherer())
	outcome := func(o string) float64 {
		return m.Sum("stb_conflation_bundles_total", map[string]string{"outcome": o})
	}
	result := func(r string) float64 {
		return m.Sum("stb_dispatcher_bundles_total", map[string]string{"result": r})
	}
	st := bb.b.Stats()
	c := counters{
		read:      float64(st.Read),
		written:   result("applied"),
		conflated: outcome("conflated"),
		stale:     outcome("stale"),
		dead:      m.Sum("stb_transport_rejected_total", nil) + result("permanent"),
		held:      st.HeldBytes,
	}
	c.processed = c.written + result("fenced") + c.dead + c.conflated + c.stale + outcome("merged") + outcome("unknown_type")
	return c
}

// writtenByType returns the bundles written so far, by bundle type.
func (bb *benchBridge) writtenByType() map[string]float64 {
	out := map[string]float64{}
	mf := metricview.Gather(bb.b.Gatherer()).Families["stb_dispatcher_bundles_total"]
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
	for _, u := range bb.b.Units("") {
		for _, t := range u.Types {
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

// bundleTypeOrder is the priority order of the bundle types: STB's, then
// the global-hub agents'.
var bundleTypeOrder = profiles.AllTypeNames()
