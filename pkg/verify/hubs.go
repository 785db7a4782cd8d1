package verify

import (
	"context"

	"github.com/jackc/pgx/v5"
)

const (
	heartbeatsSQL = `SELECT hub FROM status.hub_heartbeats`
	hubsSQL       = `SELECT name FROM status.hubs`
)

// heartbeats checks that every hub that sent heartbeats, and only those,
// has a row in status.hub_heartbeats.
func (v *verifier) heartbeats(ctx context.Context, db Querier) error {
	found, err := v.readHubs(ctx, db, heartbeatsSQL, "status.hub_heartbeats")
	if err != nil {
		return err
	}
	for _, hub := range v.hubNames {
		st := v.exp.Hubs[hub]
		switch {
		case st.Heartbeat && !found[hub]:
			v.report.add(Category{Kind: MissingHeartbeat}, hub, "no heartbeat")
		case !st.Heartbeat && found[hub]:
			v.report.add(Category{Kind: UnexpectedHeartbeat}, hub, "has a heartbeat, but sent none")
		}
	}
	return nil
}

// hubs checks that every hub the bridge wrote bundles of has a row in
// status.hubs: it is written with the first version row. Every hub that
// sent a heartbeat had one written.
func (v *verifier) hubs(ctx context.Context, db Querier) error {
	found, err := v.readHubs(ctx, db, hubsSQL, "status.hubs")
	if err != nil {
		return err
	}
	for _, hub := range v.hubNames {
		if st := v.exp.Hubs[hub]; (len(st.Versions) > 0 || st.Heartbeat) && !found[hub] {
			v.report.add(Category{Kind: MissingHub}, hub, "not in status.hubs")
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
