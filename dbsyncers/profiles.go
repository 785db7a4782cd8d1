package dbsyncers

import "fmt"

// The wire profiles: sets of bundle types that a bridge reads side by side
// (README "Wire format"). Their type prefixes cannot be confused, so a
// bridge reads both by default.
const (
	// ProfileSTB is STB's own format (Default's types).
	ProfileSTB = "stb"
	// ProfileGlobalHub is the multicluster global-hub agent's events
	// (GlobalHub's types).
	ProfileGlobalHub = "globalhub"
)

// DefaultProfiles returns the profiles read when none are named: both.
func DefaultProfiles() []string { return []string{ProfileSTB, ProfileGlobalHub} }

// Profiles says which wire profiles are on.
type Profiles struct {
	STB, GlobalHub bool
}

// ParseProfiles reads profile names (repeats allowed); at least one
// profile must be named, and only known ones.
func ParseProfiles(names []string) (Profiles, error) {
	var p Profiles
	for _, n := range names {
		switch n {
		case ProfileSTB:
			p.STB = true
		case ProfileGlobalHub:
			p.GlobalHub = true
		default:
			return Profiles{}, fmt.Errorf("unknown profile %q (want %s, %s or both)", n, ProfileSTB, ProfileGlobalHub)
		}
	}
	if !p.STB && !p.GlobalHub {
		return Profiles{}, fmt.Errorf("want %s, %s or both", ProfileSTB, ProfileGlobalHub)
	}
	return p, nil
}

// Registry returns the registry of the bundle types of the profiles that
// are on (ForProfiles).
func (p Profiles) Registry() (*Registry, error) { return ForProfiles(p.STB, p.GlobalHub) }
