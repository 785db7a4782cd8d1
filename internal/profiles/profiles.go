// Package profiles lists the wire profiles a bridge can read, STB's own
// bundles, the multicluster global-hub agent's events and the status
// families, and builds what a set of them needs: the registry of their
// bundle types (dbsyncers), the families the transport maps onto bundles
// (transport.Family), what a hub delete must know of them, and their
// start-up steps.
//
// A profile is one package under internal/profiles (stb, globalhub,
// work, cne) returning its profile.Profile: its types, its family, and
// the hooks cmd/stb, the demo, the bench and the console call instead of
// naming it (its simulated agents, its verification, its console section,
// its start-up steps). All is the only list of them: a new profile is a
// package and one line in All.
package profiles

import (
	"fmt"
	"maps"
	"slices"
	"strings"

	"github.com/stbridge/stb/dbsyncers"
	"github.com/stbridge/stb/internal/profiles/cne"
	"github.com/stbridge/stb/internal/profiles/globalhub"
	"github.com/stbridge/stb/internal/profiles/profile"
	"github.com/stbridge/stb/internal/profiles/stb"
	"github.com/stbridge/stb/internal/profiles/work"
	"github.com/stbridge/stb/pkg/db"
	"github.com/stbridge/stb/pkg/transport"
)

// Names of the built-in profiles.
const (
	// STB is STB's own format (dbsyncers.Default's types).
	STB = stb.Name
	// GlobalHub is the multicluster global-hub agent's events
	// (dbsyncers.GlobalHub's types), decoded by transport.GlobalHub.
	GlobalHub = globalhub.Name
)

// Profile is one wire profile (package profile has its fields).
type Profile = profile.Profile

// Agent is a simulated sender of a profile's wire format.
type Agent = profile.Agent

// All returns every profile the bridge ships with, in the order their
// types are registered.
func All() []Profile {
	gh := globalhub.Profile()
	gh.HubTables = globalHubTables
	return []Profile{stb.Profile(), gh, work.Profile(), cne.Profile()}
}

// LookupAgent returns the simulated agent called name and its profile.
func LookupAgent(name string) (Profile, Agent, error) {
	for _, p := range All() {
		for _, a := range p.Agents {
			if a.Name == name {
				return p, a, nil
			}
		}
	}
	return Profile{}, Agent{}, fmt.Errorf("unknown agent %q (want one of %s)", name, strings.Join(AgentNames(), ", "))
}

// AgentNames returns the name of every simulated agent, in All's order.
func AgentNames() []string {
	var names []string
	for _, p := range All() {
		for _, a := range p.Agents {
			names = append(names, a.Name)
		}
	}
	return names
}

// AgentUsage lists the agents with their help, for --agent's help text.
func AgentUsage() string {
	var parts []string
	for _, p := range All() {
		for _, a := range p.Agents {
			parts = append(parts, a.Name+" "+a.Help)
		}
	}
	return strings.Join(parts, "; ")
}

// StartupSteps returns every profile's start-up steps, whichever are on,
// for the flags that turn them on.
func StartupSteps() []profile.StartupStep {
	var steps []profile.StartupStep
	for _, p := range All() {
		steps = append(steps, p.Startup...)
	}
	return steps
}

// Default returns the profiles read when none are named.
func Default() []string { return []string{STB, GlobalHub} }

// Names returns the name of every profile, for help texts and errors.
func Names() []string {
	var names []string
	for _, p := range All() {
		names = append(names, p.Name)
	}
	return names
}

// Set is the profiles a bridge reads.
type Set struct {
	on []Profile
}

// Parse reads profile names (repeats allowed); at least one must be
// named, and only known ones.
func Parse(names []string) (Set, error) {
	want := make(map[string]bool, len(names))
	for _, n := range names {
		want[n] = true
	}
	var s Set
	for _, p := range All() {
		if want[p.Name] {
			s.on = append(s.on, p)
			delete(want, p.Name)
		}
	}
	for _, n := range names {
		if want[n] {
			return Set{}, fmt.Errorf("unknown profile %q (want one or more of %s)", n, strings.Join(Names(), ", "))
		}
	}
	if len(s.on) == 0 {
		return Set{}, fmt.Errorf("no profile: want one or more of %s", strings.Join(Names(), ", "))
	}
	return s, nil
}

// Has reports whether the profile called name is on.
func (s Set) Has(name string) bool {
	for _, p := range s.on {
		if p.Name == name {
			return true
		}
	}
	return false
}

// Names returns the names of the profiles that are on, in All's order.
func (s Set) Names() []string {
	names := make([]string, len(s.on))
	for i, p := range s.on {
		names[i] = p.Name
	}
	return names
}

// Registry returns the registry of the bundle types of the profiles that
// are on.
func (s Set) Registry() (*dbsyncers.Registry, error) {
	var syncers []dbsyncers.Syncer
	for _, p := range s.on {
		syncers = append(syncers, p.Syncers()...)
	}
	return dbsyncers.NewRegistry(syncers...)
}

// Startup returns the start-up steps of the profiles that are on whose
// options opts sets (by flag name), each with its value; an option of a
// profile that is off is an error naming the flag and the profile.
func (s Set) Startup(opts map[string]string) ([]Step, error) {
	var steps []Step
	var errs []string
	for _, f := range slices.Sorted(maps.Keys(opts)) {
		if opts[f] == "" {
			continue
		}
		found := false
		for _, p := range All() {
			for _, st := range p.Startup {
				if st.Flag != f {
					continue
				}
				found = true
				if !s.Has(p.Name) {
					errs = append(errs, fmt.Sprintf("--%s needs the %s profile (--profiles …,%s)", f, p.Name, p.Name))
					continue
				}
				steps = append(steps, Step{Profile: p.Name, StartupStep: st, Value: opts[f]})
			}
		}
		if !found {
			errs = append(errs, fmt.Sprintf("--%s: no profile has such a start-up step", f))
		}
	}
	if len(errs) > 0 {
		return nil, fmt.Errorf("%s", strings.Join(errs, "; "))
	}
	return steps, nil
}

// Step is a start-up step that is on, with its option's value.
type Step struct {
	Profile string
	profile.StartupStep
	Value string
}

// Families returns a new mapping of each family that is on, for one
// reader.
func (s Set) Families() []transport.Family {
	var out []transport.Family
	for _, p := range s.on {
		if p.Family != nil {
			out = append(out, p.Family())
		}
	}
	return out
}

// AllTypeNames returns the name of every bundle type of every profile,
// in registration order.
func AllTypeNames() []string {
	var names []string
	for _, p := range All() {
		names = append(names, profileTypeNames(p)...)
	}
	return names
}

// HubFencedTypes returns the name of every bundle type of every profile
// that is not KeyFenced: what a bridge's memory fences at the tombstones'
// incarnation after a hub delete, whichever profiles the bridges run.
func HubFencedTypes() []string {
	var names []string
	for _, p := range All() {
		if !p.KeyFenced {
			names = append(names, profileTypeNames(p)...)
		}
	}
	return names
}

// HubScope returns what a hub delete or reset must know of the profiles,
// every one of them whichever the bridges run (a hub's rows may have been
// written by a bridge that read another set): the types of the KeyFenced
// profiles, whose versions a delete removes rather than tombstones, and
// every profile's HubTables.
func HubScope() db.HubScope {
	var s db.HubScope
	for _, p := range All() {
		if p.KeyFenced {
			s.KeyFenced = append(s.KeyFenced, profileTypeNames(p)...)
		}
		if p.HubTables != nil {
			s.Tables = append(s.Tables, p.HubTables()...)
		}
	}
	return s
}

func profileTypeNames(p Profile) []string {
	var names []string
	for _, s := range p.Syncers() {
		names = append(names, s.Name)
	}
	return names
}

// Usage lists the profiles with their help, for a flag's help text:
// "stb (STB's own bundles), globalhub (…)".
func Usage() string {
	var parts []string
	for _, p := range All() {
		parts = append(parts, p.Name+" ("+p.Help+")")
	}
	return strings.Join(parts, ", ")
}
