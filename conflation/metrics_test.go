package conflation

import (
	"errors"
	"strings"
	"testing"

	"github.com/prometheus/client_golang/prometheus"
	"github.com/prometheus/client_golang/prometheus/testutil"
)

func TestMetricsCountOutcomesAndLint(t *testing.T) {
	reg := prometheus.NewRegistry()
	f := newFixture(t)
	m, err := NewManager(Config{Types: policyTypes, Now: f.clock.Now, Registerer: reg})
	if err != nil {
		t.Fatal(err)
	}
	f.m = m
	f.insert("hub1", "heartbeat", v(1, 1), nil)
	f.insert("hub1", "heartbeat", v(1, 2), nil) // conflates 1.1
	f.insert("hub1", "heartbeat", v(1, 2), nil) // stale
	hb := m.metrics.types[0]
	for name, c := range map[string]struct {
		got  float64
		want float64
	}{
		"inserted":  {testutil.ToFloat64(hb.inserted), 2},
		"conflated": {testutil.ToFloat64(hb.conflated), 1},
		"stale":     {testutil.ToFloat64(hb.stale), 1},
	} {
		if c.got != c.want {
			t.Errorf("heartbeat %s = %v, want %v", name, c.got, c.want)
		}
	}
	want := `
# HELP stb_conflation_units Conflation units (hubs) known to the bridge.
# TYPE stb_conflation_units gauge
stb_conflation_units 1
# HELP stb_conflation_ready_queue_length Units waiting on the ready queue for a worker.
# TYPE stb_conflation_ready_queue_length gauge
stb_conflation_ready_queue_length 1
`
	if err := testutil.GatherAndCompare(reg, strings.NewReader(want), "stb_conflation_units", "stb_conflation_ready_queue_length"); err != nil {
		t.Fatal(err)
	}
	problems, err := testutil.GatherAndLint(reg)
	if err != nil || len(problems) > 0 {
		t.Fatalf("lint: %v %v", err, problems)
	}
}

// TestMetricsRegistrationErrorReturned: a registry that already has the
// manager's metrics makes NewManager return an error. Issue 21: it called
// MustRegister and panicked, although it returns an error.
func TestMetricsRegistrationErrorReturned(t *testing.T) {
	reg := prometheus.NewRegistry()
	if _, err := NewManager(Config{Types: policyTypes, Registerer: reg}); err != nil {
		t.Fatal(err)
	}
	m, err := NewManager(Config{Types: policyTypes, Registerer: reg})
	var are prometheus.AlreadyRegisteredError
	if m != nil || !errors.As(err, &are) {
		t.Fatalf("second manager on one registry: %v, %v; want an AlreadyRegisteredError", m, err)
	}
}
