package verify

import (
	"context"

	"github.com/jackc/pgx/v5"
)

const hubsSQL = `SELECT name FROM stb.hubs`

// heartbeatTable is a table of heartbeats, one row per hub, and the agent
// kind that writes it.
type heartbeatTable struct {
	table, sql string
	// globalHub: the global-hub agent's heartbeats are there (else those
	// of STB's own agent kinds).
	globalHub bool
}

var (
	stbHeartbeatTable = heartbeatTable{
		table: "stb.hub_heartbeats",
		sql:   `SELECT hub FROM stb.hub_heartbeats`,
	}
	// A row counts whatever its status: upstream's manager marks a hub
	// inactive when its heartbeats stop (and a hub delete does), and the
	// row stays.
	ghHeartbeatTable = heartbeatTable{
		table:     "status.leaf_hub_heartbeats",
		sql:       `SELECT leaf_hub_name FROM status.leaf_hub_heartbeats`,
		globalHub: true,
	}
)

// heartbeats checks that every hub that sent heartbeats, and only those,
// has a row in the table of heartbeats of its agent kind. A hub of STB's
// own agent kinds must have none in status.leaf_hub_heartbeats. The rows
// of stb.hub_heartbeats of a global-hub agent's hub are neither required
// nor a difference: that table is STB's own lifecycle bookkeeping (it
// times --hub-inactive-after), which the global-hub heartbeat may keep too.
func (v *verifier) heartbeats(t heartbeatTable) check {
	return func(ctx context.Context, db Querier) error {
		found, err := v.readHubs(ctx, db, t.sql, t.table)
		if err != nil {
			return err
		}
		switch {
		case t.globalHub == v.gh:
			for _, hub := range v.hubNames {
				st := v.exp.Hubs[hub]
				switch {
				case st.Heartbeat && !found[hub]:
					v.report.add(Category{Kind: MissingHeartbeat}, hub, "no heartbeat")
				case !st.Heartbeat && found[hub]:
					v.report.add(Category{Kind: UnexpectedHeartbeat}, hub, "has a heartbeat, but sent none")
				}
			}
		case t.globalHub:
			for _, hub := range v.hubNames {
				if found[hub] {
					v.report.add(Category{Kind: UnexpectedHeartbeat}, hub, "has a heartbeat in %s, which the hub's agent does not write", t.table)
				}
			}
		}
		return nil
	}
}

// hubs checks that every hub the bridge wrote bundles of has a row in
// stb.hubs: it is written with the first version row. Every hub that
// sent a heartbeat had one written.
func (v *verifier) hubs(ctx context.Context, db Querier) error {
	found, err := v.readHubs(ctx, db, hubsSQL, "stb.hubs")
	if err != nil {
		return err
	}
	for _, hub := range v.hubNames {
		if st := v.exp.Hubs[hub]; (len(st.Versions) > 0 || st.Heartbeat) && !found[hub] {
			v.report.add(Category{Kind: MissingHub}, hub, "not in stb.hubs")
		}
	}
	return nil
}

// readHubs runs a query returning hub names and returns the expected ones
// found, noting the others.
func (v *verifier) readHubs(ctx context.Context, db Querier, sql, table string) (map[string]bool, error) {
	rows, err := db.Query(ctx, sql)
	if err != nil {
		return nil, err
	}
	found := make(map[string]bool, len(v.exp.Hubs))
	var hub string
	_, err = pgx.ForEachRow(rows, []any{&hub}, func() error {
		if v.expected(hub, table) != nil {
			found[hub] = true
		}
		return nil
	})
	return found, err
}
