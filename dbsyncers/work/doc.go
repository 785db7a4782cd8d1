// Package work is the ManifestWork status family (profile "work"): the
// status events OCM's work agents publish for each ManifestWork they apply
// (open-cluster-management-io/sdk-go pkg/cloudevents, the agent's
// ManifestBundleCodec), mapped onto bundles by Family and written by the
// syncer of one bundle type, work.status, into work.resource_status, one
// row per resource as a Maestro-like source reads it.
//
// Each event becomes one bundle of its cluster (the conflation unit); the
// bundle's version is constant, so the (hub, type) fence of
// stb.bundle_versions passes everything, and the real fence is per
// resource: the pair (resourceversion, sequenceid), strictly greater than
// the stored pair, compared by Merge when a unit folds a cluster's waiting
// events and by the write's ON CONFLICT … WHERE.
package work
