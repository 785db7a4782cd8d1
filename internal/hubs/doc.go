// Package hubs is the hub lifecycle of a bridge (README "Hub lifecycle"):
// it applies hub deletes and resets (stb hub delete|reset, the console,
// --hub-delete-after) to what the bridge holds in memory, marks hubs
// inactive when their heartbeats stop, deletes those inactive for too
// long, and counts hubs by state for stb_hubs and the console.
//
// A Lifecycle changes the bridge's memory only through the Memory
// interface (forget a hub, restore stored versions), never through the
// bridge itself. Its Run(ctx) returns only once its one goroutine is done,
// the shape of franz-go's loops with a quit/done pair; its gauge is a
// scrape-time collector (client_golang's example_clustermanager_test.go).
package hubs
