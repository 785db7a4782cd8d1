package sim

import (
	"math"
	"strings"
	"testing"
)

func TestConfigValidate(t *testing.T) {
	valid := Config{Hubs: 1, Generations: 1}
	tests := []struct {
		name    string
		change  func(c *Config)
		wantErr string
	}{
		{"minimal", func(*Config) {}, ""},
		{"everything set", func(c *Config) {
			*c = Config{Hubs: 3, Clusters: 10, Generations: 5, Topic: "t", Seed: -4, Rate: 50,
				RestartProbability: 1, ChangeProbability: -1, ChurnProbability: 0.5, HubPrefix: "h", FirstIncarnation: 9,
				Policies: 40, ComplianceEvery: -1, PlacementProbability: 1, EventsPerRound: 100}
		}, ""},
		{"no policy bundles", func(c *Config) { c.Policies, c.EventsPerRound = -1, -1 }, ""},
		{"no hubs", func(c *Config) { c.Hubs = 0 }, "hubs"},
		{"negative clusters", func(c *Config) { c.Clusters = -1 }, "clusters"},
		{"no generations", func(c *Config) { c.Generations = 0 }, "generations"},
		{"negative rate", func(c *Config) { c.Rate = -1 }, "rate"},
		{"infinite rate", func(c *Config) { c.Rate = math.Inf(1) }, "rate"},
		{"probability above 1", func(c *Config) { c.RestartProbability = 1.5 }, "restart probability"},
		{"NaN probability", func(c *Config) { c.ChurnProbability = math.NaN() }, "churn probability"},
		{"placement probability above 1", func(c *Config) { c.PlacementProbability = 2 }, "placement probability"},
		{"max incarnation", func(c *Config) { c.FirstIncarnation = math.MaxUint64 }, "incarnation"},
	}
	for _, tt := range tests {
		t.Run(tt.name, func(t *testing.T) {
			c := valid
			tt.change(&c)
			err := c.Validate()
			switch {
			case tt.wantErr == "" && err != nil:
				t.Fatalf("Validate: %v", err)
			case tt.wantErr != "" && (err == nil || !strings.Contains(err.Error(), tt.wantErr)):
				t.Fatalf("Validate = %v, want an error about %q", err, tt.wantErr)
			}
		})
	}
}

func TestConfigDefaults(t *testing.T) {
	c := Config{Hubs: 1, Generations: 1, ChangeProbability: -1, ChurnProbability: 0.5}.withDefaults()
	if c.Topic != DefaultTopic || c.HubPrefix != DefaultHubPrefix || c.FirstIncarnation != DefaultFirstIncarnation {
		t.Errorf("defaults: topic %q, prefix %q, incarnation %d", c.Topic, c.HubPrefix, c.FirstIncarnation)
	}
	if c.RestartProbability != DefaultRestartProbability || c.ChangeProbability != 0 || c.ChurnProbability != 0.5 {
		t.Errorf("probabilities: restart %v, change %v, churn %v", c.RestartProbability, c.ChangeProbability, c.ChurnProbability)
	}
	if c.Policies != DefaultPolicies || c.ComplianceEvery != DefaultComplianceEvery ||
		c.PlacementProbability != DefaultPlacementProbability || c.EventsPerRound != DefaultEventsPerRound {
		t.Errorf("policy defaults: %d policies, report every %d, placement %v, %d events",
			c.Policies, c.ComplianceEvery, c.PlacementProbability, c.EventsPerRound)
	}
	c = Config{Policies: -1, ComplianceEvery: -3, PlacementProbability: -1, EventsPerRound: -2}.withDefaults()
	if c.Policies != 0 || c.ComplianceEvery != 0 || c.PlacementProbability != 0 || c.EventsPerRound != 0 {
		t.Errorf("negative policy settings: %d policies, report every %d, placement %v, %d events",
			c.Policies, c.ComplianceEvery, c.PlacementProbability, c.EventsPerRound)
	}
}

func TestHubName(t *testing.T) {
	tests := []struct {
		hubs, i int
		prefix  string
		want    string
	}{
		{5, 0, "hub-", "hub-001"},
		{999, 998, "hub-", "hub-999"},
		{1000, 6, "hub-", "hub-0007"},
		{12000, 11999, "east-", "east-12000"},
	}
	for _, tt := range tests {
		c := Config{Hubs: tt.hubs, HubPrefix: tt.prefix}
		if got := c.hubName(tt.i); got != tt.want {
			t.Errorf("hubName(%d) of %d hubs = %q, want %q", tt.i, tt.hubs, got, tt.want)
		}
	}
}
