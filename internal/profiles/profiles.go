// Package profiles lists the wire profiles a bridge can read, STB's own
// bundles, the multicluster global-hub agent's events and the status
// families, and builds what a set of them needs: the registry of their
// bundle types (dbsyncers) and the families the transport maps onto
// bundles (transport.Family).
//
// The list is explicit, as dbsyncers' registry is: a new family is a
// package that returns its Profile, and one line in All.
package profiles

import (
	"fmt"
	"strings"

	"github.com/stbridge/stb/dbsyncers"
	"github.com/stbridge/stb/dbsyncers/cne"
	"github.com/stbridge/stb/dbsyncers/work"
	"github.com/stbridge/stb/pkg/db"
	"github.com/stbridge/stb/pkg/transport"
)

// Names of the built-in profiles.
const (
	// STB is STB's own format (dbsyncers.Default's types).
	STB = "stb"
	// GlobalHub is the multicluster global-hub agent's events
	// (dbsyncers.GlobalHub's types), decoded by transport.GlobalHub.
	GlobalHub = transport.GlobalHubFamily
)

// Profile is one wire profile: a family of bundle types and, but for STB's
// own format, which the reader decodes itself, how its events become
// bundles (its transport.Family).
type Profile struct {
	Name string
	// Help says in a few words what the profile reads, for --help.
	Help string
	// Syncers returns the profile's bundle types in priority order; they
	// are registered after those of the profiles listed before it.
	Syncers func() []dbsyncers.Syncer
	// Family, nil for stb, returns the mapping of the
	// profile's events onto its bundles; the reader gets a new one per
	// bridge.
	Family func() transport.Family
	// KeyFenced: the profile's bundles carry no hub-level version; each
	// row keeps its own fence. Its types take a constant version and
	// equal ones (bundle.TypeInfo.TakesEqual), so stb.bundle_versions
	// passes everything, and the real fence is per key in the profile's
	// tables. A hub delete removes such a type's version row instead of
	// leaving a tombstone, which would be at the constant version and so
	// refuse every later bundle of the hub for good, and a bridge's memory
	// does not fence the type after the delete: the hub's next bundle is
	// taken, as a newer incarnation of a hub is.
	KeyFenced bool
	// HubTables returns the tables holding the profile's rows of a hub
	// that a hub delete or reset must remove (or soft-delete, or mark:
	// db.HubTable) and would not find by itself (it finds the tables of
	// schema stb with a hub column); nil when there are none. The
	// global-hub profile declares the global hub's own tables here
	// (globalHubTables).
	HubTables func() []db.HubTable
}

// All returns every profile the bridge ships with, in the order their
// types are registered.
func All() []Profile {
	return []Profile{
		{Name: STB, Help: "STB's own bundles", Syncers: builtin(true, false)},
		{Name: GlobalHub, Help: "the multicluster global-hub agent's events", Syncers: dbsyncers.GlobalHub,
			Family: newGlobalHub, HubTables: globalHubTables},
		{Name: work.Name, Help: "OCM work agents' ManifestWork status events", Syncers: work.Syncers, Family: work.NewFamily,
			KeyFenced: true, HubTables: work.HubTables},
		{Name: cne.Profile, Help: "Cloud Native Events (O-RAN PTP/sync notifications)", Syncers: cne.Syncers, Family: cne.NewFamily,
			KeyFenced: true},
	}
}

// builtin returns the syncers of dbsyncers' own profiles.
func builtin(stb, globalHub bool) func() []dbsyncers.Syncer {
	return func() []dbsyncers.Syncer {
		reg, err := dbsyncers.ForProfiles(stb, globalHub)
		if err != nil {
			panic(err) // fixed lists; a programming error
		}
		var out []dbsyncers.Syncer
		for _, ti := range reg.Types() {
			s, _ := reg.Lookup(ti.Name)
			out = append(out, *s)
		}
		return out
	}
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
		names = append(names, p.typeNames()...)
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
			names = append(names, p.typeNames()...)
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
			s.KeyFenced = append(s.KeyFenced, p.typeNames()...)
		}
		if p.HubTables != nil {
			s.Tables = append(s.Tables, p.HubTables()...)
		}
	}
	return s
}

func (p Profile) typeNames() []string {
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
