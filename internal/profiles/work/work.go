// Package work is the work profile: OCM work agents' ManifestWork status
// events (open-cluster-management sdk-go's work agent codec), written to
// work.resource_status by dbsyncers/work. It holds the profile's value
// for profiles.All and the profile's pieces outside the bridge's
// decoding: its simulated agent's flags, simulation, verification and
// demo (pkg/sim/work), and its status resync, both the command (`stb work
// resync`) and the start-up step (`stb run --work-resync-topic`).
package work

import (
	wf "github.com/stbridge/stb/dbsyncers/work"
	"github.com/stbridge/stb/internal/profiles/globalhub"
	"github.com/stbridge/stb/internal/profiles/profile"
	"github.com/stbridge/stb/internal/profiles/stb"
	simwork "github.com/stbridge/stb/pkg/sim/work"
)

// Name is the profile's name.
const Name = wf.Name

// ResyncFlag is `stb run`'s option of the start-up resync.
const ResyncFlag = "work-resync-topic"

// Profile returns the work profile.
func Profile() profile.Profile {
	return profile.Profile{
		Name: Name, Help: "OCM work agents' ManifestWork status events",
		Syncers: wf.Syncers, Family: wf.NewFamily, KeyFenced: true, HubTables: wf.HubTables,
		Agents: []profile.Agent{{
			Name: simwork.Agent, Help: "sends OCM work agents' ManifestWork statuses (read with --profiles …,work)",
			Bind:  bind,
			Bench: profile.Bench{CatchUpOnly: true, Profiles: []string{stb.Name, globalhub.Name, Name}, CatchUp: Name},
		}},
		Verify: verify,
		Startup: []profile.StartupStep{{Flag: ResyncFlag, Run: startupResync,
			Help: "with the work profile: at start-up, ask every cluster's work agent for the statuses that differ from the stored ones (status.resync_request on this topic; see stb work resync)"}},
	}
}
