package bridge

import (
	"net/http"
	"net/http/httptest"
	"strings"
	"testing"

	"github.com/prometheus/client_golang/prometheus"
)

// The public listener (--http-addr, all interfaces in a pod) serves
// metrics and probes and nothing else: /debug/pprof/cmdline there
// returned the whole command line, database password and sasl.password
// included.
func TestPublicListenerServesOnlyMetricsAndProbes(t *testing.T) {
	b := &Bridge{registry: prometheus.NewRegistry()}
	h := b.publicRoutes()
	get := func(path string) (int, string) {
		rec := httptest.NewRecorder()
		h.ServeHTTP(rec, httptest.NewRequest(http.MethodGet, path, nil))
		return rec.Code, rec.Body.String()
	}
	if code, _ := get("/metrics"); code != http.StatusOK {
		t.Fatalf("/metrics: %d", code)
	}
	if code, body := get("/healthz"); code != http.StatusOK || strings.TrimSpace(body) != "ok" {
		t.Fatalf("/healthz: %d %q", code, body)
	}
	for _, path := range []string{"/", "/debug/units", "/debug/pprof/", "/debug/pprof/cmdline", "/debug/pprof/heap"} {
		if code, _ := get(path); code != http.StatusNotFound {
			t.Errorf("public %s: %d, want 404", path, code)
		}
	}
}

func TestAdminAddrMustDifferFromHTTPAddr(t *testing.T) {
	cfg := DefaultConfig()
	cfg.AdminAddr = cfg.HTTPAddr
	if err := cfg.Validate(); err == nil || !strings.Contains(err.Error(), "--admin-addr") {
		t.Fatalf("Validate: %v", err)
	}
}
