package dispatcher

import (
	"context"
	"errors"
	"io"
	"net"
	"syscall"

	"github.com/jackc/pgx/v5/pgconn"

	"github.com/stbridge/stb/conflation"
	"github.com/stbridge/stb/pkg/deadletter"
)

// verdict is what a failed write means: its outcome, and for a permanent
// one the dead-letter reason.
type verdict struct {
	outcome conflation.Outcome
	reason  deadletter.Reason
	// schema marks a failure of the SQL or the schema itself (42xxx): no
	// bundle's fault, so the bundle is kept and retried like a transient
	// failure, but counted apart (stb_dispatcher_schema_errors_total, with
	// an alert) because retrying does not cure it; an operator must.
	schema bool
	// unclassified marks an error the dispatcher knows nothing of (not a
	// database error, not a timeout or a lost connection): a pgx encode
	// error, a plan's bug. Retried like a transient one, but only
	// Config.MaxUnclassifiedAttempts times, then dead-lettered
	// permanent_error; and a batch failing so is split, as it may be one
	// job's fault.
	unclassified bool
	// class names the failure in the aggregated retry log line.
	class string
}

// bySQLState maps SQLSTATE classes (the first two characters) to what a
// failure of that class means. Classes not listed are transient: a
// database problem must never lose a bundle, and a bundle that keeps
// failing shows in the retry metrics.
//
//   - 08 connection exception, 40 transaction rollback (serialization
//     failures, deadlocks), 53 insufficient resources (too many
//     connections, disk full), 57 operator intervention (admin shutdown,
//     query cancelled), 58 system error: transient.
//   - 22 data exception, 23 integrity violation: the data never fits.
//   - 54 program limit exceeded (an index entry too large): the same data
//     fails the same way every time.
//   - 42 syntax error or access rule violation (an undefined table or
//     column, a missing privilege): the schema or the SQL is wrong, not the
//     bundle. Kept and retried, reported not ready, counted, alerted.
var bySQLState = map[string]verdict{
	"22": {outcome: conflation.Permanent, reason: deadletter.DataException},
	"23": {outcome: conflation.Permanent, reason: deadletter.IntegrityViolation},
	"54": {outcome: conflation.Permanent, reason: deadletter.ProgramLimitExceeded},
	"42": {outcome: conflation.Transient, schema: true},
}

// classify decides what a failed write means. Errors that carry a
// dead-letter reason (deadletter.Reasoned, such as a handler's
// dbsyncers.PermanentError) are permanent with that reason; database
// errors go by their SQLSTATE class (bySQLState, the classes not listed
// transient); timeouts, cancellations, lost or refused connections and
// what pgconn says is safe to retry are transient; anything else is
// unclassified: transient for a bounded number of attempts.
func classify(err error) verdict {
	if err == nil {
		return verdict{outcome: conflation.Applied}
	}
	var reasoned deadletter.Reasoned
	if errors.As(err, &reasoned) {
		return verdict{outcome: conflation.Permanent, reason: reasoned.DeadLetterReason(), class: string(reasoned.DeadLetterReason())}
	}
	var pgErr *pgconn.PgError
	if errors.As(err, &pgErr) {
		class := "sqlstate " + pgErr.Code
		if len(pgErr.Code) >= 2 {
			if v, ok := bySQLState[pgErr.Code[:2]]; ok {
				v.class = class
				return v
			}
		}
		return verdict{outcome: conflation.Transient, class: class}
	}
	switch {
	case errors.Is(err, context.DeadlineExceeded) || pgconn.Timeout(err):
		return verdict{outcome: conflation.Transient, class: "timeout"}
	case errors.Is(err, context.Canceled):
		return verdict{outcome: conflation.Transient, class: "cancelled"}
	case connectionLost(err) || pgconn.SafeToRetry(err):
		return verdict{outcome: conflation.Transient, class: "connection"}
	}
	return verdict{outcome: conflation.Transient, unclassified: true, class: "unclassified"}
}

// connectionLost reports whether err says the connection to the database
// failed: could not be made, was refused, reset or closed mid-way.
func connectionLost(err error) bool {
	var connectErr *pgconn.ConnectError
	var netErr net.Error
	var errno syscall.Errno
	return errors.As(err, &connectErr) || errors.As(err, &netErr) || errors.As(err, &errno) ||
		errors.Is(err, io.EOF) || errors.Is(err, io.ErrUnexpectedEOF) || errors.Is(err, net.ErrClosed)
}

// Classify returns the outcome of a failed write: Applied for nil,
// Permanent when retrying cannot cure it, else Transient.
func Classify(err error) conflation.Outcome { return classify(err).outcome }

// Reason returns the dead-letter reason of a permanent error.
func Reason(err error) deadletter.Reason {
	if v := classify(err); v.reason != "" {
		return v.reason
	}
	return deadletter.PermanentError
}
