package main

import (
	"os"
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

// TestFlagErrorsHelp: an unknown flag names itself and the closest defined
// one in one line (it printed "flag provided but not defined" and the whole
// usage), and a refused value names the flag or variable, the value and the
// form expected (it said "parse error"), a secret's value never shown.
func TestFlagErrorsHelp(t *testing.T) {
	t.Setenv("STB_COMMIT_INTERVAL", "")
	os.Unsetenv("STB_COMMIT_INTERVAL")
	for _, tc := range []struct {
		name string
		args []string
		env  [2]string
		want []string
		not  []string
	}{
		{"typo", []string{"--kafka-broker", "x"}, [2]string{},
			[]string{"flag --kafka-broker is not defined", "did you mean --kafka-brokers?", "'stb run --help'"}, []string{"Usage", "\n"}},
		{"far from any", []string{"--frobnicate"}, [2]string{}, []string{"flag --frobnicate is not defined"}, []string{"did you mean"}},
		{"duration", []string{"--commit-interval", "5"}, [2]string{},
			[]string{`--commit-interval "5"`, "a duration such as 5s or 1m"}, []string{"parse error"}},
		{"bool", []string{"--migrate=maybe"}, [2]string{}, []string{`--migrate "maybe"`, "true or false"}, nil},
		{"env duration", nil, [2]string{"STB_COMMIT_INTERVAL", "5"},
			[]string{`STB_COMMIT_INTERVAL="5"`, "a duration such as 5s or 1m", "--commit-interval"}, []string{"parse error"}},
		{"property secret", []string{"--kafka-property", "hunter2"}, [2]string{}, []string{"--kafka-property", "key=value"}, []string{"hunter2"}},
		{"env property secret", nil, [2]string{"STB_KAFKA_PROPERTY", "hunter2"}, []string{"STB_KAFKA_PROPERTY", "key=value"}, []string{"hunter2"}},
		{"database url redacted", []string{"--database-url", "postgres://u:hunter2@db/x", "--db-pool-size", "many"}, [2]string{},
			[]string{`--db-pool-size "many"`, "a whole number"}, []string{"hunter2"}},
	} {
		t.Run(tc.name, func(t *testing.T) {
			if tc.env[0] != "" {
				t.Setenv(tc.env[0], tc.env[1])
			}
			cfg := bridge.DefaultConfig()
			fs := newFlagSet("run", "")
			var out strings.Builder
			fs.SetOutput(&out)
			bindRun(fs, &cfg, nil)
			err := parseFlags(fs, tc.args)
			if err == nil {
				t.Fatal("accepted")
			}
			for _, w := range tc.want {
				if !strings.Contains(err.Error(), w) {
					t.Errorf("error %q does not say %q", err, w)
				}
			}
			for _, n := range append(tc.not, "hunter2") {
				if strings.Contains(err.Error(), n) || strings.Contains(out.String(), n) {
					t.Errorf("error %q (output %q) says %q", err, out.String(), n)
				}
			}
			if out.Len() > 0 {
				t.Errorf("printed %d bytes of usage on an error", out.Len())
			}
		})
	}
}

// TestEnvironmentPerCommand: `stb run` and `stb migrate` read the STB_*
// variables of the deployment; the other commands read their own, so that
// STB_DATABASE_URL exported for production never reaches `stb demo`, and
// STB_HUBS or STB_TOPIC no command but their own (they reached all).
func TestEnvironmentPerCommand(t *testing.T) {
	for _, tc := range []struct{ cmd, flag, want string }{
		{"run", "database-url", "STB_DATABASE_URL"},
		{"run", "log-level", "STB_LOG_LEVEL"},
		{"migrate", "database-url", "STB_DATABASE_URL"},
		{"demo", "database-url", "STB_DEMO_DATABASE_URL"},
		{"demo", "hubs", "STB_DEMO_HUBS"},
		{"simulate", "topic", "STB_SIMULATE_TOPIC"},
		{"simulate", "kafka-brokers", "STB_SIMULATE_KAFKA_BROKERS"},
		{"verify", "database-url", "STB_VERIFY_DATABASE_URL"},
		{"bench", "hubs", "STB_BENCH_HUBS"},
		{"kafka", "port", "STB_BROKER_PORT"},
		{"kafka", "topics", "STB_BROKER_TOPICS"},
		{"hub delete NAME", "database-url", "STB_DATABASE_URL"},
		{"deadletters list", "hub", "STB_DEADLETTERS_HUB"},
		{"deadletters purge", "database-url", "STB_DATABASE_URL"},
		{"work resync", "topic", "STB_WORK_TOPIC"},
		{"work resync", "kafka-brokers", "STB_KAFKA_BROKERS"},
	} {
		if got := envName(tc.cmd, tc.flag); got != tc.want {
			t.Errorf("stb %s --%s reads %s, want %s", tc.cmd, tc.flag, got, tc.want)
		}
	}

	t.Setenv("STB_DATABASE_URL", "postgres://prod@db.example:5432/globalhub")
	t.Setenv("STB_HUBS", "7")
	fs := newFlagSet("demo", "")
	url := fs.String("database-url", "postgres://local/", "")
	hubs := fs.Int("hubs", 50, "")
	if err := parseFlags(fs, nil); err != nil {
		t.Fatal(err)
	}
	if *url != "postgres://local/" || *hubs != 50 {
		t.Errorf("stb demo took %q and %d hubs from the production environment", *url, *hubs)
	}
	t.Setenv("STB_DEMO_HUBS", "7")
	fs = newFlagSet("demo", "")
	hubs = fs.Int("hubs", 50, "")
	if err := parseFlags(fs, nil); err != nil || *hubs != 7 {
		t.Errorf("STB_DEMO_HUBS=7: %d hubs, %v", *hubs, err)
	}
}
