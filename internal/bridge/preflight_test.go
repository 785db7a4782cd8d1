package bridge

import (
	"strings"
	"testing"
)

// TestPreflightKafkaProperties: a property librdkafka does not know, or a
// value it refuses, fails the preflight (it failed only when the reader
// was created, after the migrations), without a secret's value in the
// error; valid properties pass.
func TestPreflightKafkaProperties(t *testing.T) {
	for _, tc := range []struct {
		props map[string]string
		want  string // "" passes
	}{
		{map[string]string{"security.protocol": "SASL_SSL", "sasl.mechanisms": "SCRAM-SHA-512", "sasl.username": "stb", "sasl.password": "hunter2"}, ""},
		{map[string]string{"no.such.property": "1"}, "no.such.property"},
		{map[string]string{"security.protocol": "carrier-pigeon", "sasl.password": "hunter2"}, "security.protocol"},
		{map[string]string{"fetch.max.bytes": "lots"}, "fetch.max.bytes"},
	} {
		cfg := DefaultConfig()
		cfg.Reader.Properties = tc.props
		err := Preflight(cfg)
		switch {
		case tc.want == "" && err != nil:
			t.Errorf("%v: %v", tc.props, err)
		case tc.want != "" && (err == nil || !strings.Contains(err.Error(), tc.want)):
			t.Errorf("%v: %v, want an error naming %s", tc.props, err, tc.want)
		case err != nil && strings.Contains(err.Error(), "hunter2"):
			t.Errorf("%v: the error shows a password: %v", tc.props, err)
		}
	}
}
