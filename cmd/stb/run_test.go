package main

import (
	"context"
	"testing"
)

// A stop signal while the bridge is still starting (connecting to the
// database, migrating) is a clean exit: the process did what it was asked
// to. It used to exit 1 with "context canceled", which Kubernetes and the
// end-to-end suite count as a crash.
func TestRunStoppedWhileStartingExitsCleanly(t *testing.T) {
	ctx, cancel := context.WithCancel(context.Background())
	cancel()
	err := runCmd(ctx, []string{"--database-url", "postgres://stb@127.0.0.1:1/stb?connect_timeout=1",
		"--http-addr", "", "--log-level", "error"})
	if err != nil {
		t.Fatalf("stopped while starting: %v, want a clean exit", err)
	}
}

// Without a stop, the same failure to start is an error.
func TestRunFailingToStartIsAnError(t *testing.T) {
	err := runCmd(context.Background(), []string{"--database-url", "postgres://stb@127.0.0.1:1/stb?connect_timeout=1",
		"--http-addr", "", "--log-level", "error", "--db-start-timeout", "1s"})
	if err == nil {
		t.Fatal("a bridge that cannot reach its database started")
	}
}
