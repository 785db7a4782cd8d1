// Package work simulates OCM work agents reporting ManifestWork statuses
// (the bridge's profile "work", dbsyncers/work) and verifies what the
// bridge stored: clusters with resources from a few sources, status
// updates and new generations, agent restarts that send every status
// again, duplicates, late copies of older statuses and deletes. The
// expected final state is the fence's: per resource, the status of the
// greatest (resourceversion, sequenceid) sent.
package work
