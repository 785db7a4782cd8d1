package transport

import (
	"testing"
	"time"
)

func TestConsumerConfigKeepsMandatorySettings(t *testing.T) {
	c := DefaultConfig()
	c.Brokers, c.Topics = "b:1", []string{"t"}
	c.Properties = map[string]string{"client.id": "custom", "session.timeout.ms": "10000"}
	m := *c.withDefaults().consumerConfig()
	for k, v := range mandatoryProperties {
		if m[k] != v {
			t.Errorf("%s = %v, want %s", k, m[k], v)
		}
	}
	for k, want := range map[string]any{
		"bootstrap.servers": "b:1", "group.id": "stb", "auto.offset.reset": "earliest",
		"client.id": "custom", "session.timeout.ms": "10000", "go.logs.channel.enable": true,
	} {
		if m[k] != want {
			t.Errorf("%s = %v, want %v", k, m[k], want)
		}
	}
}

func TestMaxBundleBytesFloor(t *testing.T) {
	for in, want := range map[int]int{0: DefaultMaxBundleBytes, 1: MinMaxBundleBytes, MinMaxBundleBytes - 1: MinMaxBundleBytes, 1 << 20: 1 << 20} {
		if got := (Config{MaxBundleBytes: in}).withDefaults().MaxBundleBytes; got != want {
			t.Errorf("MaxBundleBytes %d became %d, want %d", in, got, want)
		}
	}
}

func TestPrefetchFollowsTheBudget(t *testing.T) {
	for _, tc := range []struct {
		budget        int64
		queued, fetch any // what the consumer config holds; nil: librdkafka's default
		props         map[string]string
	}{
		{budget: 0},
		{budget: 256 << 20, queued: "32768", fetch: "16777216"},
		{budget: 512 << 20, queued: "65536", fetch: "33554432"},
		{budget: 4 << 30, queued: "65536", fetch: "52428800"}, // capped at librdkafka's defaults
		{budget: 16 << 20, queued: "4096", fetch: "1048576"},  // floors
		{budget: 256 << 20, queued: "1000", fetch: "16777216", // an explicit property wins
			props: map[string]string{"queued.max.messages.kbytes": "1000"}},
	} {
		c := DefaultConfig()
		c.Brokers, c.Topics, c.MaxBufferedBytes, c.Properties = "b:1", []string{"t"}, tc.budget, tc.props
		m := *c.withDefaults().consumerConfig()
		if got := m["queued.max.messages.kbytes"]; got != tc.queued {
			t.Errorf("budget %d: queued.max.messages.kbytes = %v, want %v", tc.budget, got, tc.queued)
		}
		if got := m["fetch.max.bytes"]; got != tc.fetch {
			t.Errorf("budget %d: fetch.max.bytes = %v, want %v", tc.budget, got, tc.fetch)
		}
	}
}

func TestLogLimit(t *testing.T) {
	var l logLimit
	t0 := time.Unix(1000, 0)
	logged := 0
	for i := range 25 {
		if l.allow(t0.Add(time.Duration(i) * time.Millisecond)) {
			logged++
		}
	}
	if logged != rejectLogBurst {
		t.Fatalf("logged %d of 25 in one second, want %d", logged, rejectLogBurst)
	}
	if !l.allow(t0.Add(time.Second)) {
		t.Fatal("the next second's first line was not allowed")
	}
	if n := l.takeSuppressed(); n != 25-rejectLogBurst {
		t.Fatalf("suppressed %d, want %d", n, 25-rejectLogBurst)
	}
	if n := l.takeSuppressed(); n != 0 {
		t.Fatalf("suppressed %d after taking them, want 0", n)
	}
}

// The rebalance callbacks run on the poll loop: with a lowered
// max.poll.interval.ms (the hang test's 7 s) their default bounds (10 s
// each) shrink to a quarter of it, and bounds set that do not fit are
// refused rather than left to evict the consumer from its group.
func TestCallbackTimeoutsFitThePollInterval(t *testing.T) {
	for _, tc := range []struct {
		name           string
		poll           string
		assign, revoke time.Duration
		want           time.Duration // both, with defaults applied
		valid          bool
	}{
		{"librdkafka's default (300 s)", "", 0, 0, DefaultAssignTimeout, true},
		{"a minute", "60000", 0, 0, DefaultAssignTimeout, true},
		{"7 s", "7000", 0, 0, 1750 * time.Millisecond, true},
		{"7 s with bounds set too long", "7000", 5 * time.Second, 3 * time.Second, 0, false},
	} {
		t.Run(tc.name, func(t *testing.T) {
			c := DefaultConfig()
			c.Brokers, c.Topics, c.AssignTimeout, c.RevokeTimeout = "b:1", []string{"t"}, tc.assign, tc.revoke
			if tc.poll != "" {
				c.Properties = map[string]string{"max.poll.interval.ms": tc.poll}
			}
			err := c.Validate()
			if (err == nil) != tc.valid {
				t.Fatalf("Validate: %v, want valid %v", err, tc.valid)
			}
			if d := c.withDefaults(); tc.valid && (d.AssignTimeout != tc.want || d.RevokeTimeout != tc.want) {
				t.Errorf("assign %v, revoke %v; want %v each", d.AssignTimeout, d.RevokeTimeout, tc.want)
			}
		})
	}
}
