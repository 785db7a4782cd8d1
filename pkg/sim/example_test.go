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
	fmt.Println("hub-001:", hub.Versions, len(hub.ManagedClusters), "clusters")
	// Output:
	// messages: 30 map[heartbeat:15 managedclusters:15]
	// hubs: [hub-001 hub-002 hub-003]
	// hub-001: map[heartbeat:1.9 managedclusters:1.10] 10 clusters
}
