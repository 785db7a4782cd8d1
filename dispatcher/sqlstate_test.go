package dispatcher

import (
	"context"
	"fmt"
	"testing"

	"github.com/jackc/pgx/v5/pgconn"
	"github.com/prometheus/client_golang/prometheus/testutil"

	"github.com/stbridge/stb/conflation"
	"github.com/stbridge/stb/dbsyncers"
	"github.com/stbridge/stb/pkg/bundle"
	"github.com/stbridge/stb/pkg/db/dbtest"
	"github.com/stbridge/stb/pkg/deadletter"
)

// TestClassifySQLStates: what each SQLSTATE means. The classes the
// dispatcher knows to be the database's trouble (a lost connection, a
// serialization failure, resources, an operator, a lock timeout, a
// password or a database name being changed) are retried for ever; data
// that never fits is dead-lettered at once; a schema or SQL error is kept
// and counted apart. Every other class (an internal error, a feature not
// supported, a transaction in a bad state, a trigger's RAISE) is no
// database outage the dispatcher can wait out: like an error it cannot
// classify at all, it is tried MaxUnclassifiedAttempts times, then
// dead-lettered, where it used to be retried for ever with the partition's
// committed offset pinned behind it.
func TestClassifySQLStates(t *testing.T) {
	const (
		transient    = "transient"
		permanent    = "permanent"
		schema       = "schema"
		unclassified = "unclassified"
	)
	for _, tc := range []struct {
		code, name, want string
		reason           deadletter.Reason
	}{
		{"08006", "connection failure", transient, ""},
		{"08P01", "protocol violation", transient, ""},
		{"40001", "serialization failure", transient, ""},
		{"40P01", "deadlock detected", transient, ""},
		{"53100", "disk full", transient, ""},
		{"53300", "too many connections", transient, ""},
		{"55P03", "lock not available (lock_timeout)", transient, ""},
		{"57014", "query canceled (statement_timeout)", transient, ""},
		{"57P01", "admin shutdown", transient, ""},
		{"57P03", "cannot connect now (starting up)", transient, ""},
		{"58030", "io error", transient, ""},
		{"28P01", "invalid password (a rotated secret)", transient, ""},
		{"3D000", "invalid catalog name (database being restored)", transient, ""},
		{"25006", "read-only transaction (a standby after failover)", transient, ""},
		{"25P03", "idle in transaction session timeout", transient, ""},
		{"72000", "snapshot too old", transient, ""},
		{"22012", "division by zero", permanent, deadletter.DataException},
		{"22021", "invalid byte sequence", permanent, deadletter.DataException},
		{"23505", "unique violation", permanent, deadletter.IntegrityViolation},
		{"54000", "program limit exceeded", permanent, deadletter.ProgramLimitExceeded},
		{"42P01", "undefined table", schema, ""},
		{"42501", "insufficient privilege", schema, ""},
		{"3F000", "invalid schema name", schema, ""},
		{"XX000", "internal error", unclassified, ""},
		{"XX001", "data corrupted", unclassified, ""},
		{"0A000", "feature not supported", unclassified, ""},
		{"25P02", "in failed SQL transaction", unclassified, ""},
		{"25001", "active SQL transaction", unclassified, ""},
		{"P0001", "raise_exception from a trigger", unclassified, ""},
		{"P0004", "assert failure", unclassified, ""},
		{"21000", "cardinality violation", unclassified, ""},
		{"44000", "with check option violation", unclassified, ""},
		{"HV000", "foreign data wrapper error", unclassified, ""},
		{"ZZ123", "a class no PostgreSQL defines", unclassified, ""},
		{"X", "a code too short to have a class", unclassified, ""},
		{"", "no code", unclassified, ""},
	} {
		t.Run(tc.code+" "+tc.name, func(t *testing.T) {
			v := classify(fmt.Errorf("exec: %w", &pgconn.PgError{Code: tc.code, Message: tc.name}))
			var got string
			switch {
			case v.outcome == conflation.Permanent:
				got = permanent
			case v.outcome == conflation.Transient && v.schema && !v.unclassified:
				got = schema
			case v.outcome == conflation.Transient && v.unclassified && !v.schema:
				got = unclassified
			case v.outcome == conflation.Transient && !v.schema && !v.unclassified:
				got = transient
			default:
				got = fmt.Sprintf("%+v", v)
			}
			if got != tc.want {
				t.Errorf("SQLSTATE %q (%s): %s, want %s", tc.code, tc.name, got, tc.want)
			}
			if v.reason != tc.reason {
				t.Errorf("SQLSTATE %q (%s): reason %q, want %q", tc.code, tc.name, v.reason, tc.reason)
			}
			if want := "sqlstate " + tc.code; v.class != want {
				t.Errorf("SQLSTATE %q: retry log class %q, want %q", tc.code, v.class, want)
			}
		})
	}
}

// TestUnknownSQLStateIsDeadLetteredAfterItsAttempts: a trigger that
// raises (SQLSTATE P0001, a class the dispatcher knows nothing of) on
// every write of one hub pinned that hub's partition for ever, retried as
// if the database were down. It is tried MaxUnclassifiedAttempts times,
// counted in stb_dispatcher_unclassified_errors_total, then dead-lettered
// permanent_error with the database's message, and the others are
// written.
func TestUnknownSQLStateIsDeadLetteredAfterItsAttempts(t *testing.T) {
	pool, _ := dbtest.New(t)
	ctx := context.Background()
	if _, err := pool.Exec(ctx, `
		CREATE FUNCTION stb.refuse_hub() RETURNS trigger LANGUAGE plpgsql AS $$
		BEGIN
			IF NEW.hub = 'hub-refused' THEN
				RAISE EXCEPTION 'a trigger refuses %', NEW.hub;
			END IF;
			RETURN NEW;
		END $$;
		CREATE TRIGGER refuse_hub BEFORE INSERT OR UPDATE ON stb.hub_heartbeats
			FOR EACH ROW EXECUTE FUNCTION stb.refuse_hub();`); err != nil {
		t.Fatal(err)
	}
	calls := 0
	s := writesRow("plain")
	write := s.Plan
	s.Plan = func(bs []*bundle.Bundle) (dbsyncers.Write, error) {
		if bs[0].Hub == "hub-refused" {
			calls++ // one worker: no race
		}
		return write(bs)
	}
	cfg := DefaultConfig(1)
	cfg.MaxUnclassifiedAttempts = 3
	cfg.BatchWait = 0
	d := runUntilReleased(t, pool, cfg, map[string]string{"hub-refused": "plain", "hub-ok": "plain"}, s)
	if calls < 3 || calls > 4 { // a batch with hub-ok first, split, then alone
		t.Errorf("the refused write was planned %d times, want 3 (4 with the batch it was first part of)", calls)
	}
	if n := testutil.ToFloat64(d.metrics.unclassified); n != 3 {
		t.Errorf("stb_dispatcher_unclassified_errors_total = %v, want 3", n)
	}
	if n := testutil.ToFloat64(d.metrics.dead.WithLabelValues("plain", string(deadletter.PermanentError))); n != 1 {
		t.Errorf("%v dead letters of plain with permanent_error, want 1", n)
	}
	var reason, msg string
	if err := pool.QueryRow(ctx, `SELECT reason, error FROM stb.dead_letters WHERE hub = 'hub-refused'`).Scan(&reason, &msg); err != nil || reason != string(deadletter.PermanentError) {
		t.Fatalf("dead letter %q (%v), want permanent_error", reason, err)
	}
	t.Logf("dead letter: %s", msg)
	var ok int
	if err := pool.QueryRow(ctx, `SELECT count(*) FROM stb.hub_heartbeats WHERE hub = 'hub-ok'`).Scan(&ok); err != nil || ok != 1 {
		t.Fatalf("hub-ok written %d times (%v), want 1", ok, err)
	}
}
