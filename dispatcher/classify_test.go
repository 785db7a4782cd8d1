package dispatcher

import (
	"context"
	"errors"
	"fmt"
	"io"
	"testing"

	"github.com/jackc/pgx/v5/pgconn"

	"github.com/stbridge/stb/conflation"
	"github.com/stbridge/stb/dbsyncers"
)

func TestClassify(t *testing.T) {
	pg := func(code string) error { return fmt.Errorf("exec: %w", &pgconn.PgError{Code: code}) }
	cases := []struct {
		name   string
		err    error
		want   conflation.Outcome
		reason string
	}{
		{"nil", nil, conflation.Applied, ""},
		{"serialization failure", pg("40001"), conflation.Transient, ""},
		{"deadlock", pg("40P01"), conflation.Transient, ""},
		{"too many connections", pg("53300"), conflation.Transient, ""},
		{"admin shutdown", pg("57P01"), conflation.Transient, ""},
		{"division by zero", pg("22012"), conflation.Permanent, "data_exception"},
		{"invalid text", pg("22P02"), conflation.Permanent, "data_exception"},
		{"unique violation", pg("23505"), conflation.Permanent, "integrity_violation"},
		{"index row too large", pg("54000"), conflation.Permanent, "program_limit_exceeded"},
		{"bad payload", &dbsyncers.PermanentError{Reason: "bad_payload", Err: errors.New("x")}, conflation.Permanent, "bad_payload"},
		{"timeout", context.DeadlineExceeded, conflation.Transient, ""},
		{"connection lost", fmt.Errorf("read: %w", io.ErrUnexpectedEOF), conflation.Transient, ""},
	}
	for _, tc := range cases {
		t.Run(tc.name, func(t *testing.T) {
			if got := Classify(tc.err); got != tc.want {
				t.Fatalf("Classify = %v, want %v", got, tc.want)
			}
			if tc.want == conflation.Permanent {
				if got := Reason(tc.err); got != tc.reason {
					t.Fatalf("Reason = %q, want %q", got, tc.reason)
				}
			}
		})
	}
}
