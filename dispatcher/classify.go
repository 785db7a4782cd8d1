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
	// schema marks a failure of the SQL or the schema itself (42xxx, 3Fxxx): no
	// bundle's fault, so the bundle is kept and retried like a transient
	// failure, but counted apart (stb_dispatcher_schema_errors_total, with
	// an alert) because retrying does not cure it; an operator must.
	schema bool
	// unclassified marks an error the dispatcher knows nothing of (not a
	// timeout or a lost connection, nor a database error of a SQLSTATE
	// class it knows): a pgx encode error, a plan's bug, an internal error
	// of the database's, a trigger's RAISE. Retried like a transient one,
	// but only Config.MaxUnclassifiedAttempts times, then dead-lettered
	// permanent_error; and a batch failing so is split, as it may be one
	// job's fault.
	unclassified bool
	// class names the failure in the aggregated retry log line.
	class string
}

// bySQLState maps SQLSTATE classes (the first two characters), and a few
// whole codes of classes that mean something else otherwise
// (bySQLStateCode), to what a failure means. A class not listed is one the
// dispatcher knows nothing of (XX internal error, 0A feature not
// supported, 25 invalid transaction state, P0 a trigger's RAISE, 21, 44 …):
// like an error it cannot classify at all it is retried
// Config.MaxUnclassifiedAttempts times, then dead-lettered
// permanent_error, and counted (stb_dispatcher_unclassified_errors_total).
// Retrying it for ever pinned the partition's committed offset behind one
// bundle, which a bug of the database's or of a trigger's fails every
// time; franz-go likewise treats an error code it does not know as not
// retriable.
//
//   - 08 connection exception, 40 transaction rollback (serialization
//     failures, deadlocks), 53 insufficient resources (too many
//     connections, disk full), 55 object not in prerequisite state (a
//     lock_timeout), 57 operator intervention (admin shutdown, query
//     cancelled, starting up), 58 system error, 72 snapshot failure: the
//     database's trouble, transient, retried for ever.
//   - 28 invalid authorization (a password being rotated), 3D invalid
//     catalog name (the database being restored or renamed): what a
//     connection attempt fails with while an operator changes the
//     database; transient, retried for ever.
//   - 22 data exception, 23 integrity violation: the data never fits.
//   - 54 program limit exceeded (an index entry too large): the same data
//     fails the same way every time.
//   - 42 syntax error or access rule violation (an undefined table or
//     column, a missing privilege), 3F invalid schema name: the schema or
//     the SQL is wrong, not the bundle. Kept and retried, reported not
//     ready, counted, alerted.
var bySQLState = map[string]verdict{
	"08": {outcome: conflation.Transient},
	"28": {outcome: conflation.Transient},
	"3D": {outcome: conflation.Transient},
	"40": {outcome: conflation.Transient},
	"53": {outcome: conflation.Transient},
	"55": {outcome: conflation.Transient},
	"57": {outcome: conflation.Transient},
	"58": {outcome: conflation.Transient},
	"72": {outcome: conflation.Transient},
	"22": {outcome: conflation.Permanent, reason: deadletter.DataException},
	"23": {outcome: conflation.Permanent, reason: deadletter.IntegrityViolation},
	"54": {outcome: conflation.Permanent, reason: deadletter.ProgramLimitExceeded},
	"42": {outcome: conflation.Transient, schema: true},
	"3F": {outcome: conflation.Transient, schema: true},
}

// bySQLStateCode are the codes of classes not listed in bySQLState that
// are the database's trouble all the same: 25006 read_only_sql_transaction
// (a standby, or the primary demoted during a failover, until the pool
// reconnects to the new primary) and 25P03
// idle_in_transaction_session_timeout (the session was ended).
var bySQLStateCode = map[string]verdict{
	"25006": {outcome: conflation.Transient},
	"25P03": {outcome: conflation.Transient},
}

// unknownSQLState is the verdict of a SQLSTATE neither table lists.
var unknownSQLState = verdict{outcome: conflation.Transient, unclassified: true}

// classify decides what a failed write means. Errors that carry a
// dead-letter reason (deadletter.Reasoned, such as a handler's
// dbsyncers.PermanentError) are permanent with that reason; database
// errors go by their SQLSTATE (bySQLState, bySQLStateCode); timeouts,
// cancellations, lost or refused connections and what pgconn says is safe
// to retry are transient; anything else, a SQLSTATE of a class the tables
// do not list included, is unclassified: transient for a bounded number of
// attempts.
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
		v, ok := bySQLStateCode[pgErr.Code]
		if !ok && len(pgErr.Code) == 5 {
			v, ok = bySQLState[pgErr.Code[:2]]
		}
		if !ok {
			v = unknownSQLState
		}
		v.class = "sqlstate " + pgErr.Code
		return v
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
