package bridge

import (
	"context"
	"reflect"
	"strings"
	"testing"
	"time"

	"github.com/jackc/pgx/v5"
	"github.com/jackc/pgx/v5/pgxpool"
	"go.uber.org/zap"

	"github.com/stbridge/stb/pkg/db/dbtest"
	"github.com/stbridge/stb/pkg/sim"
	"github.com/stbridge/stb/pkg/verify"
)

func TestValidate(t *testing.T) {
	if err := DefaultConfig().Validate(); err != nil {
		t.Fatalf("the default configuration is invalid: %v", err)
	}
	// The console beyond the loopback: with a token, or said out loud.
	for _, c := range []func(*Config){
		func(c *Config) { c.AdminAddr = ":18091"; c.AdminTokenFile = "/run/secrets/token" },
		func(c *Config) { c.AdminAddr = ":18091"; c.AdminNoAuth = true },
		func(c *Config) { c.AdminAddr = "localhost:18091" },
		func(c *Config) { c.AdminAddr = "[::1]:18091" },
	} {
		cfg := DefaultConfig()
		c(&cfg)
		if err := cfg.Validate(); err != nil {
			t.Errorf("admin %q (token file %q, no auth %v): %v", cfg.AdminAddr, cfg.AdminTokenFile, cfg.AdminNoAuth, err)
		}
	}
	for name, tc := range map[string]struct {
		change func(*Config)
		want   string
	}{
		"no brokers":             {func(c *Config) { c.Reader.Brokers = "" }, "--kafka-brokers"},
		"no topics":              {func(c *Config) { c.Reader.Topics = nil }, "--kafka-topics"},
		"no pool":                {func(c *Config) { c.Dispatcher.Workers = 0 }, "--db-pool-size"},
		"no shutdown time":       {func(c *Config) { c.ShutdownTimeout = 0 }, "--shutdown-timeout"},
		"bad offset reset":       {func(c *Config) { c.Reader.AutoOffsetReset = "middle" }, "earliest or latest"},
		"negative buffered":      {func(c *Config) { c.Reader.MaxBufferedBytes = -1 }, "--max-buffered-bytes"},
		"unknown profile":        {func(c *Config) { c.Profiles = []string{"stb", "hoh"} }, `--profiles: unknown profile "hoh"`},
		"delete, never inactive": {func(c *Config) { c.Hubs.InactiveAfter, c.Hubs.DeleteAfter = 0, time.Hour }, "--hub-delete-after needs"},
		"open console, no token": {func(c *Config) { c.AdminAddr = ":18091" }, "--admin-addr :18091 listens beyond this machine without --admin-token-file"},
		"console on a host ip":   {func(c *Config) { c.AdminAddr = "10.0.0.7:8081" }, "--admin-no-auth"},
		"negative linger":        {func(c *Config) { c.Conflation.Linger = -time.Second }, "--linger"},
	} {
		t.Run(name, func(t *testing.T) {
			// Two configurations built alike, sharing no map or slice:
			// Validate's value receiver copies the struct but not what
			// its maps and slices (Properties, Topics, Profiles) hold,
			// which it must not change either.
			c, want := DefaultConfig(), DefaultConfig()
			tc.change(&c)
			tc.change(&want)
			err := c.Validate()
			if err == nil || !strings.Contains(err.Error(), tc.want) {
				t.Fatalf("Validate() = %v, want an error naming %s", err, tc.want)
			}
			if !reflect.DeepEqual(c, want) {
				t.Fatalf("Validate changed the configuration:\n got %+v\nwant %+v", c, want)
			}
		})
	}
}

// TestShutdownBoundedWhileAJobIsBlocked holds a lock that every
// managedclusters write waits for, cancels Run while workers wait on it,
// and checks that Run returns within the shutdown timeout (it used to wait
// for the jobs, up to --job-timeout, and wrote its result from a goroutine
// after the timeout branch had returned it), that the stored offsets let
// a restart write what was blocked, and that the restart verifies.
func TestShutdownBoundedWhileAJobIsBlocked(t *testing.T) {
	brk := startBroker(t, 2, "status")
	pool, url := dbtest.New(t)
	ctx := context.Background()

	scfg := sim.Config{Hubs: 20, Clusters: 5, Generations: 3, Seed: 3, Topic: "status"}
	pub, err := sim.NewKafkaPublisher(sim.PublisherConfig{Brokers: brk.Addr()}, zap.NewNop())
	if err != nil {
		t.Fatal(err)
	}
	exp, err := sim.Run(ctx, scfg, pub, nil)
	pub.Close()
	if err != nil {
		t.Fatal(err)
	}

	lock, err := pool.Begin(ctx)
	if err != nil {
		t.Fatal(err)
	}
	defer func() { _ = lock.Rollback(ctx) }()
	if _, err := lock.Exec(ctx, `LOCK TABLE stb.managed_clusters IN EXCLUSIVE MODE`); err != nil {
		t.Fatal(err)
	}

	cfg := DefaultConfig()
	cfg.Reader.Brokers, cfg.DatabaseURL, cfg.HTTPAddr, cfg.AdminAddr = brk.Addr(), url, "", ""
	cfg.Reader.GroupID = "shutdown-test"
	cfg.Committer.Interval = 100 * time.Millisecond
	cfg.Dispatcher.JobTimeout = 5 * time.Minute
	cfg.ShutdownTimeout = 2 * time.Second
	cfg.Dispatcher.Workers = 4
	b, err := New(ctx, cfg, Deps{Logger: zap.NewNop()})
	if err != nil {
		t.Fatal(err)
	}
	defer b.Close()
	runCtx, stop := context.WithCancel(ctx)
	done := make(chan error, 1)
	go func() { done <- b.Run(runCtx) }()

	waitFor(t, time.Minute, "a worker blocked on the lock", func() bool {
		return lockWaiters(t, pool) > 0 && b.Stats().Read >= uint64(exp.Messages)
	})
	start := time.Now()
	stop()
	select {
	case err := <-done:
		if err != nil {
			t.Fatalf("Run returned %v", err)
		}
	case <-time.After(cfg.ShutdownTimeout + closeGrace + 3*time.Second):
		t.Fatalf("Run did not return within the shutdown timeout %v plus %v", cfg.ShutdownTimeout, closeGrace+3*time.Second)
	}
	took := time.Since(start)
	t.Logf("Run returned %v after the stop, with workers blocked (shutdown timeout %v)", took.Round(time.Millisecond), cfg.ShutdownTimeout)

	stored := storedOffsets(t, pool)
	held := 0
	for _, p := range b.Stats().Partitions {
		if p.Outstanding > 0 {
			held++
			if stored[p.Partition] > p.Position {
				t.Errorf("partition %d: stored offset %d is past the lowest unwritten offset %d", p.Partition, stored[p.Partition], p.Position)
			}
		}
	}
	if held == 0 {
		t.Fatal("nothing was held at the stop; the test did not block a job")
	}
	if err := lock.Rollback(ctx); err != nil {
		t.Fatal(err)
	}

	// The restart reads from the stored offsets and writes what was blocked.
	cfg.ShutdownTimeout = 30 * time.Second
	b2, err := New(ctx, cfg, Deps{Logger: zap.NewNop()})
	if err != nil {
		t.Fatal(err)
	}
	defer b2.Close()
	runCtx2, stop2 := context.WithCancel(ctx)
	done2 := make(chan error, 1)
	go func() { done2 <- b2.Run(runCtx2) }()
	var rep *verify.Report
	waitFor(t, 2*time.Minute, "the restarted bridge to reach the expected state", func() bool {
		rep, err = verify.Verify(ctx, pool, exp)
		return err == nil && rep.OK()
	})
	stop2()
	if err := <-done2; err != nil {
		t.Fatalf("second Run returned %v", err)
	}
	t.Logf("after the restart: %d hubs, %d versions, %d clusters match", rep.Hubs, rep.Versions, rep.Clusters)
}

func waitFor(t *testing.T, timeout time.Duration, what string, ok func() bool) {
	t.Helper()
	deadline := time.Now().Add(timeout)
	for !ok() {
		if time.Now().After(deadline) {
			t.Fatalf("timed out after %v waiting for %s", timeout, what)
		}
		time.Sleep(20 * time.Millisecond)
	}
}

// lockWaiters counts the sessions of this database waiting for a lock.
func lockWaiters(t *testing.T, pool *pgxpool.Pool) int {
	t.Helper()
	var n int
	err := pool.QueryRow(context.Background(),
		`SELECT count(*) FROM pg_stat_activity WHERE datname = current_database() AND wait_event_type = 'Lock'`).Scan(&n)
	if err != nil {
		t.Fatal(err)
	}
	return n
}

func storedOffsets(t *testing.T, pool *pgxpool.Pool) map[int32]int64 {
	t.Helper()
	rows, err := pool.Query(context.Background(),
		`SELECT (payload->>'partition')::int, (payload->>'offset')::bigint FROM status.transport`)
	if err != nil {
		t.Fatal(err)
	}
	out := map[int32]int64{}
	var p int32
	var o int64
	if _, err := pgx.ForEachRow(rows, []any{&p, &o}, func() error { out[p] = o; return nil }); err != nil {
		t.Fatal(err)
	}
	return out
}
