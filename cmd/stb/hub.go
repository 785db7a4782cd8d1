package main

import (
	"context"
	"fmt"

	"github.com/stbridge/stb/cmd/stb/internal/bridge"
	"github.com/stbridge/stb/pkg/db"
)

func hubCmd(ctx context.Context, args []string) error {
	if len(args) < 2 || args[0] != "reset" {
		return fmt.Errorf("usage: stb hub reset NAME [--database-url URL]\n  reset forgets the hub's stored bundle versions, for a hub rebuilt from scratch whose incarnation went backwards; stop the bridge first")
	}
	hub := args[1]
	fs := newFlagSet("hub reset", "Forget a hub's stored bundle versions.")
	url := fs.String("database-url", bridge.DefaultDatabaseURL, "PostgreSQL URL")
	if err := parseFlags(fs, args[2:]); err != nil {
		return err
	}
	pool, err := db.Connect(ctx, *url, 1)
	if err != nil {
		return err
	}
	defer pool.Close()
	n, err := db.ResetHub(ctx, pool, hub)
	if err != nil {
		return err
	}
	fmt.Printf("hub %q: %d stored versions forgotten\n", hub, n)
	return nil
}
