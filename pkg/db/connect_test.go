package db_test

import (
	"context"
	"fmt"
	"strings"
	"testing"
	"time"

	"github.com/stbridge/stb/pkg/db"
	"github.com/stbridge/stb/pkg/db/dbtest"
)

func TestConnect(t *testing.T) {
	t.Parallel()
	u := dbtest.Empty(t)
	pool, err := db.Connect(t.Context(), u, 3)
	if err != nil {
		t.Fatalf("Connect: %v", err)
	}
	defer pool.Close()
	if got := pool.Config().MaxConns; got != 3 {
		t.Errorf("MaxConns = %d, want 3", got)
	}
	var one int
	if err := pool.QueryRow(t.Context(), "SELECT 1").Scan(&one); err != nil || one != 1 {
		t.Errorf("SELECT 1 = %d, %v", one, err)
	}
}

// TestConnectErrorsHidePassword checks the promise of the package doc:
// errors can be logged as they are, whatever is wrong with the URL.
func TestConnectErrorsHidePassword(t *testing.T) {
	t.Parallel()
	const secret = "Tr0ub4dor"
	tests := []struct {
		name     string
		url      string
		maxConns int32
		wantText string
	}{
		{"unparsable port", "postgres://stb:" + secret + "@127.0.0.1:notaport/stb", 4, "invalid database URL"},
		{"unknown setting", "postgres://stb:" + secret + "@127.0.0.1/stb?pool_max_conns=many", 4, "invalid database URL"},
		// Port 1 on the loopback refuses connections at once.
		{"unreachable server", "postgres://stb:" + secret + "@127.0.0.1:1/stb?connect_timeout=5", 4, "connect to"},
		{"keyword/value unreachable", "host=127.0.0.1 port=1 user=stb password=" + secret + " connect_timeout=5", 4, "connect to"},
		{"negative maxConns", "postgres://stb:" + secret + "@127.0.0.1/stb", -1, "maxConns"},
	}
	for _, tt := range tests {
		t.Run(tt.name, func(t *testing.T) {
			ctx, cancel := context.WithTimeout(t.Context(), 10*time.Second)
			defer cancel()
			pool, err := db.Connect(ctx, tt.url, tt.maxConns)
			if err == nil {
				pool.Close()
				t.Fatal("Connect succeeded, want an error")
			}
			if strings.Contains(err.Error(), secret) {
				t.Errorf("error leaks the password: %v", err)
			}
			if !strings.Contains(err.Error(), tt.wantText) {
				t.Errorf("error %q does not say %q", err, tt.wantText)
			}
		})
	}
}

// TestConnectNamesAWrongScheme: a typo in the scheme is named, with the
// URL's password redacted and its user and host intact, before anything
// is tried; pgconn alone reads such a URL as keyword/value pairs and masks
// "//user" as if it were a password.
func TestConnectNamesAWrongScheme(t *testing.T) {
	for _, u := range []string{
		"postgress://postgres@127.0.0.1:5432/postgres",
		"postgress://stb:s3cret@127.0.0.1:5432/postgres",
		"http://127.0.0.1:5432/postgres",
	} {
		_, err := db.Connect(context.Background(), u, 1)
		if err == nil {
			t.Fatalf("%s: connected", u)
		}
		msg := err.Error()
		scheme, _, _ := strings.Cut(u, "://")
		if !strings.Contains(msg, fmt.Sprintf("scheme %q", scheme)) || !strings.Contains(msg, "want postgres://") ||
			!strings.Contains(msg, "127.0.0.1:5432/postgres") || strings.Contains(msg, "s3cret") {
			t.Errorf("%s: %q, want the scheme named, what is wanted, the host kept and no password", u, msg)
		}
		if _, _, err := db.Migrate(context.Background(), u, nil); err == nil || !strings.Contains(err.Error(), "want postgres://") {
			t.Errorf("migrate %s: %v, want the scheme named", u, err)
		}
	}
	if err := db.CheckURL("host=127.0.0.1 dbname=postgres options='-c x=a://b'"); err != nil {
		t.Errorf("a keyword/value string is not a URL: %v", err)
	}
}
