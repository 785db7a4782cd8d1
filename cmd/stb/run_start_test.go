package main

import (
	"context"
	"io"
	"net"
	"net/http"
	"strings"
	"testing"
	"time"

	"github.com/jackc/pgx/v5"

	"github.com/stbridge/stb/pkg/db/dbtest"
)

// unreachableDB is a database URL where nothing listens.
const unreachableDB = "postgres://stb:hunter2@127.0.0.1:1/stb?connect_timeout=1"

// TestRunWaitsForTheDatabase: a database unreachable at start is waited
// for, with /healthz 200 and /readyz 503 saying why, instead of an exit
// (a CrashLoopBackOff); a stop while waiting is a clean exit.
func TestRunWaitsForTheDatabase(t *testing.T) {
	ln, err := net.Listen("tcp", "127.0.0.1:0")
	if err != nil {
		t.Fatal(err)
	}
	addr := ln.Addr().String()
	ln.Close()
	ctx, cancel := context.WithCancel(context.Background())
	defer cancel()
	done := make(chan error, 1)
	go func() {
		done <- runCmd(ctx, []string{"--database-url", unreachableDB, "--http-addr", addr, "--admin-addr", "",
			"--db-start-timeout", "0", "--log-level", "error"})
	}()
	get := func(path string) (int, string) {
		resp, err := http.Get("http://" + addr + path)
		if err != nil {
			return 0, err.Error()
		}
		defer resp.Body.Close()
		body, _ := io.ReadAll(resp.Body)
		return resp.StatusCode, string(body)
	}
	for {
		select {
		case err := <-done:
			t.Fatalf("stb run exited while its database was unreachable: %v", err)
		case <-time.After(50 * time.Millisecond):
		}
		code, body := get("/readyz")
		if code == 0 {
			continue // not listening yet
		}
		if code != http.StatusServiceUnavailable || !strings.Contains(body, "database unreachable, retrying since") || strings.Contains(body, "hunter2") {
			t.Errorf("/readyz while waiting: %d %q", code, body)
		}
		if code, body := get("/healthz"); code != http.StatusOK {
			t.Errorf("/healthz while waiting: %d %q", code, body)
		}
		break
	}
	cancel()
	if err := <-done; err != nil {
		t.Errorf("stopped while waiting for the database: %v, want a clean exit", err)
	}
}

// TestRunGivesUpOnTheDatabase: past --db-start-timeout the wait ends with
// an error naming the bound and the database, its password redacted.
func TestRunGivesUpOnTheDatabase(t *testing.T) {
	err := runCmd(context.Background(), []string{"--database-url", unreachableDB, "--http-addr", "", "--admin-addr", "",
		"--db-start-timeout", "1s", "--log-level", "error"})
	if err == nil || !strings.Contains(err.Error(), "--db-start-timeout") || !strings.Contains(err.Error(), "127.0.0.1:1") || strings.Contains(err.Error(), "hunter2") {
		t.Fatalf("after the bound: %v, want an error naming --db-start-timeout and the database", err)
	}
}

// TestRunChecksKafkaPropertiesBeforeMigrating: a property librdkafka does
// not know fails `stb run` before anything touches the database (the
// migrations ran first, then the consumer refused it).
func TestRunChecksKafkaPropertiesBeforeMigrating(t *testing.T) {
	url := dbtest.Empty(t)
	err := runCmd(context.Background(), []string{"--database-url", url, "--http-addr", "", "--admin-addr", "",
		"--kafka-property", "no.such.property=1", "--log-level", "error"})
	if err == nil || !strings.Contains(err.Error(), "no.such.property") {
		t.Fatalf("error %v, want one naming no.such.property", err)
	}
	conn, err := pgx.Connect(context.Background(), url)
	if err != nil {
		t.Fatal(err)
	}
	defer conn.Close(context.Background())
	var tables int
	if err := conn.QueryRow(context.Background(), "SELECT count(*) FROM pg_tables WHERE schemaname NOT IN ('pg_catalog', 'information_schema')").Scan(&tables); err != nil {
		t.Fatal(err)
	}
	if tables != 0 {
		t.Errorf("the database holds %d tables: it was migrated before the configuration was checked", tables)
	}
}
