package sim

import (
	"encoding/json"
	"fmt"
	"hash/fnv"
	"maps"
	"math/rand/v2"
	"slices"
)

// ghManagedBy is the annotation the agent's tweak merges into every
// ManagedCluster it sends (the managedcluster syncer, id 17558413732).
const ghManagedBy = "global-hub.open-cluster-management.io/managed-by"

// ghManagedCluster is a ManagedCluster as the agent sends it: the tweak
// adds ghManagedBy and drops managedFields; the cluster is known by its
// id.k8s.io claim, not by its metadata.uid.
type ghManagedCluster struct {
	APIVersion string `json:"apiVersion"`
	Kind       string `json:"kind"`
	Metadata   struct {
		Name        string            `json:"name"`
		UID         string            `json:"uid"`
		Labels      map[string]string `json:"labels"`
		Annotations map[string]string `json:"annotations"`
	} `json:"metadata"`
	Spec struct {
		HubAcceptsClient bool `json:"hubAcceptsClient"`
	} `json:"spec"`
	Status struct {
		ClusterClaims []ghClaim   `json:"clusterClaims"`
		Conditions    []condition `json:"conditions"`
	} `json:"status"`
}

type ghClaim struct {
	Name  string `json:"name"`
	Value string `json:"value"`
}

// ghMeta is generic.ObjectMetadata (generic_bundle.go @9c09571): how
// delete and resync_metadata name an object.
type ghMeta struct {
	ID        string `json:"id,omitempty"`
	Namespace string `json:"ns,omitempty"`
	Name      string `json:"name,omitempty"`
}

// ghClusterSeen is what the agent last reported of a cluster.
type ghClusterSeen struct{ generation, id string }

// clusterObject returns c as the agent sends it. Its metadata is {id: the
// claim, name}: the managedcluster syncer's metadataFunc; a cluster has no
// namespace.
func (a *ghAgent) clusterObject(c *cluster) (ghObject, error) {
	var o ghManagedCluster
	o.APIVersion = "cluster.open-cluster-management.io/v1"
	o.Kind = "ManagedCluster"
	o.Metadata.Name = c.name
	o.Metadata.UID = a.clusters.k8sUID(c)
	o.Metadata.Labels = c.labels
	o.Metadata.Annotations = map[string]string{ghManagedBy: a.hub}
	o.Spec.HubAcceptsClient = true
	o.Status.ClusterClaims = []ghClaim{{Name: ClusterIDClaim, Value: c.uid}}
	o.Status.Conditions = []condition{{Type: "ManagedClusterConditionAvailable", Status: "True"}}
	data, err := json.Marshal(&o)
	if err != nil {
		return ghObject{}, fmt.Errorf("encode managed cluster %s: %w", c.name, err)
	}
	meta, err := json.Marshal(ghMeta{ID: c.uid, Name: c.name})
	if err != nil {
		return ghObject{}, err
	}
	return ghObject{key: c.name, data: data, meta: meta}, nil
}

// k8sUID returns the metadata.uid of c, another UUID than its claim
// (which the bridge must key it by), drawn from a source seeded with the
// claim so that it follows from the seed without a draw of the model's.
func (s *managedClusters) k8sUID(c *cluster) string {
	h := fnv.New64a()
	h.Write([]byte(c.uid))
	return newUUID(rand.New(rand.NewPCG(h.Sum64(), 0x6b38732d756964)))
}

// sendClusters is one tick of the managedcluster emitter: the clusters
// that came or changed since the last tick are updates, those gone
// deletes; then a resync when due, and the send.
func (a *ghAgent) sendClusters() error {
	r := a.run
	em := r.clusters
	current := make(map[string]ghClusterSeen, len(a.clusters.clusters))
	for _, c := range a.clusters.clusters {
		current[c.name] = ghClusterSeen{generation: c.labels[LabelGeneration], id: c.uid}
		if r.clusterView == nil { // the agent's start: the resync has them all
			continue
		}
		if was, ok := r.clusterView[c.name]; ok && was.generation == current[c.name].generation {
			continue
		}
		o, err := a.clusterObject(c)
		if err != nil {
			return err
		}
		em.update(o)
	}
	for _, name := range slices.Sorted(maps.Keys(r.clusterView)) {
		if _, ok := current[name]; ok {
			continue
		}
		meta, err := json.Marshal(ghMeta{ID: r.clusterView[name].id, Name: name})
		if err != nil {
			return err
		}
		em.delete(ghObject{key: name, meta: meta})
	}
	r.clusterView = current
	return a.tickObjects(TypeGHManagedCluster, em, a.resyncDue())
}

// allObjects returns every object of an object type, for a resync.
func (a *ghAgent) allObjects(typ string) ([]ghObject, error) {
	switch typ {
	case TypeGHManagedCluster:
		objs := make([]ghObject, 0, len(a.clusters.clusters))
		for _, c := range a.clusters.clusters {
			o, err := a.clusterObject(c)
			if err != nil {
				return nil, err
			}
			objs = append(objs, o)
		}
		return objs, nil
	case TypeGHLocalSpec:
		if a.policies == nil {
			return nil, nil
		}
		objs := make([]ghObject, 0, len(a.policies.policies))
		for _, p := range a.policies.policies {
			o, err := a.spec.object(p)
			if err != nil {
				return nil, err
			}
			objs = append(objs, o)
		}
		return objs, nil
	}
	return nil, fmt.Errorf("%s is not an object type", typ)
}

// tickObjects ends a tick of an object emitter whose changes were given:
// a resync if asked for, the send, and the frames to the producer.
func (a *ghAgent) tickObjects(typ string, em *ghObjectEmitter, resync bool) error {
	if resync {
		objs, err := a.allObjects(typ)
		if err != nil {
			return err
		}
		if len(objs) > 0 {
			a.stats.Resyncs++
		}
		em.resync(objs)
	}
	em.send()
	a.sendFrames(typ, em)
	return nil
}

// resyncObjects is a periodic resync outside the rounds (finish).
func (a *ghAgent) resyncObjects(typ string) error {
	em := a.run.clusters
	if typ == TypeGHLocalSpec {
		em = a.run.policies
	}
	return a.tickObjects(typ, em, true)
}

// sendFrames hands an object emitter's frames to the producer, losing
// some frames of changes (Config.LoseProbability): the agent goes on as if
// they had been sent, and only the resync_metadata frame of its next
// resync puts the bridge right again.
func (a *ghAgent) sendFrames(typ string, em *ghObjectEmitter) {
	for _, f := range em.take() {
		if f.changes && a.loseP > 0 && a.wire.Float64() < a.loseP {
			a.stats.Lost++
			a.run.dirty[typ] = true
			continue
		}
		if !f.changes {
			a.stats.ResyncFrames++
		}
		a.send(ghEvent{typ: typ, version: f.version, data: f.data})
		if f.metadata {
			a.run.dirty[typ] = false
		}
	}
}
