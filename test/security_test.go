package test

import (
	"io"
	"net/http"
	"net/url"
	"regexp"
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

// TestConsoleActionsRefuseForgedRequests: the console's actions change the
// database, so a page of another site must not be able to post them
// through an operator's browser: without the form token, or from another
// origin, or as a GET, nothing is done.
func TestConsoleActionsRefuseForgedRequests(t *testing.T) {
	e := newEnv(t, 1)
	e.produce(ceRecord("v1", "hub-victim", "managedclusters", "1.1", clusters("v1")))
	b := e.startBridge()
	e.waitFor("the hub written", time.Minute, func() bool { return e.clustersOf("hub-victim") == "v1" })

	_, page := fetch(t, b.adminURL+"/hub?name=hub-victim")
	m := regexp.MustCompile(`name="csrf" value="([0-9a-f]+)"`).FindStringSubmatch(page)
	if m == nil {
		t.Fatalf("no form token on the hub page:\n%s", page)
	}
	form := func(token string) url.Values {
		return url.Values{"csrf": {token}, "name": {"hub-victim"}, "confirm": {"hub-victim"}, "action": {"delete"}}
	}
	post := func(v url.Values, header map[string]string) int {
		req, err := http.NewRequest(http.MethodPost, b.adminURL+"/actions/hub", strings.NewReader(v.Encode()))
		if err != nil {
			t.Fatal(err)
		}
		req.Header.Set("Content-Type", "application/x-www-form-urlencoded")
		for k, val := range header {
			req.Header.Set(k, val)
		}
		resp, err := http.DefaultClient.Do(req)
		if err != nil {
			t.Fatal(err)
		}
		resp.Body.Close()
		return resp.StatusCode
	}
	for _, c := range []struct {
		name   string
		form   url.Values
		header map[string]string
	}{
		{"no token", form(""), nil},
		{"a wrong token", form(strings.Repeat("0", len(m[1]))), nil},
		{"another origin", form(m[1]), map[string]string{"Origin": "http://evil.example"}},
		{"a cross-site fetch", form(m[1]), map[string]string{"Sec-Fetch-Site": "cross-site"}},
	} {
		if code := post(c.form, c.header); code != http.StatusForbidden {
			t.Errorf("%s: %d, want 403", c.name, code)
		}
	}
	if code, _ := fetch(t, b.adminURL+"/actions/hub?csrf="+m[1]+"&name=hub-victim&confirm=hub-victim&action=delete"); code != http.StatusMethodNotAllowed {
		t.Errorf("GET of an action: %d, want 405", code)
	}
	if st := e.hubState("hub-victim"); st != "active" || e.clustersOf("hub-victim") != "v1" {
		t.Fatalf("a forged request changed the hub: state %q", st)
	}
	// The console's own form, from its own origin, works.
	if code := post(form(m[1]), map[string]string{"Origin": b.adminURL, "Sec-Fetch-Site": "same-origin"}); code != http.StatusOK || e.hubState("hub-victim") != "deleted" {
		t.Fatalf("the console's own delete: %d, state %q", code, e.hubState("hub-victim"))
	}
	b.stop(30 * time.Second)
}
