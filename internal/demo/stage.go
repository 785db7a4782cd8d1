package demo

import (
	"context"
	"errors"
	"fmt"
	"io"
	"os"
	"sync/atomic"
	"time"

	"github.com/jackc/pgx/v5/pgxpool"

	"github.com/stbridge/stb/internal/bridge"
	"github.com/stbridge/stb/internal/metricview"
	"github.com/stbridge/stb/pkg/broker"
	"github.com/stbridge/stb/pkg/db"
)

// stage is what every demo runs on: a fresh database, the embedded broker
// holding the demo's topics, a bridge reading them into the database, and
// a pool to watch the database with. close undoes it all, the bridge
// stopped first.
type stage struct {
	url     string
	broker  *broker.Broker
	bridge  *bridge.Bridge
	pool    *pgxpool.Pool
	closers []func() // in the order they were opened
}

// stageConfig says what a demo's stage holds: the demo's Config (its
// database, listeners and logger) and what the demo at hand adds.
type stageConfig struct {
	Config
	Topics []string
	// Partitions of each topic (the Config's, or 1 for per-hub topics).
	Partitions int
	// Profiles the bridge reads; nil reads its defaults.
	Profiles []string
	// Console is what the console line adds after the address: where to
	// look for the demo's rows.
	Console string
	// Hold, when not nil, delays the bridge's reading until it is closed:
	// what is published meanwhile is a backlog (Config.Backlog).
	Hold <-chan struct{}
}

// startStage sets the stage up and starts the bridge, saying what it did;
// on an error it undoes what it had set up.
func startStage(ctx context.Context, c stageConfig, say func(string, ...any)) (_ *stage, err error) {
	st := &stage{}
	defer func() {
		if err != nil {
			st.close()
		}
	}()
	// 1. A fresh database.
	if st.url, err = db.Recreate(ctx, c.DatabaseURL, c.DatabaseName); err != nil {
		return nil, fmt.Errorf("database: %w (is PostgreSQL running? `make demo` starts it)", err)
	}
	say("database %s", db.RedactURL(st.url))

	// 2. The embedded broker, its log in a temporary directory.
	dir, err := os.MkdirTemp("", "stb-demo-kafka-")
	if err != nil {
		return nil, err
	}
	st.closers = append(st.closers, func() { os.RemoveAll(dir) })
	if st.broker, err = broker.Start(broker.Config{DataDir: dir, Topics: c.Topics, Partitions: int32(c.Partitions)}, c.Logger); err != nil {
		return nil, err
	}
	st.closers = append(st.closers, st.broker.Close)
	what := fmt.Sprintf("topic %s", c.Topics[0])
	if len(c.Topics) > 1 {
		what = fmt.Sprintf("%d topics", len(c.Topics))
	}
	say("kafka broker %s (kfake, %s of %d partitions, data in %s)", st.broker.Addr(), what, c.Partitions, dir)

	// 3. The bridge, and a pool to watch the database with.
	bcfg := bridge.DefaultConfig()
	bcfg.Reader.Brokers, bcfg.Reader.Topics, bcfg.DatabaseURL = st.broker.Addr(), c.Topics, st.url
	bcfg.HTTPAddr, bcfg.AdminAddr, bcfg.Committer.Interval, bcfg.Reader.GroupID = c.HTTPAddr, c.AdminAddr, time.Second, "stb-demo"
	if c.Profiles != nil {
		bcfg.Profiles = c.Profiles
	}
	if st.bridge, err = bridge.New(ctx, bcfg, bridge.Deps{Logger: c.Logger}); err != nil {
		return nil, err
	}
	st.closers = append(st.closers, func() { st.bridge.Close() })
	if st.pool, err = db.Connect(ctx, st.url, 2); err != nil {
		return nil, err
	}
	st.closers = append(st.closers, st.pool.Close)
	bctx, stopBridge := context.WithCancel(context.Background())
	bridgeDone := make(chan error, 1)
	go func() {
		if c.Hold != nil {
			select {
			case <-c.Hold:
			case <-bctx.Done():
				bridgeDone <- nil
				return
			}
		}
		bridgeDone <- st.bridge.Run(bctx)
	}()
	st.closers = append(st.closers, func() {
		stopBridge()
		<-bridgeDone
	})
	if a := st.bridge.AdminAddr(); a != "" {
		say("console http://%s/  (%s)", a, c.Console)
	}
	if c.HTTPAddr != "" {
		say("metrics http://%s/metrics", st.bridge.HTTPAddr())
	}
	return st, nil
}

// close stops the bridge and releases the rest, last opened first.
func (st *stage) close() {
	for i := len(st.closers) - 1; i >= 0; i-- {
		st.closers[i]()
	}
	st.closers = nil
}

// follow runs publish on a goroutine of its own while the bridge reads:
// publish reports through sent how many messages it has sent, and returns
// the expected state and how many messages it sent in all. follow prints
// a progress line every second and, once everything is published, checks
// the database with check until it matches with every message committed,
// or until timeout after the last message was published. It returns the
// expected state (the zero value when publishing did not end) and whether
// the last check matched.
func follow[E any](ctx context.Context, st *stage, out io.Writer, timeout time.Duration,
	publish func(ctx context.Context, sent func(int)) (E, int, error),
	published func(exp E, after time.Duration),
	check func(ctx context.Context, exp E) (bool, error)) (exp E, ok bool, err error) {
	var sent atomic.Int64
	type simResult struct {
		exp E
		n   int
		err error
	}
	simDone := make(chan simResult, 1)
	simCtx, stopSim := context.WithCancel(ctx)
	defer func() {
		stopSim()
		if simDone != nil {
			<-simDone
		}
	}()
	go func() {
		exp, n, err := publish(simCtx, func(n int) { sent.Store(int64(n)) })
		simDone <- simResult{exp, n, err}
	}()

	start := time.Now()
	tick := time.NewTicker(time.Second)
	defer tick.Stop()
	var total int64 = -1 // all published, once known
	var deadline time.Time
	for {
		select {
		case <-ctx.Done():
			return exp, false, errors.New("interrupted")
		case r := <-simDone:
			simDone = nil
			if r.err != nil {
				return exp, false, fmt.Errorf("simulate: %w", r.err)
			}
			exp, total = r.exp, int64(r.n)
			deadline = time.Now().Add(timeout)
			published(exp, time.Since(start))
			continue
		case <-tick.C:
		}
		m, stats := metricview.Gather(st.bridge.Gatherer()), st.bridge.Stats()
		sentNow := sent.Load()
		if total >= 0 {
			sentNow = total
		}
		committed := stats.Committed()
		fmt.Fprintf(out, "[%4.0fs] sent %7d | read %7d | written %7.0f | skipped %5.0f | committed lag %6d | dead letters %.0f\n",
			time.Since(start).Seconds(), sentNow, stats.Read, m.Sum("stb_dispatcher_bundles_total", map[string]string{"result": "applied"}),
			m.Sum("stb_transport_skipped_total", nil), max(0, sentNow-committed),
			m.Sum("stb_transport_rejected_total", nil)+m.Sum("stb_dispatcher_dead_letters_total", nil))
		if total < 0 {
			continue
		}
		if ok, err = check(ctx, exp); err != nil {
			return exp, false, err
		}
		if (ok && committed >= total) || time.Now().After(deadline) {
			return exp, ok, nil
		}
	}
}
