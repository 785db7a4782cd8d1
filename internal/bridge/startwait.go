package bridge

import (
	"context"
	"errors"
	"fmt"
	"net"
	"net/http"
	"sync"
	"time"

	"github.com/jackc/pgx/v5/pgconn"
	"github.com/jackc/pgx/v5/pgxpool"
	"go.uber.org/zap"

	"github.com/stbridge/stb/pkg/db"
)

// DefaultDBStartTimeout is how long WaitForDatabase waits for a database
// unreachable at start before it gives up (--db-start-timeout).
const DefaultDBStartTimeout = 5 * time.Minute

// Backoff of WaitForDatabase between attempts: doubling from the first to
// the last.
const (
	dbStartFirstBackoff = time.Second
	dbStartMaxBackoff   = 30 * time.Second
	dbStartAttempt      = 10 * time.Second
)

// WaitForDatabase returns once the database at url answers, so that a
// bridge started while its database is down (a restart of both, an
// outage) waits for it instead of exiting and being restarted in a loop.
// While it waits, httpAddr (when not empty) answers /healthz 200 (the
// process is alive) and /readyz 503 with what it waits for, and the
// listener is closed before it returns, for New to take. It tries again
// with a backoff doubling from 1s to 30s and gives up after timeout (0
// waits for ever) with the last error. What does not get better by
// waiting it leaves to New to report at once: a malformed URL, and a
// server that answers with an error other than "starting up" or "too many
// connections" (a wrong password, a missing database). It returns
// ctx.Err() when ctx ends first.
func WaitForDatabase(ctx context.Context, url string, timeout time.Duration, httpAddr string, logger *zap.Logger) error {
	if logger == nil {
		logger = zap.NewNop()
	}
	if db.CheckURL(url) != nil {
		return nil
	}
	if _, err := pgxpool.ParseConfig(url); err != nil {
		return nil
	}
	since := time.Now()
	err := pingDatabase(ctx, url)
	if !retryable(err) {
		return nil
	}
	var status startStatus
	status.set(since, err)
	if httpAddr != "" {
		stop, lerr := serveStarting(httpAddr, &status)
		if lerr != nil {
			return lerr
		}
		defer stop()
	}
	var deadline time.Time
	if timeout > 0 {
		deadline = since.Add(timeout)
	}
	backoff := dbStartFirstBackoff
	for {
		wait := backoff
		if !deadline.IsZero() {
			if left := time.Until(deadline); left <= 0 {
				return fmt.Errorf("the database %s was unreachable for %v (--db-start-timeout), last: %w; check that it runs and that the URL's host and port are right",
					db.RedactURL(url), time.Since(since).Round(time.Second), err)
			} else if left < wait {
				wait = left
			}
		}
		logger.Warn("database unreachable at start, retrying", zap.Duration("in", wait),
			zap.Duration("waiting_for", time.Since(since).Round(time.Second)), zap.Error(err))
		select {
		case <-ctx.Done():
			return ctx.Err()
		case <-time.After(wait):
		}
		backoff = min(2*backoff, dbStartMaxBackoff)
		if err = pingDatabase(ctx, url); !retryable(err) {
			logger.Info("database reachable", zap.Duration("after", time.Since(since).Round(time.Second)))
			return nil
		}
		status.set(since, err)
	}
}

// pingDatabase opens one connection to url and closes it.
func pingDatabase(ctx context.Context, url string) error {
	ctx, cancel := context.WithTimeout(ctx, dbStartAttempt)
	defer cancel()
	pool, err := db.Connect(ctx, url, 1)
	if err != nil {
		return err
	}
	pool.Close()
	return nil
}

// retryable reports whether err is one waiting may cure: no answer from
// the server, or its answer that it is starting, shutting down or full.
func retryable(err error) bool {
	if err == nil {
		return false
	}
	var pgErr *pgconn.PgError
	if errors.As(err, &pgErr) {
		switch pgErr.Code {
		case "57P03", "57P01", "53300": // cannot_connect_now, admin_shutdown, too_many_connections
			return true
		}
		return false
	}
	return true
}

// startStatus is what /readyz says while WaitForDatabase waits.
type startStatus struct {
	mu    sync.Mutex
	since time.Time
	err   error
}

func (s *startStatus) set(since time.Time, err error) {
	s.mu.Lock()
	defer s.mu.Unlock()
	s.since, s.err = since, err
}

func (s *startStatus) String() string {
	s.mu.Lock()
	defer s.mu.Unlock()
	return fmt.Sprintf("database unreachable, retrying since %s: %v", s.since.UTC().Format(time.RFC3339), s.err)
}

// serveStarting serves /healthz and /readyz on addr while the bridge
// waits; stop closes the listener.
func serveStarting(addr string, status *startStatus) (stop func(), err error) {
	ln, err := net.Listen("tcp", addr)
	if err != nil {
		return nil, fmt.Errorf("--http-addr %s: %w", addr, err)
	}
	mux := http.NewServeMux()
	mux.HandleFunc("/healthz", func(w http.ResponseWriter, _ *http.Request) {
		fmt.Fprintln(w, "ok")
	})
	mux.HandleFunc("/readyz", func(w http.ResponseWriter, _ *http.Request) {
		http.Error(w, status.String(), http.StatusServiceUnavailable)
	})
	srv := &http.Server{Handler: mux, ReadHeaderTimeout: 5 * time.Second}
	done := make(chan struct{})
	go func() {
		defer close(done)
		_ = srv.Serve(ln)
	}()
	return func() {
		_ = srv.Close()
		<-done
	}, nil
}
