package main

import (
	"context"
	"flag"
	"fmt"
	"strings"

	"github.com/stbridge/stb/internal/profiles"
	"github.com/stbridge/stb/pkg/db"
)

const hubUsage = `usage: stb hub delete|reset NAME [--database-url URL]
  delete removes every row of the hub and leaves tombstones, so that its bundles still in Kafka
         cannot bring it back; a newer incarnation of the hub comes back cleanly. A cluster of a
         status family (work) gets no tombstone: its rows go, and its next status brings it back
  reset  removes every row of the hub and its stored versions, for a hub rebuilt from scratch
         whose incarnation went backwards: its next bundles apply whatever their version
Both take effect while bridges run (they drop what they hold of the hub) and are idempotent.`

func hubCmd(ctx context.Context, args []string) error {
	if len(args) > 0 && isHelp(args[0]) {
		fmt.Println(hubUsage)
		return flag.ErrHelp
	}
	if len(args) < 1 || (args[0] != "delete" && args[0] != "reset") {
		return fmt.Errorf("%s", hubUsage)
	}
	action := db.HubAction(args[0])
	fs := newFlagSet("hub "+args[0]+" NAME", "Delete or reset a hub while the bridges run.\n\n"+hubUsage)
	url := fs.String("database-url", db.DefaultURL, "PostgreSQL URL")
	// Flags may come before NAME and after it; --help anywhere prints the
	// usage and touches nothing (it used to delete a hub named "--help").
	if err := parseArgs(fs, args[1:]); err != nil {
		return err
	}
	if fs.NArg() == 0 {
		return fmt.Errorf("no hub named\n%s", hubUsage)
	}
	hub := fs.Arg(0)
	if strings.HasPrefix(hub, "-") {
		return fmt.Errorf("%q is not a hub name (names do not start with '-')\n%s", hub, hubUsage)
	}
	if err := parseFlags(fs, fs.Args()[1:]); err != nil {
		return err
	}
	pool, err := db.Connect(ctx, *url, 1)
	if err != nil {
		return err
	}
	defer pool.Close()
	scope := profiles.HubScope()
	switch known, err := db.HubKnown(ctx, pool, hub, scope); {
	case err != nil:
		return err
	case !known:
		return fmt.Errorf("%w %q: the database holds nothing of it (no row in stb.hubs, no stored version, no row of its tables); "+
			"nothing was %s — check the name (the console's hub list, or SELECT hub FROM stb.hubs)", db.ErrUnknownHub, hub, doneWord(action))
	}
	res, err := db.ApplyHubRequest(ctx, pool, db.HubRequest{Hub: hub, Action: action, RequestedBy: "stb hub " + args[0],
		Scope: scope})
	if err != nil {
		return err
	}
	fmt.Println(res.Describe(hub, action))
	return nil
}

// doneWord is action in the past tense.
func doneWord(action db.HubAction) string {
	if action == db.ResetHub {
		return "reset"
	}
	return "deleted"
}

// isHelp reports whether arg asks for a command's usage.
func isHelp(arg string) bool {
	switch arg {
	case "help", "-h", "-help", "--help":
		return true
	}
	return false
}
