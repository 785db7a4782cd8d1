package bridge

import (
	"context"
	"errors"
	"fmt"
	"net/http"
	"time"

	"go.uber.org/zap"
	"golang.org/x/sync/errgroup"
)

// closeGrace is what the shutdown may take beyond Config.ShutdownTimeout:
// waiting for aborted transactions to roll back, shutting the HTTP servers
// down, leaving the consumer group and closing the pools, so that Run
// returns within ShutdownTimeout + closeGrace whatever Kafka and the
// database do. Its last closeClientsGrace is the clients' own: however
// long the components took to stop, each client is given at least that
// long to close (the consumer to leave its group), never a deadline
// already past.
const closeGrace = 2 * time.Second

// closeClientsGrace is the part of closeGrace kept for closing the
// clients (closeClients).
const closeClientsGrace = time.Second

// component is one running part of the bridge with a context of its own,
// so that the shutdown can stop the parts one at a time, in order.
type component struct {
	name   string
	cancel context.CancelFunc
	done   chan struct{}
}

// start runs f in g under a context that only stop cancels. If f returns
// before it was stopped, the component failed (or ended by itself): the
// error goes to failed, which starts the shutdown. Nothing is written
// after done is closed.
func start(g *errgroup.Group, name string, failed chan<- error, f func(context.Context) error) *component {
	ctx, cancel := context.WithCancel(context.Background())
	c := &component{name: name, cancel: cancel, done: make(chan struct{})}
	g.Go(func() error {
		defer close(c.done)
		err := f(ctx)
		if ctx.Err() == nil {
			if err == nil {
				err = errors.New("stopped by itself")
			}
			err = fmt.Errorf("%s: %w", name, err)
			select {
			case failed <- err:
			default: // another component failed first
			}
		}
		return err
	})
	return c
}

// stop cancels the component and waits for it until deadline ends; it
// reports whether the component has returned.
func (c *component) stop(deadline context.Context) bool {
	c.cancel()
	select {
	case <-c.done:
		return true
	case <-deadline.Done():
		return false
	}
}

// Run first runs the profiles' start-up steps Config.Startup turns on
// (each bounded by its own timeout; a failure is logged), then runs the
// bridge until ctx ends or a component fails, then shuts down
// in this order, every step within what is left of
// Config.ShutdownTimeout:
//
//  1. stop reading: the reader returns; nothing new is inserted;
//  2. the dispatcher stops popping; its workers finish their in-flight
//     jobs. If the time is up first, the jobs are aborted: they roll back
//     and their bundles stay in their units;
//  3. the dead-letter queue stores what it holds (one attempt per batch);
//  4. the committer's loop stops, then the final commit stores each
//     partition's position, which is behind every bundle not written and
//     every reject whose dead letter was not stored;
//  5. the HTTP servers (the requests in flight cancelled: a console
//     replay ends and gives its connection back), the Kafka consumer
//     (leaving the group) and the pools close, on every path, each within
//     what is left of closeGrace, the clients at least closeClientsGrace
//     each; a client that does not close in time is left behind with a
//     log line.
//
// Run returns within the timeout plus closeGrace even when a component or
// a client does not stop (the database hangs, Kafka is gone): what is left
// running is logged, the offsets of unfinished work are not committed,
// and a restart replays them. Run returns the error of the component that
// failed, else that of the final commit, else nil.
func (b *Bridge) Run(ctx context.Context) error {
	b.startup(ctx)
	var g errgroup.Group
	failed := make(chan error, 1)
	reader := start(&g, "reader", failed, b.reader.Run)
	workers := start(&g, "dispatcher", failed, b.dispatcher.Run)
	letters := start(&g, "dead letters", failed, b.rejects.Run)
	commits := start(&g, "committer", failed, b.committer.Run)
	hubs := start(&g, "hub lifecycle", failed, b.hubs.Run)
	memory := start(&g, "memory release", failed, b.memory.run)
	var resyncs *component // sends what the units' WakeAll asks
	if b.resyncs != nil {
		resyncs = start(&g, "resync requests", failed, b.resyncs.run)
	}
	var servers []*component
	for _, srv := range b.servers {
		b.logger.Info("http listening", zap.String("server", srv.name), zap.String("addr", srv.ln.Addr().String()))
		servers = append(servers, start(&g, srv.name, failed, func(context.Context) error {
			if err := srv.srv.Serve(srv.ln); !errors.Is(err, http.ErrServerClosed) {
				return fmt.Errorf("%w: %s: %w", errHTTP, srv.name, err)
			}
			return nil
		}))
	}
	var consoleRun *component // its overview refresh; the admin server reads it
	if b.console != nil {
		consoleRun = start(&g, "console", failed, b.console.Run)
	}
	allDone := make(chan struct{})
	go func() {
		_ = g.Wait() // each component's error went to failed, or is its stop
		close(allDone)
	}()

	var runErr error
	select {
	case <-ctx.Done():
		b.logger.Info("shutting down")
	case runErr = <-failed:
		b.logger.Error("component failed, shutting down", zap.Error(runErr))
	}

	sctx, cancel := context.WithTimeout(context.Background(), b.cfg.ShutdownTimeout)
	defer cancel()
	grace, gcancel := context.WithDeadline(context.Background(), deadlineOf(sctx).Add(closeGrace))
	defer gcancel()
	// What the components may take past the timeout: the rest of the
	// grace is the clients'.
	wait, wcancel := context.WithDeadline(context.Background(), deadlineOf(grace).Add(-closeClientsGrace))
	defer wcancel()
	late := func(step string) {
		b.logger.Error("shutdown timed out; offsets of unfinished work stay uncommitted and will be replayed",
			zap.String("step", step), zap.Duration("timeout", b.cfg.ShutdownTimeout))
	}
	if !reader.stop(sctx) { // 1
		late("stop reading")
	}
	if !workers.stop(sctx) { // 2
		late("finish in-flight jobs")
		b.dispatcher.Abort()
		// Aborted transactions roll back at once; wait for their reports
		// so that the final commit sees the bundles back in their units.
		workers.stop(wait)
	}
	if letters.stop(sctx) { // 3
		if err := b.rejects.Flush(sctx); err != nil {
			b.logger.Warn("dead letters not stored at shutdown; their messages will be read and rejected again",
				zap.Int("queued", b.rejects.Len()), zap.Error(err))
		}
	} else {
		late("stop the dead-letter queue")
	}
	hubs.stop(sctx)   // it writes nothing the commit depends on
	memory.stop(sctx) // nor does a release of memory
	if resyncs != nil {
		resyncs.stop(sctx) // the dispatcher, which asks, has stopped
	}
	if commits.stop(sctx) { // 4
		if err := b.committer.Commit(sctx); err != nil {
			b.logger.Error("final offset commit failed", zap.Error(err))
			if runErr == nil {
				runErr = fmt.Errorf("final offset commit: %w", err)
			}
		}
	} else {
		late("stop the committer")
	}
	for i, c := range servers { // 5
		// The requests in flight end now: a console replay would hold
		// its connection for minutes, and the process is going away.
		b.servers[i].endRequests()
		hctx, hcancel := context.WithTimeout(wait, time.Second)
		_ = b.servers[i].srv.Shutdown(hctx)
		hcancel()
		c.cancel()
	}
	if consoleRun != nil {
		consoleRun.cancel() // allDone waits for its pass in progress
	}
	// The clients are closed once nothing uses them, or once the
	// components' part of the grace is up: a pool's Close waits for its
	// connections to come back, and the consumer's for the reader's poll
	// loop. They then have the rest of the grace, closeClientsGrace at
	// least, each on its own.
	select {
	case <-allDone:
	case <-wait.Done():
		var running []string
		for _, c := range append([]*component{reader, workers, letters, commits, hubs, memory}, servers...) {
			select {
			case <-c.done:
			default:
				running = append(running, c.name)
			}
		}
		b.logger.Error("components still running after the shutdown timeout; closing the clients under them",
			zap.Strings("components", running))
	}
	if b.closing.CompareAndSwap(false, true) {
		b.closeClients(grace)
	}
	return runErr
}

func deadlineOf(ctx context.Context) time.Time {
	d, _ := ctx.Deadline()
	return d
}
