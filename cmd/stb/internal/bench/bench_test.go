package bench

import (
	"slices"
	"strings"
	"testing"
	"time"

	"github.com/stbridge/stb/dbsyncers"
	"github.com/stbridge/stb/pkg/bundle"
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
	wantAll := slices.DeleteFunc(ScenarioNames(), func(n string) bool { return n == scaleScenario })
	if err != nil || !slices.Equal(all, wantAll) {
		t.Fatalf("no --scenario: %v, %v; want all of %v but the scale test, which only runs when named", all, err, wantAll)
	}
	c.Scenarios = []string{"all"}
	if got, _ := names(c); slices.Contains(got, scaleScenario) {
		t.Errorf("--scenario all selected %v, with the scale test", got)
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
	gh := DefaultConfig()
	gh.Agent, gh.Scenarios = "globalhub", []string{"catch-up"}
	if err := gh.Validate(); err != nil {
		t.Fatalf("--agent globalhub --scenario catch-up: %v", err)
	}
	gh.Scenarios = []string{"scale"}
	if err := gh.Validate(); err != nil {
		t.Fatalf("--agent globalhub --scenario scale: %v", err)
	}
	own := DefaultConfig()
	own.Scenarios = []string{"scale"}
	if err := own.Validate(); err == nil || !strings.Contains(err.Error(), "has no scale test") {
		t.Fatalf("--scenario scale with STB's agent: %v, want an error saying it has no scale test", err)
	}
	for name, change := range map[string]func(*Config){
		"no hubs":                          func(c *Config) { c.Hubs = 0 },
		"short duration":                   func(c *Config) { c.Duration = 0 },
		"no pool":                          func(c *Config) { c.PoolSize = 0 },
		"negative batch wait":              func(c *Config) { c.BatchWait = -time.Millisecond },
		"no poison messages":               func(c *Config) { c.PoisonMessages = 0 },
		"negative overload":                func(c *Config) { c.OverloadRate = -1 },
		"unknown agent":                    func(c *Config) { c.Agent = "hub-of-hubs" },
		"global-hub agent, every scenario": func(c *Config) { c.Agent = "globalhub" },
		"global-hub agent, steady":         func(c *Config) { c.Agent, c.Scenarios = "globalhub", []string{"catch-up", "steady"} },
	} {
		c := DefaultConfig()
		change(&c)
		if err := c.Validate(); err == nil {
			t.Errorf("%s: Validate accepted it", name)
		}
	}
}

// TestFinalStateDropsDependentsOfAReplacedBase: the pgx ceiling writes what
// the bridge would: a complete bundle that depends on exactly one base
// (the global-hub agent's localcompletecompliance) is not written when a
// newer base followed it, as no delta of STB's is. Without it the ceiling
// wrote 51 of 200 global-hub hubs' compliance wrong.
func TestFinalStateDropsDependentsOfAReplacedBase(t *testing.T) {
	reg, err := dbsyncers.ForProfiles(true, true)
	if err != nil {
		t.Fatal(err)
	}
	v := func(g uint64) bundle.Version { return bundle.Version{Incarnation: 7, Generation: g} }
	st := newFinalState(reg)
	st.add(&bundle.Bundle{Hub: "h", Type: dbsyncers.GHLocalCompliance, Version: v(5)})
	st.add(&bundle.Bundle{Hub: "h", Type: dbsyncers.GHLocalCompleteCompliance, Version: v(9), Dependency: v(5), HasDependency: true})
	if jobs := st.jobs("h"); len(jobs) != 2 {
		t.Fatalf("%d jobs, want the base and its dependent", len(jobs))
	}
	st.add(&bundle.Bundle{Hub: "h", Type: dbsyncers.GHLocalCompliance, Version: v(6)})
	jobs := st.jobs("h")
	if len(jobs) != 1 || jobs[0][0].Type != dbsyncers.GHLocalCompliance || jobs[0][0].Version != v(6) {
		t.Fatalf("jobs %v, want only the newer base", jobs)
	}
}
