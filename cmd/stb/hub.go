package main

import (
	"context"
	"fmt"

	"github.com/stbridge/stb/cmd/stb/internal/bridge"
	"github.com/stbridge/stb/dbsyncers"
	"github.com/stbridge/stb/pkg/db"
)

const hubUsage = `usage: stb hub delete|reset NAME [--database-url URL]
  delete removes every row of the hub and leaves tombstones, so that its bundles still in Kafka
         cannot bring it back; a newer incarnation of the hub comes back cleanly
  reset  removes every row of the hub and its stored versions, for a hub rebuilt from scratch
         whose incarnation went backwards: its next bundles apply whatever their version
Both take effect while bridges run (they drop what they hold of the hub) and are idempotent.`

func hubCmd(ctx context.Context, args []string) error {
	if len(args) < 2 || (args[0] != "delete" && args[0] != "reset") {
		return fmt.Errorf("%s", hubUsage)
	}
	action, hub := db.HubAction(args[0]), args[1]
	fs := newFlagSet("hub "+args[0], "Delete or reset a hub while the bridges run.")
	url := fs.String("database-url", bridge.DefaultDatabaseURL, "PostgreSQL URL")
	if err := parseFlags(fs, args[2:]); err != nil {
		return err
	}
	pool, err := db.Connect(ctx, *url, 1)
	if err != nil {
		return err
	}
	defer pool.Close()
	res, err := db.ApplyHubRequest(ctx, pool, db.HubRequest{Hub: hub, Action: action, RequestedBy: "stb hub " + args[0], Types: dbsyncers.AllTypeNames()})
	if err != nil {
		return err
	}
	fmt.Println(res.Describe(hub, action))
	return nil
}
