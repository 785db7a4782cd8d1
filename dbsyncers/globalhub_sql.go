package dbsyncers

import (
	"bytes"
	"fmt"
	"strings"
)

// What the global-hub handlers share: they write the global hub's own
// tables (sql/002_globalhub.sql), as upstream's manager handlers do
// (stolostron/multicluster-global-hub manager/pkg/status/handlers), never
// the tables of STB's own wire format (stb.managed_clusters,
// stb.compliance, stb.hub_heartbeats). Only managedclustermigration, which
// upstream's manager keeps in memory, has a table of STB's own
// (stb.cluster_migrations).

// nowUTC is the time the handlers write into the columns they set
// themselves (updated_at, deleted_at, last_timestamp, created_at on
// insert). The global hub's columns are `timestamp without time zone` and
// upstream's manager writes UTC into them; now() alone would be cast with
// the session's time zone.
const nowUTC = `(now() AT TIME ZONE 'UTC')`

// ensurePartitionsSQL makes sure that the month of every created_at of
// the rows a statement of the same batch inserts has its partition of $1
// (stb.ensure_month_partitions, sql/002_globalhub.sql): $2 are the
// agent's createdAt as sent, read exactly as the inserts read them, so
// that an event of a month without a partition is stored, not lost or
// failing the batch. A month whose partition exists costs a catalog
// lookup.
const ensurePartitionsSQL = `
SELECT stb.ensure_month_partitions($1, ARRAY(SELECT (x::timestamptz AT TIME ZONE 'UTC') FROM unnest($2::text[]) AS x))`

// ensurePartitions is the statement that runs ensurePartitionsSQL for the
// partitioned table parent and the rows' createdAt.
func ensurePartitions(parent string, created []string) Statement {
	return Statement{What: "ensure the month partitions of " + parent, SQL: ensurePartitionsSQL, Args: []any{parent, created}}
}

// canonicalUUID returns s in the form PostgreSQL prints a uuid (lower
// case, 8-4-4-4-12 hex digits) and true, or false when s is not a UUID in
// that form (either case). Ids the global hub keys as uuid (cluster
// claims, policy uids, hub cluster ids) are compared as text before they
// reach the database (one row per key in a statement, resync lists), so
// they are lowered here.
func canonicalUUID(s string) (string, bool) {
	if len(s) != 36 {
		return "", false
	}
	for i := 0; i < len(s); i++ {
		c := s[i]
		switch i {
		case 8, 13, 18, 23:
			if c != '-' {
				return "", false
			}
			continue
		}
		switch {
		case '0' <= c && c <= '9', 'a' <= c && c <= 'f', 'A' <= c && c <= 'F':
		default:
			return "", false
		}
	}
	return strings.ToLower(s), true
}

// checkUUID returns s canonical, or an error saying that field, which the
// global hub stores in a uuid column, is not a UUID.
func checkUUID(field, s string) (string, error) {
	u, ok := canonicalUUID(s)
	if !ok {
		return "", fmt.Errorf("%s %q is not a UUID (the global hub's column is uuid)", field, truncateForError(s))
	}
	return u, nil
}

// truncateForError shortens s for an error message (which may become a
// dead letter's reason).
func truncateForError(s string) string {
	const limit = 80
	if len(s) <= limit {
		return s
	}
	return s[:limit] + "…"
}

// checkJSONText returns an error if the JSON value raw, stored as jsonb,
// holds the escape \u0000, which jsonb cannot store (SQLSTATE 22P05): a
// bad_payload dead letter when decoded instead of a failing transaction
// (see checkName). An escaped backslash followed by "u0000"
// is refused too; no Kubernetes object needs one.
func checkJSONText(field string, raw []byte) error {
	if bytes.Contains(raw, []byte(`\u0000`)) {
		return fmt.Errorf("%s contains \\u0000, which jsonb cannot store", field)
	}
	return nil
}
