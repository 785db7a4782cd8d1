package bridge

import (
	"context"
	"fmt"
	"net"
	"strings"
	"testing"
	"time"

	"github.com/jackc/pgx/v5/pgxpool"
	"go.uber.org/zap"
	"go.uber.org/zap/zaptest/observer"

	"github.com/stbridge/stb/pkg/committer"
)

type noPartitions struct{ err error }

func (noPartitions) Partitions() []*committer.Partition { return nil }
func (n noPartitions) Err() error                       { return n.err }

type failing struct{ err error }

func (f failing) Err() error { return f.err }

// TestReadinessOfAHungDatabase: /readyz (the public listener) printed the
// pgx error of its ping, host, user and database included, and waited 2 s
// for it. A database that accepts connections and then answers nothing
// must make the check fail within readyPingTimeout, saying what is wrong
// without connection details; the log gets the error, password redacted.
func TestReadinessOfAHungDatabase(t *testing.T) {
	ln, err := net.Listen("tcp", "127.0.0.1:0")
	if err != nil {
		t.Fatal(err)
	}
	t.Cleanup(func() { _ = ln.Close() })
	go func() {
		for {
			c, err := ln.Accept()
			if err != nil {
				return
			}
			t.Cleanup(func() { _ = c.Close() }) // held open, never answered
		}
	}()
	url := "postgres://stbuser:s3cret@" + ln.Addr().String() + "/stbdb?sslmode=disable"
	pool, err := pgxpool.New(context.Background(), url) // connects lazily
	if err != nil {
		t.Fatal(err)
	}
	t.Cleanup(pool.Close)
	core, logs := observer.New(zap.WarnLevel)
	r := &readiness{pool: pool, committer: noPartitions{}, dispatcher: failing{}, databaseURL: url, logger: zap.New(core)}

	start := time.Now()
	problems := r.Problems(context.Background())
	took := time.Since(start)
	if took > readyPingTimeout+500*time.Millisecond {
		t.Errorf("the readiness check took %v on a hung database, want about %v", took, readyPingTimeout)
	}
	text := strings.Join(problems, "\n")
	if !strings.Contains(text, "database unreachable") {
		t.Errorf("problems %q do not say the database is unreachable", text)
	}
	for _, detail := range []string{ln.Addr().String(), "127.0.0.1", "stbuser", "stbdb", "s3cret"} {
		if strings.Contains(text, detail) {
			t.Errorf("problems show the connection detail %q: %q", detail, text)
		}
	}
	if logs.Len() != 1 {
		t.Fatalf("%d log lines, want the one saying why not ready", logs.Len())
	}
	logged := logs.All()[0].ContextMap()
	t.Logf("logged: %v", logged["errors"])
	if s := fmt.Sprint(logged["errors"]); strings.Contains(s, "s3cret") || !strings.Contains(s, "database unreachable") {
		t.Errorf("logged errors %s: want the ping's error without the password", s)
	}
	r.Problems(context.Background())
	if logs.Len() != 1 {
		t.Errorf("the same problems logged again: %d lines", logs.Len())
	}
}
