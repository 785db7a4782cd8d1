package main

import (
	"strings"
	"testing"
	"time"

	"github.com/stbridge/stb/internal/bridge"
)

func TestFlagsFromEnvironment(t *testing.T) {
	t.Setenv("STB_DB_POOL_SIZE", "7")
	t.Setenv("STB_COMMIT_INTERVAL", "2s")
	t.Setenv("STB_KAFKA_BROKERS", "from-env:9092")
	t.Setenv("STB_MAX_BUNDLE_BYTES", "8MiB")
	t.Setenv("STB_KAFKA_PROPERTY", "security.protocol=SASL_SSL,sasl.password=hunter2")
	cfg := bridge.DefaultConfig()
	fs := newFlagSet("run", "")
	bindRun(fs, &cfg, nil)
	if err := parseFlags(fs, []string{"--kafka-brokers", "from-flag:9092"}); err != nil {
		t.Fatal(err)
	}
	if cfg.Reader.Brokers != "from-flag:9092" {
		t.Errorf("brokers %q: the command line must win over the environment", cfg.Reader.Brokers)
	}
	if cfg.Dispatcher.Workers != 7 || cfg.Committer.Interval != 2*time.Second || cfg.Reader.MaxBundleBytes != 8<<20 {
		t.Errorf("from environment: pool %d, interval %v, max bundle %d", cfg.Dispatcher.Workers, cfg.Committer.Interval, cfg.Reader.MaxBundleBytes)
	}
	if cfg.Reader.Properties["sasl.password"] != "hunter2" || cfg.Reader.Properties["security.protocol"] != "SASL_SSL" {
		t.Errorf("properties %v", cfg.Reader.Properties)
	}
	if s := propertyFlag(cfg.Reader.Properties).String(); strings.Contains(s, "hunter2") {
		t.Errorf("a secret property is printed: %s", s)
	}
	if err := cfg.Validate(); err != nil {
		t.Fatal(err)
	}
}

func TestFlagsRejectBadValues(t *testing.T) {
	for _, tc := range []struct {
		env, value string
	}{
		{"STB_DB_POOL_SIZE", "many"},
		{"STB_MAX_BUNDLE_BYTES", "4 parsecs"},
		{"STB_COMMIT_INTERVAL", "soon"},
	} {
		t.Run(tc.env, func(t *testing.T) {
			t.Setenv(tc.env, tc.value)
			cfg := bridge.DefaultConfig()
			fs := newFlagSet("run", "")
			bindRun(fs, &cfg, nil)
			err := parseFlags(fs, nil)
			if err == nil || !strings.Contains(err.Error(), tc.env) {
				t.Fatalf("error %v, want one naming %s", err, tc.env)
			}
		})
	}
}

func TestByteSize(t *testing.T) {
	for in, want := range map[string]int64{"64KiB": 64 << 10, "4MiB": 4 << 20, "1GiB": 1 << 30, "123": 123, "10B": 10} {
		var b byteSize
		if err := b.Set(in); err != nil || int64(b) != want {
			t.Errorf("Set(%q) = %d, %v; want %d", in, b, err, want)
		}
	}
	if s := byteSize(4 << 20); s.String() != "4MiB" {
		t.Errorf("String = %q", s.String())
	}
}

// Regression: a list flag given once used to be appended to its default,
// so STB_KAFKA_TOPICS=status subscribed to [status status] and failed.
func TestListFlagReplacesDefault(t *testing.T) {
	for _, tc := range []struct {
		args []string
		env  string
		want string
	}{
		{nil, "", "status"},
		{[]string{"--kafka-topics", "status"}, "", "status"},
		{[]string{"--kafka-topics", "a,b", "--kafka-topics", "c"}, "", "a,b,c"},
		{nil, "other", "other"},
	} {
		if tc.env != "" {
			t.Setenv("STB_KAFKA_TOPICS", tc.env)
		}
		cfg := bridge.DefaultConfig()
		fs := newFlagSet("run", "")
		bindRun(fs, &cfg, nil)
		if err := parseFlags(fs, tc.args); err != nil {
			t.Fatal(err)
		}
		if got := strings.Join(cfg.Reader.Topics, ","); got != tc.want {
			t.Errorf("args %v env %q: topics %q, want %q", tc.args, tc.env, got, tc.want)
		}
	}
}

// TestKafkaPropertyTakenWhole: on the command line a --kafka-property value
// is one pair, commas and all (it was split at commas, so
// sasl.password=A,B was cut and "x=B" became a property printed in clear,
// and debug=a,b could not be passed; issue 21). The environment variable
// still lists several, at newlines or else commas. A pair without a key is
// refused without echoing it, and a property the bridge does not know is
// printed without its value.
func TestKafkaPropertyTakenWhole(t *testing.T) {
	t.Setenv("STB_KAFKA_PROPERTY", "")
	cfg := bridge.DefaultConfig()
	fs := newFlagSet("run", "")
	bindRun(fs, &cfg, nil)
	err := parseFlags(fs, []string{"--kafka-property", "sasl.password=A,x=B", "--kafka-property", "debug=broker,topic",
		"--kafka-property", "no.such.property=s3cret"})
	if err != nil {
		t.Fatal(err)
	}
	p := cfg.Reader.Properties
	if p["sasl.password"] != "A,x=B" || p["debug"] != "broker,topic" || len(p) != 3 {
		t.Errorf("properties %v", p)
	}
	if s := propertyFlag(p).String(); strings.Contains(s, "A,x") || strings.Contains(s, "s3cret") || !strings.Contains(s, "debug=broker,topic") {
		t.Errorf("printed as %q", s)
	}
	if err := propertyFlag(map[string]string{}).Set("hunter2"); err == nil || strings.Contains(err.Error(), "hunter2") {
		t.Errorf("a pair without a key: %v", err)
	}

	t.Setenv("STB_KAFKA_PROPERTY", "debug=broker,topic\nsasl.username=stb")
	cfg = bridge.DefaultConfig()
	fs = newFlagSet("run", "")
	bindRun(fs, &cfg, nil)
	if err := parseFlags(fs, nil); err != nil {
		t.Fatal(err)
	}
	if p := cfg.Reader.Properties; p["debug"] != "broker,topic" || p["sasl.username"] != "stb" || len(p) != 2 {
		t.Errorf("from newline-separated environment: %v", p)
	}
}
