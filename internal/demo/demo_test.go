package demo

import (
	"bytes"
	"context"
	"fmt"
	"os"
	"strings"
	"testing"
	"time"

	"github.com/jackc/pgx/v5"
	"go.uber.org/zap"

	"github.com/stbridge/stb/pkg/db/dbtest"
	"github.com/stbridge/stb/pkg/sim"
	"github.com/stbridge/stb/pkg/transport"
)

// demoConfig is a small demo on the test server, in a database of its
// own that the test drops.
func demoConfig(t *testing.T, s sim.Config) (Config, *bytes.Buffer) {
	t.Helper()
	name := fmt.Sprintf("stb_test_demo_%d_%d", os.Getpid(), time.Now().UnixNano()%1e6)
	base := dbtest.BaseURL()
	t.Cleanup(func() {
		ctx := context.Background()
		conn, err := pgx.Connect(ctx, base)
		if err != nil {
			t.Errorf("drop %s: %v", name, err)
			return
		}
		defer conn.Close(ctx)
		if _, err := conn.Exec(ctx, "DROP DATABASE IF EXISTS "+pgx.Identifier{name}.Sanitize()+" WITH (FORCE)"); err != nil {
			t.Errorf("drop %s: %v", name, err)
		}
	})
	var out bytes.Buffer
	return Config{
		Sim: s, Timeout: time.Minute, DatabaseURL: base, DatabaseName: name, Partitions: 2,
		NewPublisher: func(brokers string) (*sim.KafkaPublisher, error) {
			return sim.NewKafkaPublisher(sim.PublisherConfig{Brokers: brokers, TypePrefix: transport.DefaultTypePrefix}, zap.NewNop())
		},
		Out: &out, Logger: zap.NewNop(),
	}, &out
}

// The demo `make demo` runs, small and in-process: it ends verified, and
// says so, for STB's agents and for the global-hub agents' per-hub topics.
func TestDemoEndsVerified(t *testing.T) {
	for _, s := range []sim.Config{
		{Hubs: 3, Clusters: 4, Generations: 4, Seed: 7},
		{Hubs: 2, Clusters: 3, Generations: 4, Seed: 8, Agent: sim.AgentGlobalHub},
	} {
		t.Run(s.Agent, func(t *testing.T) {
			cfg, out := demoConfig(t, s)
			res, err := Run(context.Background(), cfg)
			if err != nil {
				t.Fatalf("Run: %v\n%s", err, out)
			}
			if !res.OK() || !strings.Contains(out.String(), "verified: ok") {
				t.Fatalf("the demo did not end verified:\n%s", out)
			}
			if !strings.Contains(out.String(), "published per type:") {
				t.Errorf("no summary of what was published:\n%s", out)
			}
		})
	}
}

func TestConfigValidate(t *testing.T) {
	ok, _ := demoConfig(t, sim.Config{Hubs: 1, Generations: 1})
	for name, change := range map[string]func(*Config){
		"no rounds and no rate": func(c *Config) { c.Sim.Generations, c.Sim.Rate = 0, 0 },
		"no partitions":         func(c *Config) { c.Partitions = 0 },
		"no timeout":            func(c *Config) { c.Timeout = 0 },
		"no publisher":          func(c *Config) { c.NewPublisher = nil },
	} {
		c := ok
		change(&c)
		if err := c.Validate(); err == nil {
			t.Errorf("%s: Validate accepted it", name)
		}
	}
	if err := ok.Validate(); err != nil {
		t.Errorf("a valid configuration: %v", err)
	}
}
