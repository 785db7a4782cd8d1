package sim

import (
	"encoding/json"
	"fmt"
	"math/rand/v2"
	"strconv"
)

// Label keys the simulated clusters carry. LabelGeneration is the one that
// changes: it holds the round in which the cluster last changed, so a
// database holding an older snapshot shows in it.
const (
	LabelGeneration = "generation"
	LabelVendor     = "vendor"
	LabelCloud      = "cloud"
	LabelName       = "name"
)

// clouds are the values of LabelCloud, picked once per cluster.
var clouds = [...]string{"Amazon", "Azure", "Google", "IBM"}

// cluster is one simulated ManagedCluster of a hub.
type cluster struct {
	name   string
	uid    string
	labels map[string]string
	// raw caches the encoded object; nil after a change. Most clusters do
	// not change in a round, so most of a snapshot is not re-encoded.
	raw json.RawMessage
}

// newCluster returns cluster number n of hub, created in round.
func newCluster(rng *rand.Rand, hub string, n, round int) *cluster {
	name := fmt.Sprintf("%s-cluster-%03d", hub, n)
	return &cluster{
		name: name,
		uid:  newUUID(rng),
		labels: map[string]string{
			LabelName:       name,
			LabelVendor:     "OpenShift",
			LabelCloud:      clouds[rng.IntN(len(clouds))],
			LabelGeneration: strconv.Itoa(round),
		},
	}
}

// touch records a change of the cluster in round.
func (c *cluster) touch(round int) {
	c.labels[LabelGeneration] = strconv.Itoa(round)
	c.raw = nil
}

// managedClusterObject is the part of a Kubernetes ManagedCluster the
// simulator fills in; field names are the Kubernetes ones.
type managedClusterObject struct {
	APIVersion string `json:"apiVersion"`
	Kind       string `json:"kind"`
	Metadata   struct {
		Name   string            `json:"name"`
		UID    string            `json:"uid"`
		Labels map[string]string `json:"labels"`
	} `json:"metadata"`
	Spec struct {
		HubAcceptsClient bool `json:"hubAcceptsClient"`
	} `json:"spec"`
	Status struct {
		Conditions []condition `json:"conditions"`
	} `json:"status"`
}

type condition struct {
	Type   string `json:"type"`
	Status string `json:"status"`
}

// object returns the cluster as a ManagedCluster JSON object.
func (c *cluster) object() (json.RawMessage, error) {
	if c.raw != nil {
		return c.raw, nil
	}
	var o managedClusterObject
	o.APIVersion = "cluster.open-cluster-management.io/v1"
	o.Kind = "ManagedCluster"
	o.Metadata.Name = c.name
	o.Metadata.UID = c.uid
	o.Metadata.Labels = c.labels // encoding/json sorts map keys: stable output
	o.Spec.HubAcceptsClient = true
	o.Status.Conditions = []condition{{Type: "ManagedClusterConditionAvailable", Status: "True"}}
	raw, err := json.Marshal(&o)
	if err != nil {
		return nil, fmt.Errorf("encode managed cluster %s: %w", c.name, err)
	}
	c.raw = raw
	return raw, nil
}

// newUUID returns a random (version 4) UUID drawn from rng, so that
// cluster ids follow from the seed.
func newUUID(rng *rand.Rand) string {
	var b [16]byte
	hi, lo := rng.Uint64(), rng.Uint64()
	for i := range 8 {
		b[i] = byte(hi >> (56 - 8*i))
		b[8+i] = byte(lo >> (56 - 8*i))
	}
	b[6] = b[6]&0x0f | 0x40 // version 4
	b[8] = b[8]&0x3f | 0x80 // RFC 4122 variant
	return fmt.Sprintf("%x-%x-%x-%x-%x", b[0:4], b[4:6], b[6:8], b[8:10], b[10:16])
}
