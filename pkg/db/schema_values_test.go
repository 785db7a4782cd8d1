package db_test

import (
	"fmt"
	"regexp"
	"slices"
	"strings"
	"testing"

	"github.com/jackc/pgx/v5"

	"github.com/stbridge/stb/dbsyncers"
	"github.com/stbridge/stb/dbsyncers/cne"
	"github.com/stbridge/stb/pkg/db"
	"github.com/stbridge/stb/pkg/db/dbtest"
	"github.com/stbridge/stb/pkg/deadletter"
)

type checkedColumn struct {
	column  string // schema.table.column
	goType  string
	values  []string
	dflt    string // the column default's value, when hasDflt
	hasDflt bool
}

// checkedColumns are the columns whose values a CHECK constraint lists,
// each with the Go type that is the one definition of those values, and
// the column's default where it has one. The migrations and the Go
// constants are written by hand; this table is what ties them together.
var checkedColumns = []checkedColumn{
	{"stb.hubs.state", "db.HubState", strs(db.AllHubStates), string(db.HubActive), true},
	{"stb.hub_requests.action", "db.HubAction", strs(db.AllHubActions), "", false},
	{"stb.dead_letters.replay_outcome", "deadletter.ReplayOutcome", storedOutcomes(), string(deadletter.NotReplayed), true},
	// STB's own wire format has no pending (README "Wire format").
	{"stb.compliance.compliance", "dbsyncers.ComplianceState", stbComplianceStates(), "", false},
	{"stb.cne_state.value_type", "cne.ValueType", strs(cne.AllValueTypes), "", false},
}

// TestSchemaValuesMatchGo checks, on a database the migrations built,
// that every CHECK constraint listing a column's values lists exactly the
// constants of its Go type, that the column's default is the one Go says,
// and that no such constraint is left without a Go type. A state added to
// Go and not to a migration (a write refused at run time) or to a
// migration and not to Go (a value the code never writes or reads as
// unknown) fails here.
func TestSchemaValuesMatchGo(t *testing.T) {
	pool, _ := dbtest.New(t)
	type check struct{ def, dflt string }
	checks := map[string]check{}
	rows, err := pool.Query(t.Context(), `
		SELECT n.nspname || '.' || r.relname || '.' || a.attname, pg_get_constraintdef(c.oid),
		       coalesce(pg_get_expr(d.adbin, d.adrelid), '')
		FROM pg_constraint c
		JOIN pg_class r ON r.oid = c.conrelid
		JOIN pg_namespace n ON n.oid = r.relnamespace
		JOIN pg_attribute a ON a.attrelid = c.conrelid AND a.attnum = c.conkey[1]
		LEFT JOIN pg_attrdef d ON d.adrelid = a.attrelid AND d.adnum = a.attnum
		WHERE c.contype = 'c' AND cardinality(c.conkey) = 1 AND n.nspname IN ('stb', 'work')
		ORDER BY 1`)
	if err != nil {
		t.Fatal(err)
	}
	var col, def, dflt string
	if _, err := pgx.ForEachRow(rows, []any{&col, &def, &dflt}, func() error {
		if _, dup := checks[col]; dup {
			return fmt.Errorf("%s: more than one CHECK constraint", col)
		}
		checks[col] = check{def, dflt}
		return nil
	}); err != nil {
		t.Fatal(err)
	}

	for _, c := range checkedColumns {
		t.Run(c.column, func(t *testing.T) {
			got, ok := checks[c.column]
			if !ok {
				t.Fatalf("no CHECK constraint on %s; want one listing %s's values %q", c.column, c.goType, c.values)
			}
			allowed, err := listedValues(got.def)
			if err != nil {
				t.Fatal(err)
			}
			if !slices.Equal(sorted(allowed), sorted(c.values)) {
				t.Errorf("%s allows %q (%s), but %s has %q", c.column, allowed, got.def, c.goType, c.values)
			}
			dflt, hasDflt := literal(got.dflt)
			if hasDflt != c.hasDflt || dflt != c.dflt {
				t.Errorf("%s defaults to %s, want %q", c.column, orNone(got.dflt), c.dflt)
			}
		})
	}
	for col, c := range checks {
		if _, err := listedValues(c.def); err != nil {
			continue // not a list of values (a range, a length)
		}
		if !slices.ContainsFunc(checkedColumns, func(cc checkedColumn) bool { return cc.column == col }) {
			t.Errorf("%s has a CHECK constraint listing values (%s) that no Go type is tied to: add it to checkedColumns", col, c.def)
		}
	}
}

// TestSchemaEnumsMatchGo checks that the global hub's compliance enum,
// which upstream's operator defines (1.schemas.sql: compliant,
// non_compliant, pending, unknown) and the global-hub handlers write, has
// exactly the states of dbsyncers.ComplianceState.
func TestSchemaEnumsMatchGo(t *testing.T) {
	pool, _ := dbtest.New(t)
	var labels []string
	if err := pool.QueryRow(t.Context(),
		`SELECT array_agg(enumlabel::text ORDER BY enumsortorder) FROM pg_enum WHERE enumtypid = 'local_status.compliance_type'::regtype`).Scan(&labels); err != nil {
		t.Fatal(err)
	}
	if want := stringers(dbsyncers.AllComplianceStates); !slices.Equal(sorted(labels), sorted(want)) {
		t.Errorf("local_status.compliance_type is %q, dbsyncers.ComplianceState has %q", labels, want)
	}
}

// stbComplianceStates are the states of STB's own compliance table.
func stbComplianceStates() []string {
	var out []string
	for _, s := range dbsyncers.AllComplianceStates {
		if s != dbsyncers.PendingCompliance {
			out = append(out, s.String())
		}
	}
	return out
}

// textLiteral matches one text literal of a constraint or a default as
// PostgreSQL prints them: 'active'::text.
var textLiteral = regexp.MustCompile(`'((?:[^']|'')*)'::text`)

// listedValues returns the values of a constraint PostgreSQL prints as
// CHECK ((col = ANY (ARRAY['a'::text, 'b'::text]))), which is how it
// keeps `col IN ('a', 'b')`.
func listedValues(def string) ([]string, error) {
	if !strings.Contains(def, "= ANY (ARRAY[") {
		return nil, fmt.Errorf("constraint %s does not list values", def)
	}
	var out []string
	for _, m := range textLiteral.FindAllStringSubmatch(def, -1) {
		out = append(out, strings.ReplaceAll(m[1], "''", "'"))
	}
	return out, nil
}

// literal returns the text of a default that is a text literal.
func literal(expr string) (string, bool) {
	m := textLiteral.FindStringSubmatch(expr)
	if m == nil || m[0] != expr {
		return "", false
	}
	return strings.ReplaceAll(m[1], "''", "'"), true
}

func strs[T ~string](vs []T) []string {
	out := make([]string, len(vs))
	for i, v := range vs {
		out[i] = string(v)
	}
	return out
}

func stringers[T fmt.Stringer](vs []T) []string {
	out := make([]string, len(vs))
	for i, v := range vs {
		out[i] = v.String()
	}
	return out
}

// storedOutcomes are the replay outcomes stb.dead_letters keeps: every
// one that is stored, and NotReplayed.
func storedOutcomes() []string {
	out := []string{string(deadletter.NotReplayed)}
	for _, o := range deadletter.ReplayOutcomes {
		if o.Stored() {
			out = append(out, string(o))
		}
	}
	return out
}

func sorted(s []string) []string { return slices.Sorted(slices.Values(s)) }

func orNone(s string) string {
	if s == "" {
		return "nothing"
	}
	return s
}
