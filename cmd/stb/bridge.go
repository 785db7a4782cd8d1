package main

import (
	"context"
	"errors"
	"fmt"
	"math/rand/v2"
	"net"
	"net/http"
	"os"
	"sync"
	"time"

	"github.com/jackc/pgx/v5/pgxpool"
	"github.com/prometheus/client_golang/prometheus"
	"github.com/prometheus/client_golang/prometheus/collectors"
	"go.uber.org/zap"
	"golang.org/x/sync/errgroup"

	"github.com/stbridge/stb/conflation"
	"github.com/stbridge/stb/dbsyncers"
	"github.com/stbridge/stb/dispatcher"
	"github.com/stbridge/stb/pkg/committer"
	"github.com/stbridge/stb/pkg/db"
	"github.com/stbridge/stb/pkg/deadletter"
	"github.com/stbridge/stb/pkg/transport"
)

// controlPoolSize is the connections of the pool that the committer, the
// dead-letter writer, readiness checks and start-up loads share, so that
// none of them ever waits behind the workers.
const controlPoolSize = 4

// bridge is the whole pipeline, wired. Only this package builds one.
type bridge struct {
	cfg      runConfig
	logger   *zap.Logger
	registry *prometheus.Registry

	workPool    *pgxpool.Pool
	controlPool *pgxpool.Pool
	manager     *conflation.Manager
	committer   *committer.Committer
	reader      *transport.Reader
	dispatcher  *dispatcher.Dispatcher
	http        *http.Server
	httpLn      net.Listener

	closeOnce sync.Once
}

// newBridge connects to the database, migrates it if asked, restores the
// processed versions and builds every component; nothing runs yet.
func newBridge(ctx context.Context, cfg runConfig, logger *zap.Logger) (_ *bridge, err error) {
	if err := cfg.validate(); err != nil {
		return nil, err
	}
	b := &bridge{cfg: cfg, logger: logger, registry: prometheus.NewRegistry()}
	defer func() {
		if err != nil {
			b.close()
		}
	}()
	b.registry.MustRegister(collectors.NewGoCollector(), collectors.NewProcessCollector(collectors.ProcessCollectorOpts{}))

	if cfg.Migrate {
		from, to, err := db.Migrate(ctx, cfg.DatabaseURL, logger)
		if err != nil {
			return nil, err
		}
		logger.Info("database schema ready", zap.Int32("from", from), zap.Int32("to", to))
	}
	if b.workPool, err = db.Connect(ctx, cfg.DatabaseURL, int32(cfg.DBPoolSize)); err != nil {
		return nil, err
	}
	if b.controlPool, err = db.Connect(ctx, cfg.DatabaseURL, controlPoolSize); err != nil {
		return nil, err
	}

	reg := dbsyncers.Default()
	b.manager, err = conflation.NewManager(conflation.Config{
		Types:             reg.Types(),
		Merge:             reg.Mergers(),
		MaxDeltaBytes:     int(cfg.MaxDeltaBytes),
		DependencyTimeout: cfg.DependencyTimeout,
		NoConflation:      !cfg.Conflation,
		Registerer:        b.registry,
	})
	if err != nil {
		return nil, err
	}
	n, err := b.restoreVersions(ctx)
	if err != nil {
		return nil, err
	}
	logger.Info("restored processed versions", zap.Int("rows", n), zap.Int("hubs", b.manager.Len()))

	dead := deadletter.NewWriter(b.controlPool)
	// The owner id tells this process's claims on status.transport rows
	// from those of other replicas and of its own earlier runs.
	store := committer.NewPGStore(b.controlPool, ownerID())
	b.committer, err = committer.New(committer.Config{
		Interval: cfg.CommitInterval,
		OnCommit: func(ps []committer.Position) {
			if b.reader != nil {
				b.reader.CommitKafka(ps)
			}
		},
		HighWatermark: func(topic string, partition int32) (int64, bool) {
			if b.reader == nil {
				return 0, false
			}
			return b.reader.HighWatermark(topic, partition)
		},
		Registerer: b.registry,
	}, store, logger.Named("committer"))
	if err != nil {
		return nil, err
	}
	b.reader, err = transport.NewReader(transport.Config{
		Brokers:          cfg.KafkaBrokers,
		GroupID:          cfg.KafkaGroupID,
		Topics:           cfg.KafkaTopics,
		TypePrefix:       cfg.TypePrefix,
		AutoOffsetReset:  cfg.AutoOffsetReset,
		VerifySource:     cfg.VerifySource,
		MaxBundleBytes:   int(cfg.MaxBundleBytes),
		MaxBufferedBytes: int64(cfg.MaxBufferedBytes),
		Properties:       cfg.KafkaProperties,
	}, transport.Deps{
		Decoder:   registryDecoder{reg},
		Sink:      b.manager,
		Committer: b.committer,
		Offsets:   store,
		Rejects:   rejectWriter{w: dead, logger: logger},
		Buffer:    b.manager,
		// Partitions may come from another replica, which wrote versions
		// these units have not seen: a compliance bundle read next would
		// otherwise wait for a clusterspolicies bundle written before the
		// stored position, which this bridge will never read.
		BeforeAssign: func(ctx context.Context) error {
			_, err := b.restoreVersions(ctx)
			return err
		},
		AfterRevoke: b.dropRevoked,
		Logger:      logger.Named("transport"),
		Registerer:  b.registry,
	})
	if err != nil {
		return nil, err
	}
	dcfg := dispatcher.Config{Workers: cfg.DBPoolSize, JobTimeout: cfg.JobTimeout}
	if !cfg.Conflation {
		// The baseline is a per-record sink: one transaction per message.
		dcfg.BatchJobs = 1
	}
	b.dispatcher, err = dispatcher.New(dcfg,
		b.workPool, b.manager, reg, dead, logger.Named("dispatcher"), b.registry)
	if err != nil {
		return nil, err
	}
	if cfg.HTTPAddr != "" {
		// Listen now, so that a taken port fails the start, not later.
		if b.httpLn, err = net.Listen("tcp", cfg.HTTPAddr); err != nil {
			return nil, fmt.Errorf("http: %w", err)
		}
		b.http = &http.Server{Handler: b.routes(), ReadHeaderTimeout: 5 * time.Second}
	}
	return b, nil
}

// run runs the bridge until ctx ends, then shuts down in this order:
//
//  1. stop reading: the reader's poll loop returns, nothing new is inserted;
//  2. the dispatcher stops popping units; workers finish their in-flight
//     jobs (each bounded by --job-timeout);
//  3. the final offset commit, which now covers the workers' last writes;
//  4. close the Kafka consumer (leaving the group) and the database pools.
//
// Steps 1–3 share --shutdown-timeout.
func (b *bridge) run(ctx context.Context) error {
	readCtx, stopReading := context.WithCancel(context.Background())
	workCtx, stopWorking := context.WithCancel(context.Background())
	commitCtx, stopCommitting := context.WithCancel(context.Background())
	defer stopReading()
	defer stopWorking()
	defer stopCommitting()

	errc := make(chan error, 4)
	var readers, workers, others errgroup.Group
	readers.Go(func() error { return b.reader.Run(readCtx) })
	workers.Go(func() error { return b.dispatcher.Run(workCtx) })
	others.Go(func() error { return b.committer.Run(commitCtx) })
	if b.http != nil {
		others.Go(func() error {
			b.logger.Info("http listening", zap.String("addr", b.httpLn.Addr().String()))
			if err := b.http.Serve(b.httpLn); err != nil && !errors.Is(err, http.ErrServerClosed) {
				errc <- fmt.Errorf("http: %w", err)
			}
			return nil
		})
	}
	go func() {
		if err := readers.Wait(); err != nil {
			errc <- fmt.Errorf("reader: %w", err)
		}
	}()

	var runErr error
	select {
	case <-ctx.Done():
		b.logger.Info("shutting down")
	case runErr = <-errc:
		b.logger.Error("component failed, shutting down", zap.Error(runErr))
	}

	deadline := time.Now().Add(b.cfg.ShutdownTimeout)
	done := make(chan struct{})
	go func() {
		defer close(done)
		stopReading() // 1
		_ = readers.Wait()
		stopWorking() // 2
		_ = workers.Wait()
		stopCommitting()
		cctx, cancel := context.WithDeadline(context.Background(), deadline)
		defer cancel()
		if err := b.committer.Commit(cctx); err != nil { // 3
			b.logger.Error("final offset commit failed", zap.Error(err))
			if runErr == nil {
				runErr = err
			}
		}
	}()
	select {
	case <-done:
	case <-time.After(time.Until(deadline)):
		b.logger.Error("shutdown timed out; offsets of unfinished work stay uncommitted and will be replayed",
			zap.Duration("timeout", b.cfg.ShutdownTimeout))
	}
	if b.http != nil {
		sctx, cancel := context.WithTimeout(context.Background(), time.Second)
		_ = b.http.Shutdown(sctx)
		cancel()
	}
	_ = others.Wait()
	b.close() // 4
	return runErr
}

// close releases the consumer and the pools; safe to call more than once.
func (b *bridge) close() {
	b.closeOnce.Do(func() {
		if b.reader != nil {
			_ = b.reader.Close()
		}
		if b.httpLn != nil { // already closed by Shutdown if the server ran
			_ = b.httpLn.Close()
		}
		if b.workPool != nil {
			b.workPool.Close()
		}
		if b.controlPool != nil {
			b.controlPool.Close()
		}
	})
}

// registryDecoder adapts the registry to the reader's Decoder.
type registryDecoder struct{ r *dbsyncers.Registry }

func (d registryDecoder) Decode(typ string, data []byte) (any, error) {
	s, ok := d.r.Lookup(typ)
	if !ok {
		return nil, transport.ErrUnknownType
	}
	return s.Decode(data)
}

// rejectWriter dead-letters messages the reader rejects.
type rejectWriter struct {
	w      *deadletter.Writer
	logger *zap.Logger
}

func (r rejectWriter) Reject(ctx context.Context, rj transport.Reject) error {
	letter := deadletter.Letter{
		Hub: rj.Hub, Type: rj.Type, Version: rj.Version, Origin: rj.Origin,
		Reason: rj.Reason, Err: rj.Err, Headers: rj.Headers, Data: rj.Data,
	}
	// A database outage must not lose the dead letter: retry with backoff,
	// holding up reading (which stops nothing that could proceed: workers
	// cannot write either) until it is stored or the bridge stops.
	delay := 100 * time.Millisecond
	for {
		err := r.w.Write(ctx, letter)
		if err == nil {
			return nil
		}
		r.logger.Warn("dead letter not stored yet, retrying", zap.String("reason", rj.Reason),
			zap.String("topic", rj.Origin.Topic), zap.Int32("partition", rj.Origin.Partition),
			zap.Int64("offset", rj.Origin.Offset), zap.Duration("retryIn", delay), zap.Error(err))
		select {
		case <-ctx.Done():
			return err
		case <-time.After(delay):
		}
		delay = min(2*delay, 5*time.Second)
	}
}

// Known lets the reader tell an unknown type before anything else.
func (d registryDecoder) Known(typ string) bool {
	_, ok := d.r.Lookup(typ)
	return ok
}

// restoreVersions tells the conflation units the versions the database
// holds (status.bundle_versions), as processed: at start, and whenever
// partitions are assigned. Restoring only moves a unit's versions forward.
func (b *bridge) restoreVersions(ctx context.Context) (int, error) {
	versions, err := db.LoadVersions(ctx, b.controlPool)
	if err != nil {
		return 0, err
	}
	for _, v := range versions {
		b.manager.Restore(v.Hub, v.Type, v.Version)
	}
	return len(versions), nil
}

// dropRevoked forgets what the units hold of a revoked partition and waits
// until nothing of it is outstanding (what was in flight has been written),
// dropping again whatever a failed write puts back meanwhile, or until ctx
// ends (the revocation timeout: a transaction stuck that long is fenced
// against the new owner's writes anyway).
func (b *bridge) dropRevoked(ctx context.Context, p *committer.Partition) {
	for {
		b.manager.DropPartition(p.Topic, p.Partition)
		if p.Outstanding() == 0 {
			return
		}
		select {
		case <-ctx.Done():
			return
		case <-time.After(5 * time.Millisecond):
		}
	}
}

// ownerID returns an id for this process among the bridges sharing a
// database: host name (the pod name on Kubernetes), process id and a
// random suffix, so a restarted process never passes for its predecessor.
func ownerID() string {
	host, err := os.Hostname()
	if err != nil || host == "" {
		host = "unknown-host"
	}
	return fmt.Sprintf("%s/%d/%08x", host, os.Getpid(), rand.Uint32())
}
