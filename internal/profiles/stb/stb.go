// Package stb is the stb profile: STB's own status bundles
// (dbsyncers.Default's types), sent by STB's agents and the hub-of-hubs
// agents. It holds the profile's value for profiles.All and the
// simulation its agents run (pkg/sim), which the global-hub agent shares
// (internal/profiles/globalhub), with its verification (pkg/verify).
package stb

import (
	"context"
	"encoding/json"
	"flag"
	"fmt"
	"os"

	"github.com/jackc/pgx/v5/pgxpool"

	"github.com/stbridge/stb/dbsyncers"
	"github.com/stbridge/stb/internal/profiles/profile"
	"github.com/stbridge/stb/pkg/sim"
	"github.com/stbridge/stb/pkg/verify"
)

// Name is the profile's name.
const Name = "stb"

// Profile returns the stb profile.
func Profile() profile.Profile {
	commands := func(*flag.FlagSet) profile.Commands { return profile.Commands{Simulate: Simulate} }
	return profile.Profile{
		Name: Name, Help: "STB's own bundles", Syncers: Syncers(true, false),
		Agents: []profile.Agent{
			{Name: sim.AgentSTB, Help: "lists every policy in a compliance report", Bind: commands},
			{Name: sim.AgentHoH, Help: "leaves out fully compliant policies, as the hub-of-hubs agents do", Bind: commands},
		},
		Verify: Verify,
	}
}

// Syncers returns the syncers of dbsyncers' own profiles: STB's and,
// with globalHub, the global-hub agent's.
func Syncers(stb, globalHub bool) func() []dbsyncers.Syncer {
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

// Verify is `stb verify` of the hubs' simulation (pkg/sim: STB's, the
// hub-of-hubs and the global-hub agents): it claims an expected-state
// file that names no agent of its own, as the status families' do.
func Verify(ctx context.Context, pool *pgxpool.Pool, path string) (bool, profile.Verdict, error) {
	data, err := os.ReadFile(path)
	if err != nil {
		return false, profile.Verdict{}, fmt.Errorf("read expected state: %w", err)
	}
	var head struct {
		Agent string `json:"agent"`
	}
	if json.Unmarshal(data, &head) == nil && head.Agent != "" {
		return false, profile.Verdict{}, nil
	}
	exp, err := sim.ReadExpected(path)
	if err != nil {
		return true, profile.Verdict{}, err
	}
	rep, err := verify.Verify(ctx, pool, exp)
	if err != nil {
		return true, profile.Verdict{}, err
	}
	return true, profile.Verdict{OK: rep.OK(), Summary: rep.Summary(),
		Matched: fmt.Sprintf("%d hubs, %d versions, %d managed clusters match", rep.Hubs, rep.Versions, rep.Clusters)}, nil
}
