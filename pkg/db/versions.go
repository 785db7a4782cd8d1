package db

import (
	"context"
	"fmt"
	"strconv"

	"github.com/jackc/pgx/v5"
	"github.com/jackc/pgx/v5/pgconn"

	"github.com/stbridge/stb/pkg/bundle"
)

// Querier is the one method LoadVersions needs; *pgxpool.Pool, *pgx.Conn
// and pgx.Tx all have it.
type Querier interface {
	Query(ctx context.Context, sql string, args ...any) (pgx.Rows, error)
}

// Execer is the one method MarkInactiveHubs needs; *pgxpool.Pool,
// *pgx.Conn and pgx.Tx all have it.
type Execer interface {
	Exec(ctx context.Context, sql string, args ...any) (pgconn.CommandTag, error)
}

// StoredVersion is the version of the last bundle of one type written for
// one hub, as recorded in stb.bundle_versions.
type StoredVersion struct {
	Hub     string
	Type    string
	Version bundle.Version
	// Origin is where the bundle was read from.
	Origin bundle.Origin
	// FamilyState is the state the bundle's family keeps of the hub and
	// type (stb.bundle_versions.family_state, a JSON value the family
	// encoded: bundle.Bundle.FamilyState), for the family to restore
	// (transport.Stateful); nil when the family keeps none.
	FamilyState []byte
}

// LoadVersions returns every stored version, ordered by hub and type. The
// bridge loads them into its conflation units at start-up so that bundles
// replayed from Kafka that were already written are recognised as stale.
//
// The columns are numeric(20,0) because versions are unsigned 64-bit; they
// are read as text and parsed, since no Go integer type pgx scans numeric
// into holds the upper half of the uint64 range.
func LoadVersions(ctx context.Context, q Querier) ([]StoredVersion, error) {
	return loadVersions(ctx, q, `
		SELECT `+versionColumns+`
		FROM stb.bundle_versions
		ORDER BY hub, bundle_type`)
}

// PartitionVersions returns every stored version of the hubs that have a
// bundle read from one of the given partitions (topics[i], partitions[i]),
// ordered by hub and type: what the bridge refreshes when Kafka assigns it
// partitions, inside the rebalance callback, so it reads only the hubs
// those partitions carry and not the whole table. A hub keyed to an
// assigned partition comes whole, with its rows of other origins
// (tombstones, rows written before origins were recorded).
func PartitionVersions(ctx context.Context, q Querier, topics []string, partitions []int32) ([]StoredVersion, error) {
	if len(topics) != len(partitions) {
		return nil, fmt.Errorf("db: %d topics for %d partitions", len(topics), len(partitions))
	}
	return loadVersions(ctx, q, `
		SELECT `+versionColumns+`
		FROM stb.bundle_versions
		WHERE hub IN (
			SELECT v.hub FROM stb.bundle_versions v
			JOIN unnest($1::text[], $2::integer[]) AS a(topic, p) ON v.topic = a.topic AND v."partition" = a.p)
		ORDER BY hub, bundle_type`, topics, partitions)
}

// versionColumns are the columns loadVersions scans, in its order.
const versionColumns = `hub, bundle_type, incarnation::text, generation::text, topic, "partition", "offset", family_state`

func loadVersions(ctx context.Context, q Querier, query string, args ...any) ([]StoredVersion, error) {
	rows, err := q.Query(ctx, query, args...)
	if err != nil {
		return nil, fmt.Errorf("db: load bundle versions: %w", err)
	}
	out, err := pgx.CollectRows(rows, func(row pgx.CollectableRow) (StoredVersion, error) {
		var (
			sv       StoredVersion
			inc, gen string
		)
		if err := row.Scan(&sv.Hub, &sv.Type, &inc, &gen, &sv.Origin.Topic, &sv.Origin.Partition, &sv.Origin.Offset, &sv.FamilyState); err != nil {
			return sv, err
		}
		if sv.Version.Incarnation, err = strconv.ParseUint(inc, 10, 64); err != nil {
			return sv, fmt.Errorf("hub %q type %q: incarnation: %w", sv.Hub, sv.Type, err)
		}
		if sv.Version.Generation, err = strconv.ParseUint(gen, 10, 64); err != nil {
			return sv, fmt.Errorf("hub %q type %q: generation: %w", sv.Hub, sv.Type, err)
		}
		return sv, nil
	})
	if err != nil {
		return nil, fmt.Errorf("db: load bundle versions: %w", err)
	}
	return out, nil
}

// LoadVersion returns the stored version of one bundle type of one hub,
// and false when none is stored: what a replay of a dead letter checks the
// letter's dependency against.
func LoadVersion(ctx context.Context, q Querier, hub, typ string) (StoredVersion, bool, error) {
	vs, err := loadVersions(ctx, q, `
		SELECT `+versionColumns+`
		FROM stb.bundle_versions
		WHERE hub = $1 AND bundle_type = $2`, hub, typ)
	if err != nil || len(vs) == 0 {
		return StoredVersion{}, false, err
	}
	return vs[0], true, nil
}
