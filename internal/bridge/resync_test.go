package bridge

import (
	"errors"
	"testing"

	"github.com/prometheus/client_golang/prometheus"
)

// TestResyncCountersRegistrationErrorReturned: a registry that has the
// resync counters already makes a second registration an error for New to
// return. Issue 21: it called MustRegister, and a bridge built on a shared
// registry panicked.
func TestResyncCountersRegistrationErrorReturned(t *testing.T) {
	reg := prometheus.NewRegistry()
	if _, err := newResyncCounters(reg); err != nil {
		t.Fatal(err)
	}
	c, err := newResyncCounters(reg)
	var are prometheus.AlreadyRegisteredError
	if c != nil || !errors.As(err, &are) {
		t.Fatalf("second registration: %v, %v; want an AlreadyRegisteredError", c, err)
	}
}
