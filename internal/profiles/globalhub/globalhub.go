// Package globalhub is the globalhub profile: the multicluster global-hub
// agent's events (stolostron/multicluster-global-hub), decoded by
// transport.GlobalHub into dbsyncers.GlobalHub's types. It holds the
// profile's value for profiles.All and its simulated agent: the hubs'
// simulation (internal/profiles/stb's, pkg/sim) with the agent's own
// flags, and how the bench reads it. The tables a hub delete or reset
// touches are declared in internal/profiles (globalHubTables), which
// sets them on this value.
package globalhub

import (
	"flag"
	"fmt"
	"time"

	"github.com/confluentinc/confluent-kafka-go/v2/kafka"

	"github.com/stbridge/stb/dbsyncers"
	"github.com/stbridge/stb/internal/profiles/profile"
	"github.com/stbridge/stb/internal/profiles/stb"
	"github.com/stbridge/stb/pkg/bundle"
	"github.com/stbridge/stb/pkg/sim"
	"github.com/stbridge/stb/pkg/transport"
)

// Name is the profile's name: its family's (transport.GlobalHub.Name).
const Name = transport.GlobalHubFamily

// Profile returns the globalhub profile, without its HubTables.
func Profile() profile.Profile {
	return profile.Profile{
		Name: Name, Help: "the multicluster global-hub agent's events", Syncers: dbsyncers.GlobalHub,
		// Its runs are its own per bridge (transport.Stateful).
		Family: func() transport.Family { return transport.NewGlobalHub() },
		Agents: []profile.Agent{{
			Name: sim.AgentGlobalHub, Help: "sends the multicluster global-hub agent's events (read with --profiles globalhub)",
			Bind: bind, TopicPerHub: true,
			Bench: profile.Bench{CatchUpOnly: true, Profiles: []string{stb.Name, Name}, Scale: &scaleTest,
				Decoder: func() func(*kafka.Message, transport.Rules, time.Time) (*bundle.Bundle, *transport.Reject) {
					return transport.NewGlobalHub().Decode
				}},
		}},
		// The hubs' simulation writes the global-hub agents' expected
		// state too: stb's Verify reads it.
	}
}

// bind registers the global-hub agent's flags and returns its commands:
// the hubs' simulation with them.
func bind(fs *flag.FlagSet) profile.Commands {
	gh := &sim.GlobalHubConfig{}
	fs.StringVar(&gh.SendMode, "event-send-mode", sim.SendModeBatch, "with --agent globalhub: how the event types are sent, as the agent's --event-send-mode: batch (data an array), single (a CloudEvent per event), or mixed (every other hub single)")
	fs.IntVar(&gh.ResyncEvery, "gh-resync-every", 0, fmt.Sprintf("with --agent globalhub: rounds between periodic resyncs of managedcluster and policy.localspec, upstream every 6 h (0 = default %d, negative = only when the agent starts)", sim.DefaultResyncEvery))
	fs.IntVar(&gh.FrameBytes, "gh-frame-bytes", 0, fmt.Sprintf("with --agent globalhub: largest generic bundle frame and event batch in bytes (0 = upstream's %d)", sim.DefaultFrameBytes))
	fs.IntVar(&gh.ChunkBytes, "gh-chunk-bytes", 0, fmt.Sprintf("with --agent globalhub: data above this many bytes is sent in chunks (0 = upstream's %d)", sim.DefaultChunkBytes))
	fs.DurationVar(&gh.ClockSkew, "gh-clock-skew", 0, fmt.Sprintf("with --agent globalhub: how far a restarted agent's clock may be behind the run before's (0 = default %s, negative = none)", sim.DefaultClockSkew))
	return profile.Commands{Simulate: stb.Simulate, Sim: func(s *sim.Config) { s.GlobalHub = *gh }}
}

// scaleTest is upstream's own published scale test, Scenario 7 of
// multicluster-global-hub doc/simulation/scenario ("Manage 3,000 clusters
// and 500 policies", run 2026-03-04): 10 hubs of 300 managed clusters, 50
// root policies each (500), 135,000 replicated policies (the first hub
// keeps none), NonCompliant at first, then one rotation to Compliant.
var scaleTest = sim.Config{
	Hubs: 10, Clusters: 300, Policies: 50, Generations: 2, Agent: sim.AgentGlobalHub,
	RestartProbability: -1, ChangeProbability: -1, ChurnProbability: -1, PlacementProbability: -1,
	ComplianceEvery: 1, GlobalHub: sim.GlobalHubConfig{Rotate: true},
}
