package sim_test

import (
	"context"
	"fmt"

	"github.com/stbridge/stb/pkg/sim"
)

func ExampleRun() {
	// A real caller adapts the Kafka transport's publisher; this one
	// drops every message.
	pub := sim.PublisherFunc(func(context.Context, sim.Message) error { return nil })
	cfg := sim.Config{Hubs: 3, Clusters: 10, Generations: 5, Seed: 1}
	exp, err := sim.Run(context.Background(), cfg, pub, nil)
	if err != nil {
		fmt.Println(err)
		return
	}
	fmt.Println("messages:", exp.Messages, exp.MessagesByType)
	fmt.Println("hubs:", exp.HubNames())
	hub := exp.Hubs["hub-001"]
	fmt.Println("hub-001 versions:", hub.Versions)
	fmt.Println("hub-001 deltas up to:", hub.VersionsAtMost)
	fmt.Println("hub-001:", len(hub.ManagedClusters), "clusters,", len(hub.Compliance), "placed policies,",
		hub.ComplianceRows(), "compliance rows,", hub.PolicyEvents(), "events")
	// Output:
	// messages: 67 map[clusterspolicies:7 compliance:7 compliancedelta:8 heartbeat:15 managedclusters:15 policyevents:15]
	// hubs: [hub-001 hub-002 hub-003]
	// hub-001 versions: map[clusterspolicies:1.20 compliance:1.21 heartbeat:1.18 managedclusters:1.19 policyevents:1.22]
	// hub-001 deltas up to: map[compliancedelta:1.16]
	// hub-001: 9 clusters, 4 placed policies, 23 compliance rows, 15 events
}
