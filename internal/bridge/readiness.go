package bridge

import (
	"context"
	"errors"
	"fmt"
	"net"
	"strings"
	"sync"
	"time"

	"github.com/jackc/pgx/v5/pgconn"
	"go.uber.org/zap"

	"github.com/stbridge/stb/pkg/committer"
	"github.com/stbridge/stb/pkg/db"
)

// readyPingTimeout bounds the database ping of one readiness check, so
// that /readyz says 503 within about a second of the database hanging and
// answers within the 1 s a Kubernetes probe waits by default.
const readyPingTimeout = time.Second

// brokersDownGrace is how long every Kafka broker may be unreachable
// before /readyz says so: a broker's restart or a leader election passes
// within it, while a Kafka that is gone shows within seconds rather than
// when the group's session times out (over a minute).
const brokersDownGrace = 15 * time.Second

// readiness is what /readyz and the console ask whether the bridge is
// ready: the components whose state says it. Its answers say what is
// wrong and never how the database is reached: /readyz is on the public
// listener, and pgx's errors name the host, the user and the database.
// The errors themselves go to the log, redacted, when the answer changes.
type readiness struct {
	pool interface {
		Ping(ctx context.Context) error
	}
	committer interface {
		Partitions() []*committer.Partition
		Err() error
	}
	dispatcher interface{ Err() error }
	// kafka, when set, says how long every broker has been unreachable;
	// past brokersDown (brokersDownGrace when 0) the bridge is not ready.
	kafka interface {
		BrokersDownFor(now time.Time) time.Duration
	}
	brokersDown time.Duration
	// databaseURL is redacted from the errors logged.
	databaseURL string
	logger      *zap.Logger

	mu   sync.Mutex
	last string // the problems last logged, joined
}

// Problems lists what keeps the bridge from being ready; empty is ready.
func (r *readiness) Problems(ctx context.Context) []string {
	var problems []string
	var errs []error
	add := func(what string, err error) {
		problems = append(problems, what+": "+describe(err))
		errs = append(errs, fmt.Errorf("%s: %w", what, db.RedactError(err, r.databaseURL)))
	}
	pctx, cancel := context.WithTimeout(ctx, readyPingTimeout)
	defer cancel()
	if err := r.pool.Ping(pctx); err != nil {
		add("database unreachable", err)
	}
	if r.kafka != nil {
		grace := r.brokersDown
		if grace == 0 {
			grace = brokersDownGrace
		}
		if down := r.kafka.BrokersDownFor(time.Now()); down >= grace {
			problems = append(problems, fmt.Sprintf("every Kafka broker unreachable for %v", down.Round(time.Second)))
		}
	}
	if len(r.committer.Partitions()) == 0 {
		problems = append(problems, "no Kafka partitions assigned")
	}
	if err := r.committer.Err(); err != nil {
		add("offset commits failing", err)
	}
	if err := r.dispatcher.Err(); err != nil {
		add("database writes failing", err)
	}
	r.logChange(problems, errs)
	return problems
}

// logChange logs the problems with their errors when they differ from the
// last ones logged, so that a probe every few seconds logs a line per
// change and not per probe.
func (r *readiness) logChange(problems []string, errs []error) {
	now := strings.Join(problems, "; ")
	r.mu.Lock()
	changed := now != r.last
	r.last = now
	r.mu.Unlock()
	switch {
	case !changed || r.logger == nil:
	case len(problems) == 0:
		r.logger.Info("ready")
	default:
		r.logger.Warn("not ready", zap.Strings("problems", problems), zap.Errors("errors", errs))
	}
}

// describe says what kind of failure err is, in words that name no host,
// user or database: a timeout, a connection that failed, or the SQLSTATE
// the server answered with.
func describe(err error) string {
	var (
		pgErr  *pgconn.PgError
		netErr net.Error
		conErr *pgconn.ConnectError
	)
	switch {
	case errors.Is(err, committer.ErrCommitBusy):
		return "a commit is still waiting for the database"
	case errors.Is(err, context.DeadlineExceeded) || pgconn.Timeout(err):
		return "no answer in time (the database or the network hangs)"
	case errors.As(err, &pgErr):
		return "the server answered SQLSTATE " + pgErr.Code
	case errors.As(err, &conErr):
		return "cannot connect"
	case errors.As(err, &netErr):
		return "connection lost"
	case errors.Is(err, context.Canceled):
		return "cancelled"
	default:
		return "failed (see the log)"
	}
}
