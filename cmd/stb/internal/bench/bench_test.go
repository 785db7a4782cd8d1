package bench

import (
	"slices"
	"strings"
	"testing"
)

func TestSelected(t *testing.T) {
	names := func(c Config) ([]string, error) {
		ss, err := c.selected()
		var out []string
		for _, s := range ss {
			out = append(out, s.name)
		}
		return out, err
	}
	c := DefaultConfig()
	all, err := names(c)
	if err != nil || !slices.Equal(all, ScenarioNames()) {
		t.Fatalf("no --scenario: %v, %v; want all of %v", all, err, ScenarioNames())
	}
	if !slices.Contains(all, "poison-flood") {
		t.Errorf("scenarios %v lack poison-flood", all)
	}
	c.Scenarios = []string{"steady", "catch-up"}
	if got, _ := names(c); !slices.Equal(got, []string{"catch-up", "steady"}) {
		t.Errorf("selected %v, want catch-up then steady (the fixed order)", got)
	}
	c.Scenarios = []string{"catchup"}
	if _, err := names(c); err == nil || !strings.Contains(err.Error(), "unknown scenario") {
		t.Errorf("a misspelt scenario gave %v, want an unknown-scenario error", err)
	}
}

func TestValidate(t *testing.T) {
	if err := DefaultConfig().Validate(); err != nil {
		t.Fatalf("defaults invalid: %v", err)
	}
	hoh := DefaultConfig()
	hoh.Agent = "hoh"
	if err := hoh.Validate(); err != nil {
		t.Fatalf("--agent hoh: %v", err)
	}
	for name, change := range map[string]func(*Config){
		"no hubs":            func(c *Config) { c.Hubs = 0 },
		"short duration":     func(c *Config) { c.Duration = 0 },
		"no pool":            func(c *Config) { c.PoolSize = 0 },
		"no poison messages": func(c *Config) { c.PoisonMessages = 0 },
		"negative overload":  func(c *Config) { c.OverloadRate = -1 },
		"unknown agent":      func(c *Config) { c.Agent = "hub-of-hubs" },
		"global-hub agent":   func(c *Config) { c.Agent = "globalhub" },
	} {
		c := DefaultConfig()
		change(&c)
		if err := c.Validate(); err == nil {
			t.Errorf("%s: Validate accepted it", name)
		}
	}
}
