package db

import (
	"errors"
	"net/url"
	"strings"
	"testing"
)

func TestRedactURL(t *testing.T) {
	tests := []struct {
		name, in, want string
	}{
		{"no password", "postgres://postgres@127.0.0.1:5432/postgres?sslmode=disable",
			"postgres://postgres@127.0.0.1:5432/postgres?sslmode=disable"},
		{"userinfo password", "postgres://stb:s3cret@db:5432/stb",
			"postgres://stb:xxxxx@db:5432/stb"},
		{"escaped password", "postgresql://stb:p%40ss%2Fw@db/stb",
			"postgresql://stb:xxxxx@db/stb"},
		{"query password", "postgres://db/stb?user=stb&password=s3cret&sslmode=require",
			"postgres://db/stb?password=xxxxx&sslmode=require&user=stb"},
		{"unparsable url", "postgres://stb:s3cret@db:notaport/stb",
			"postgres://stb:xxxxx@db:notaport/stb"},
		{"unparsable url, @ in password", "postgres://stb:s3@cret@db:bad/stb",
			"postgres://stb:xxxxx@db:bad/stb"},
		{"keyword/value", "host=db user=stb password=s3cret dbname=stb",
			"host=db user=stb password=xxxxx dbname=stb"},
		{"keyword/value quoted", "host=db password='s3 cret' sslpassword=k3y",
			"host=db password=xxxxx sslpassword=xxxxx"},
		{"keyword/value spaced", "host=db password = s3cret",
			"host=db password = xxxxx"},
	}
	for _, tt := range tests {
		t.Run(tt.name, func(t *testing.T) {
			got := RedactURL(tt.in)
			if got != tt.want {
				t.Errorf("RedactURL(%q) = %q, want %q", tt.in, got, tt.want)
			}
			for _, secret := range []string{"s3cret", "s3 cret", "k3y", "p@ss", "p%40ss"} {
				if strings.Contains(got, secret) {
					t.Errorf("RedactURL(%q) = %q still holds %q", tt.in, got, secret)
				}
			}
		})
	}
}

func TestRedactErrorKeepsChain(t *testing.T) {
	password := "hunter2"
	conn := "postgres://stb:" + password + "@db:bad/stb" // the port is invalid on purpose
	_, parseErr := url.Parse(conn)
	if parseErr == nil || !strings.Contains(parseErr.Error(), "hunter2") {
		t.Fatalf("precondition: expected url.Parse to quote the password, got %v", parseErr)
	}
	err := RedactError(parseErr, conn)
	if strings.Contains(err.Error(), "hunter2") {
		t.Errorf("RedactError text %q holds the password", err)
	}
	var ue *url.Error
	if !errors.As(err, &ue) {
		t.Errorf("errors.As(*url.Error) = false; want the original error reachable")
	}
	if RedactError(nil, conn) != nil {
		t.Errorf("RedactError(nil) != nil")
	}
}
