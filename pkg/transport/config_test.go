package transport_test

import (
	"testing"
	"time"

	"go.uber.org/zap"

	"github.com/stbridge/stb/pkg/committer"
	"github.com/stbridge/stb/pkg/transport"
)

func TestDefaultConfig(t *testing.T) {
	c := transport.DefaultConfig()
	if !c.VerifySource || c.GroupID != "stb" || c.TypePrefix != transport.DefaultTypePrefix ||
		c.AutoOffsetReset != "earliest" || c.MaxBundleBytes != 4<<20 || c.PollTimeout != transport.DefaultPollTimeout ||
		c.ChunkTimeout != transport.DefaultChunkTimeout || transport.DefaultChunkTimeout != 2*time.Minute {
		t.Errorf("unexpected defaults: %+v", c)
	}
}

func TestConfigValidate(t *testing.T) {
	valid := func() transport.Config {
		c := transport.DefaultConfig()
		c.Brokers = "127.0.0.1:9092"
		c.Topics = []string{"status", "^status\\..*"}
		return c
	}
	for _, tc := range []struct {
		name   string
		change func(c *transport.Config)
		ok     bool
	}{
		{"valid", func(*transport.Config) {}, true},
		{"zero values take defaults", func(c *transport.Config) { *c = transport.Config{Brokers: "b:1", Topics: []string{"t"}} }, true},
		{"small max bundle bytes is raised, not refused", func(c *transport.Config) { c.MaxBundleBytes = 10 }, true},
		{"mandatory property restated", func(c *transport.Config) {
			c.Properties = map[string]string{"enable.auto.commit": "true", "session.timeout.ms": "10000"}
		}, true},
		{"no brokers", func(c *transport.Config) { c.Brokers = " " }, false},
		{"no topics", func(c *transport.Config) { c.Topics = nil }, false},
		{"empty topic", func(c *transport.Config) { c.Topics = []string{""} }, false},
		{"bad pattern", func(c *transport.Config) { c.Topics = []string{"^status(("} }, false},
		{"bad offset reset", func(c *transport.Config) { c.AutoOffsetReset = "sometimes" }, false},
		{"negative max bundle bytes", func(c *transport.Config) { c.MaxBundleBytes = -1 }, false},
		{"negative poll timeout", func(c *transport.Config) { c.PollTimeout = -time.Second }, false},
		{"negative chunk timeout", func(c *transport.Config) { c.ChunkTimeout = -time.Second }, false},
		{"short chunk timeout", func(c *transport.Config) { c.ChunkTimeout = time.Millisecond }, true},
		{"auto commit turned off", func(c *transport.Config) { c.Properties = map[string]string{"enable.auto.commit": "false"} }, false},
		{"offset store turned on", func(c *transport.Config) { c.Properties = map[string]string{"enable.auto.offset.store": "true"} }, false},
		{"fetch backoff changed", func(c *transport.Config) { c.Properties = map[string]string{"fetch.queue.backoff.ms": "1000"} }, false},
		{"metrics push turned on", func(c *transport.Config) { c.Properties = map[string]string{"enable.metrics.push": "true"} }, false},
		{"group id as property", func(c *transport.Config) { c.Properties = map[string]string{"group.id": "other"} }, false},
		{"events channel as property", func(c *transport.Config) { c.Properties = map[string]string{"go.events.channel.enable": "true"} }, false},
	} {
		t.Run(tc.name, func(t *testing.T) {
			c := valid()
			tc.change(&c)
			err := c.Validate()
			if tc.ok && err != nil {
				t.Fatalf("Validate: %v", err)
			}
			if !tc.ok && err == nil {
				t.Fatal("Validate accepted an invalid config")
			}
		})
	}
}

func TestNewReaderRefuses(t *testing.T) {
	cm, err := committer.New(committer.Config{Interval: time.Second}, committer.Deps{Store: &memStore{}, Logger: zap.NewNop()})
	if err != nil {
		t.Fatal(err)
	}
	cfg := transport.DefaultConfig()
	cfg.Brokers, cfg.Topics = "127.0.0.1:1", []string{"status"}
	deps := transport.Deps{Decoder: testDecoders(), Sink: &testSink{}, Positions: positions{cm}, Offsets: &memOffsets{}}

	bad := cfg
	bad.Topics = nil
	if _, err := transport.NewReader(bad, deps); err == nil {
		t.Error("NewReader accepted an invalid config")
	}
	for name, change := range map[string]func(d *transport.Deps){
		"no decoder":   func(d *transport.Deps) { d.Decoder = nil },
		"no sink":      func(d *transport.Deps) { d.Sink = nil },
		"no positions": func(d *transport.Deps) { d.Positions = nil },
		"no offsets":   func(d *transport.Deps) { d.Offsets = nil },
	} {
		d := deps
		change(&d)
		if _, err := transport.NewReader(cfg, d); err == nil {
			t.Errorf("%s: NewReader accepted it", name)
		}
	}
}
