// Command stb is the status transport bridge: it reads status bundles of
// many managed hubs from Kafka, conflates them per hub, and keeps
// PostgreSQL up to date with the latest state of every hub.
//
// Run "stb help" for the commands.
package main

import (
	"context"
	"errors"
	"flag"
	"fmt"
	"os"
	"os/signal"
	"syscall"
)

type command struct {
	name, synopsis string
	run            func(ctx context.Context, args []string) error
}

func commands() []command {
	return []command{
		{"run", "run the bridge: Kafka → conflation → PostgreSQL", runCmd},
		{"migrate", "apply the database migrations and exit", migrateCmd},
		{"kafka", "run an embedded Kafka broker (kfake) for local use", kafkaCmd},
		{"simulate", "publish bundles of simulated hubs and write the expected final state", simulateCmd},
		{"verify", "compare the database with the expected state written by simulate", verifyCmd},
		{"demo", "embedded Kafka + local Postgres + simulate + run + verify, with live progress", demoCmd},
		{"bench", "measure the bridge against its baseline and this machine's ceilings in named scenarios", benchCmd},
		{"hub", "hub delete|reset NAME: remove a hub while the bridges run", hubCmd},
		{"deadletters", "dead letters: list, replay (after fixing the cause), purge", deadLettersCmd},
		{"work", "work resync: ask work agents for the ManifestWork statuses that differ from the stored ones", workCmd},
		{"version", "print the version, commit, Go release and librdkafka of this build", versionCmd},
	}
}

func usage() {
	fmt.Fprintf(os.Stderr, "stb — the status transport bridge\n\nUsage: stb <command> [flags]\n\nCommands:\n")
	for _, c := range commands() {
		fmt.Fprintf(os.Stderr, "  %-9s %s\n", c.name, c.synopsis)
	}
	fmt.Fprintf(os.Stderr, "\nRun 'stb <command> --help' for a command's flags.\n")
}

func main() {
	if len(os.Args) < 2 || os.Args[1] == "help" || os.Args[1] == "-h" || os.Args[1] == "--help" {
		usage()
		if len(os.Args) < 2 {
			os.Exit(2)
		}
		return
	}
	name := os.Args[1]
	for _, c := range commands() {
		if c.name != name {
			continue
		}
		ctx, stop := signalContext()
		err := c.run(ctx, os.Args[2:])
		stop()
		if errors.Is(err, flag.ErrHelp) {
			return
		}
		if err != nil {
			var ex exitError
			if errors.As(err, &ex) {
				os.Exit(ex.code)
			}
			fmt.Fprintf(os.Stderr, "stb %s: %v\n", name, err)
			os.Exit(1)
		}
		return
	}
	fmt.Fprintf(os.Stderr, "stb: unknown command %q\n\n", name)
	usage()
	os.Exit(2)
}

// exitError ends the process with a code and no further message (the
// command already printed what went wrong).
type exitError struct{ code int }

func (e exitError) Error() string { return fmt.Sprintf("exit status %d", e.code) }

// signalContext is cancelled by the first SIGINT or SIGTERM, which starts a
// graceful shutdown; a second one exits at once.
func signalContext() (context.Context, func()) {
	ctx, cancel := context.WithCancel(context.Background())
	ch := make(chan os.Signal, 2)
	signal.Notify(ch, syscall.SIGINT, syscall.SIGTERM)
	done := make(chan struct{})
	go func() {
		select {
		case <-ch:
			cancel()
		case <-done:
			return
		}
		select {
		case s := <-ch:
			fmt.Fprintf(os.Stderr, "stb: second %v, exiting now\n", s)
			os.Exit(130)
		case <-done:
		}
	}()
	return ctx, func() {
		signal.Stop(ch)
		close(done)
		cancel()
	}
}
