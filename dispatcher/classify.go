package dispatcher

import (
	"context"
	"errors"
	"net"

	"github.com/jackc/pgx/v5/pgconn"

	"github.com/stbridge/stb/conflation"
	"github.com/stbridge/stb/dbsyncers"
)

// Classify decides whether a failed write may succeed later. Transient:
// lost or refused connections, timeouts, serialization failures and
// deadlocks (40xxx), too many connections (53300), admin shutdown and other
// operator intervention (57xxx), insufficient resources (53xxx), and
// anything pgconn says is safe to retry. Permanent: data exceptions (22xxx),
// integrity violations (23xxx), program limits such as an index entry too
// large (54xxx: the same data fails the same way every time), and payloads
// a handler rejects. Unknown
// errors count as transient: a database problem must never lose a bundle,
// and a bundle that keeps failing is visible in the retry metrics.
func Classify(err error) conflation.Outcome {
	if err == nil {
		return conflation.Applied
	}
	var perm *dbsyncers.PermanentError
	if errors.As(err, &perm) {
		return conflation.Permanent
	}
	var pgErr *pgconn.PgError
	if errors.As(err, &pgErr) {
		switch class(pgErr) {
		case "22", "23", "54":
			return conflation.Permanent
		}
		return conflation.Transient
	}
	if pgconn.SafeToRetry(err) || pgconn.Timeout(err) {
		return conflation.Transient
	}
	var netErr net.Error
	if errors.As(err, &netErr) || errors.Is(err, context.DeadlineExceeded) {
		return conflation.Transient
	}
	return conflation.Transient
}

// Reason returns the dead-letter reason of a permanent error.
func Reason(err error) string {
	var perm *dbsyncers.PermanentError
	if errors.As(err, &perm) && perm.Reason != "" {
		return perm.Reason
	}
	var pgErr *pgconn.PgError
	if errors.As(err, &pgErr) {
		switch class(pgErr) {
		case "22":
			return "data_exception"
		case "23":
			return "integrity_violation"
		case "54":
			return "program_limit_exceeded"
		}
	}
	return "permanent_error"
}

// class returns the two-character SQLSTATE class.
func class(e *pgconn.PgError) string {
	if len(e.Code) < 2 {
		return ""
	}
	return e.Code[:2]
}
