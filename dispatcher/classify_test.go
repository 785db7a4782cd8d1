package dispatcher

import (
	"context"
	"errors"
	"fmt"
	"io"
	"net"
	"syscall"
	"testing"

	"github.com/jackc/pgx/v5/pgconn"

	"github.com/stbridge/stb/conflation"
	"github.com/stbridge/stb/dbsyncers"
	"github.com/stbridge/stb/pkg/deadletter"
)

// reasoned is an error that carries its dead-letter reason, as errors of
// other packages may: the dispatcher goes by the behaviour, not the type.
type reasoned deadletter.Reason

func (r reasoned) Error() string                       { return "reasoned: " + string(r) }
func (r reasoned) DeadLetterReason() deadletter.Reason { return deadletter.Reason(r) }

func TestClassify(t *testing.T) {
	pg := func(code string) error { return fmt.Errorf("exec: %w", &pgconn.PgError{Code: code}) }
	cases := []struct {
		name   string
		err    error
		want   conflation.Outcome
		reason deadletter.Reason
		schema bool
	}{
		{"nil", nil, conflation.Applied, "", false},
		{"serialization failure", pg("40001"), conflation.Transient, "", false},
		{"deadlock", pg("40P01"), conflation.Transient, "", false},
		{"too many connections", pg("53300"), conflation.Transient, "", false},
		{"admin shutdown", pg("57P01"), conflation.Transient, "", false},
		{"division by zero", pg("22012"), conflation.Permanent, "data_exception", false},
		{"invalid text", pg("22P02"), conflation.Permanent, "data_exception", false},
		{"unique violation", pg("23505"), conflation.Permanent, "integrity_violation", false},
		{"index row too large", pg("54000"), conflation.Permanent, "program_limit_exceeded", false},
		{"bad payload", &dbsyncers.PermanentError{Reason: "bad_payload", Err: errors.New("x")}, conflation.Permanent, "bad_payload", false},
		{"timeout", context.DeadlineExceeded, conflation.Transient, "", false},
		{"connection lost", fmt.Errorf("read: %w", io.ErrUnexpectedEOF), conflation.Transient, "", false},
		// A schema or SQL error is not the bundle's fault: kept, retried,
		// counted apart.
		{"undefined table", pg("42P01"), conflation.Transient, "", true},
		{"undefined column", pg("42703"), conflation.Transient, "", true},
		{"insufficient privilege", pg("42501"), conflation.Transient, "", true},
		{"reasoned error of another package", reasoned("stale_base"), conflation.Permanent, "stale_base", false},
		{"connection refused", &net.OpError{Op: "dial", Net: "tcp", Err: syscall.ECONNREFUSED}, conflation.Transient, "", false},
		{"connection reset", fmt.Errorf("write: %w", syscall.ECONNRESET), conflation.Transient, "", false},
		{"closed", fmt.Errorf("read: %w", net.ErrClosed), conflation.Transient, "", false},
		{"cancelled", context.Canceled, conflation.Transient, "", false},
		{"unknown SQLSTATE class", pg("XX000"), conflation.Transient, "", false},
	}
	for _, tc := range cases {
		t.Run(tc.name, func(t *testing.T) {
			if got := Classify(tc.err); got != tc.want {
				t.Fatalf("Classify = %v, want %v", got, tc.want)
			}
			if got := classify(tc.err).schema; got != tc.schema {
				t.Fatalf("schema = %v, want %v", got, tc.schema)
			}
			if tc.want == conflation.Permanent {
				if got := Reason(tc.err); got != tc.reason {
					t.Fatalf("Reason = %q, want %q", got, tc.reason)
				}
			}
		})
	}
}

// An error the dispatcher knows nothing of (pgx's encode errors are plain
// errors; a plan's bug) is transient but unclassified: retried
// MaxUnclassifiedAttempts times, then dead-lettered, where it used to be
// retried for ever with the partition's offset pinned behind it.
func TestClassifyUnclassified(t *testing.T) {
	for _, err := range []error{
		errors.New("failed to encode args[1]: unable to encode 1.5 into binary format for int8"),
		fmt.Errorf("plan: %w", errors.New("a bug")),
	} {
		v := classify(err)
		if v.outcome != conflation.Transient || !v.unclassified {
			t.Errorf("%v: outcome %v, unclassified %v; want transient, unclassified", err, v.outcome, v.unclassified)
		}
	}
	for _, err := range []error{context.DeadlineExceeded, io.EOF, fmt.Errorf("x: %w", &pgconn.PgError{Code: "40001"})} {
		if classify(err).unclassified {
			t.Errorf("%v is classified, not unclassified", err)
		}
	}
}
