package test

import (
	"io"
	"net/http"
	"strings"
	"testing"
	"time"
)

// TestNoSecretOnAnyListenerOrLogLine runs a bridge whose command line holds
// a database password and Kafka credentials, as a production one does, and
// reads everything it exposes: its log, both listeners' pages. A security
// pass found the command line, secrets included, at
// /debug/pprof/cmdline on the default listener (all interfaces, no auth)
// and sasl.oauthbearer.config's clientSecret in the start-up log.
func TestNoSecretOnAnyListenerOrLogLine(t *testing.T) {
	e := newEnv(t, 2)
	exp := e.simulate("sec", "--hubs", "5", "--clusters", "3", "--generations", "3")
	secrets := []string{"db-topsecret-1", "oauth-topsecret-2", "sasl-topsecret-3", "key-topsecret-4"}
	dbURL := strings.Replace(e.dbURL, "postgres@", "postgres:"+secrets[0]+"@", 1)
	if dbURL == e.dbURL {
		t.Fatalf("cannot put a password into %s", e.dbURL)
	}
	b := e.startBridge("--database-url", dbURL,
		"--kafka-property", "sasl.oauthbearer.config=clientId=stb clientSecret="+secrets[1],
		"--kafka-property", "sasl.password="+secrets[2],
		"--kafka-property", "ssl.key.password="+secrets[3])
	e.waitVerified(exp, time.Minute)

	pages := map[string]string{}
	for _, p := range []struct{ base, path string }{
		{b.httpURL, "/metrics"}, {b.httpURL, "/healthz"}, {b.httpURL, "/readyz"},
		{b.adminURL, "/"}, {b.adminURL, "/debug/units"}, {b.adminURL, "/debug/pprof/"},
	} {
		code, body := fetch(t, p.base+p.path)
		if code != http.StatusOK {
			t.Errorf("%s%s: %d", p.base, p.path, code)
		}
		pages[p.base+p.path] = body
	}
	// Where the command line was: gone from both listeners, and the
	// console is not on the public one.
	for _, url := range []string{b.httpURL + "/debug/pprof/cmdline", b.adminURL + "/debug/pprof/cmdline",
		b.httpURL + "/", b.httpURL + "/debug/units", b.httpURL + "/debug/pprof/"} {
		if code, body := fetch(t, url); code != http.StatusNotFound {
			t.Errorf("%s: %d, want 404", url, code)
			pages[url] = body
		}
	}
	b.stop(30 * time.Second)
	pages["log"] = b.log.String()
	if !strings.Contains(pages["log"], "sasl.oauthbearer.config=***") {
		t.Errorf("the start-up log does not show the properties redacted:\n%s", tail(pages["log"], 5))
	}
	for where, text := range pages {
		for _, s := range secrets {
			if strings.Contains(text, s) {
				t.Errorf("%s shows the secret %s", where, s)
			}
		}
	}
}

func fetch(t *testing.T, url string) (int, string) {
	t.Helper()
	resp, err := faultsHTTP.Get(url)
	if err != nil {
		t.Fatalf("GET %s: %v", url, err)
	}
	defer resp.Body.Close()
	body, err := io.ReadAll(resp.Body)
	if err != nil {
		t.Fatalf("GET %s: %v", url, err)
	}
	return resp.StatusCode, string(body)
}
