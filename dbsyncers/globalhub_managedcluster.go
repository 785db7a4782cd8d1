package dbsyncers

import (
	"encoding/json"
	"fmt"
	"slices"

	"github.com/stbridge/stb/pkg/bundle"
	"github.com/stbridge/stb/pkg/jsonscan"
)

// ClusterIDClaim is the cluster claim the global-hub agent identifies a
// managed cluster by (status.clusterClaims[].name); its value is the
// cluster's id, which deletions and resyncs refer to.
const ClusterIDClaim = "id.k8s.io"

// ObjectRef names an object a global-hub generic bundle deletes or lists
// in a resync: {"id","ns","name"}, each left out when empty.
type ObjectRef struct {
	ID, Namespace, Name string
}

// GlobalHubClustersPayload is the decoded data of a global-hub
// managedcluster event, a generic bundle {"create","update","delete",
// "resync","resync_metadata"}: a hybrid of deltas (create, update, delete)
// and, when resync_metadata is given, a complete list of the hub's
// clusters.
type GlobalHubClustersPayload struct {
	// Upserts are the clusters of resync, create and update, in that
	// order, sorted by name, one per name (the last given wins).
	Upserts []ManagedCluster
	// Deletes are the clusters of delete.
	Deletes []ObjectRef
	// Resync is set when resync_metadata lists at least one cluster: every
	// other cluster of the hub is gone. Kept lists its ids and names.
	Resync bool
	Kept   []ObjectRef
}

// GlobalHubManagedCluster returns the syncer of managedcluster events. They
// are a stream (every event written, in order, none conflated): a create
// or delete left out would be lost, as the agent sends each change once.
// The version fence still makes a replay write nothing.
func GlobalHubManagedCluster() Syncer {
	return Syncer{
		TypeInfo: bundle.TypeInfo{Name: GHManagedCluster, Kind: bundle.Stream},
		Decode:   decodeGlobalHubClusters,
		Plan:     planGlobalHubClusters,
	}
}

// decodeGlobalHubClusters reads the generic bundle. Every member may be
// left out or null (the agent omits empty ones); members it does not know
// are ignored. Each cluster object must have metadata.name; its id is the
// value of its id.k8s.io cluster claim (” without one). A deleted or kept
// reference must carry an id or a name.
func decodeGlobalHubClusters(data []byte) (any, error) {
	g, err := decodeGenericBundle(GHManagedCluster, data, decodeGHCluster)
	if err != nil {
		return nil, err
	}
	return &GlobalHubClustersPayload{
		Upserts: normalize(slices.Concat(g.resync, g.create, g.update)),
		Deletes: g.deletes,
		Resync:  len(g.kept) > 0,
		Kept:    g.kept,
	}, nil
}

// genericBundle is a global-hub generic bundle of objects of type T
// (pkg/bundle/generic/generic_bundle.go: {"create","update","delete",
// "resync","resync_metadata"}, each member omitted when empty).
type genericBundle[T any] struct {
	resync, create, update []T
	deletes, kept          []ObjectRef
}

// decodeGenericBundle reads a generic bundle of typ, each object with
// object; members it does not know are ignored, and a member given twice
// replaces the first.
func decodeGenericBundle[T any](typ string, data []byte, object func(*jsonscan.Decoder) (T, error)) (genericBundle[T], error) {
	var g genericBundle[T]
	if jsonscan.IsNull(data) {
		return g, badPayload(fmt.Errorf("%s: %w, got null", typ, errNotObject))
	}
	d := jsonscan.NewDecoder(data)
	err := d.Object(func(name []byte) error {
		field := string(name)
		switch field {
		case "resync":
			return decodeObjects(d, field, &g.resync, object)
		case "create":
			return decodeObjects(d, field, &g.create, object)
		case "update":
			return decodeObjects(d, field, &g.update, object)
		case "delete":
			return decodeObjectRefs(d, field, &g.deletes)
		case "resync_metadata":
			return decodeObjectRefs(d, field, &g.kept)
		}
		return nil
	})
	if err == nil {
		err = d.Done()
	}
	if err != nil {
		return g, badPayload(fmt.Errorf("%s: %w", typ, err))
	}
	return g, nil
}

// decodeObjects reads a list of objects into *dst (replacing what an
// earlier member of the same name gave).
func decodeObjects[T any](d *jsonscan.Decoder, field string, dst *[]T, object func(*jsonscan.Decoder) (T, error)) error {
	list := []T{}
	err := d.Array(func() error {
		o, err := object(d)
		if err != nil {
			return fmt.Errorf("%s[%d]: %w", field, len(list), err)
		}
		list = append(list, o)
		return nil
	})
	if err != nil {
		return err
	}
	*dst = list
	return nil
}

// decodeGHCluster reads one ManagedCluster, keeping it whole.
func decodeGHCluster(d *jsonscan.Decoder) (ManagedCluster, error) {
	var c ManagedCluster
	obj, err := d.Span(func() error {
		return d.Object(func(field []byte) error {
			switch string(field) {
			case "metadata":
				return d.Object(func(field []byte) error {
					if string(field) == "name" {
						return setString(d, &c.Name, "metadata.name")
					}
					return nil
				})
			case "status":
				return d.Object(func(field []byte) error {
					if string(field) != "clusterClaims" {
						return nil
					}
					return d.Array(func() error {
						var name, value string
						err := d.Object(func(field []byte) error {
							switch string(field) {
							case "name":
								return setString(d, &name, "status.clusterClaims[].name")
							case "value":
								return setString(d, &value, "status.clusterClaims[].value")
							}
							return nil
						})
						if err == nil && name == ClusterIDClaim {
							c.UID = value
						}
						return err
					})
				})
			}
			return nil
		})
	})
	if err != nil {
		return c, err
	}
	if err := checkName("metadata.name", c.Name); err != nil {
		return c, err
	}
	if err := checkText(ClusterIDClaim, c.UID); err != nil {
		return c, err
	}
	c.Object = obj
	return c, nil
}

// decodeObjectRefs reads a list of {"id","ns","name"} into *dst.
func decodeObjectRefs(d *jsonscan.Decoder, field string, dst *[]ObjectRef) error {
	list := []ObjectRef{}
	i := 0
	err := d.Array(func() error {
		var r ObjectRef
		err := d.Object(func(name []byte) error {
			switch string(name) {
			case "id":
				return setString(d, &r.ID, "id")
			case "ns":
				return setString(d, &r.Namespace, "ns")
			case "name":
				return setString(d, &r.Name, "name")
			}
			return nil
		})
		if err == nil && r.ID == "" && r.Name == "" {
			err = fmt.Errorf("neither id nor name")
		}
		if err == nil {
			err = checkText("id", r.ID)
		}
		if err == nil {
			err = checkText("name", r.Name)
		}
		if err != nil {
			return fmt.Errorf("%s[%d]: %w", field, i, err)
		}
		list = append(list, r)
		i++
		return nil
	})
	if err != nil {
		return err
	}
	*dst = list
	return nil
}

// Statements of the global-hub managedcluster handler, sent as one batch:
// the upserts (upsertClustersSQL, shared with managedclusters), then the
// deletions by id or, for a reference without one, by name, then, for a
// resync, the deletion of every cluster of the hub the resync does not
// list (by id or by name). This is the agent's manager's order.
const (
	deleteGHClustersSQL = `
DELETE FROM status.managed_clusters AS t
WHERE t.hub = $1
  AND (t.cluster_id = ANY($2::text[]) OR t.cluster_name = ANY($3::text[]))`

	pruneGHClustersSQL = `
DELETE FROM status.managed_clusters AS t
WHERE t.hub = $1
  AND NOT EXISTS (SELECT 1 FROM unnest($2::text[]) AS s(id) WHERE s.id = t.cluster_id AND s.id <> '')
  AND NOT EXISTS (SELECT 1 FROM unnest($3::text[]) AS s(name) WHERE s.name = t.cluster_name)`
)

// planGlobalHubClusters applies managedcluster events, in order.
func planGlobalHubClusters(bundles []*bundle.Bundle) (Write, error) {
	var stmts []Statement
	for _, b := range bundles {
		p, err := payloadOf[GlobalHubClustersPayload](b)
		if err != nil {
			return Write{}, err
		}
		stmts = append(stmts, globalHubClusterStatements(b.Hub, p)...)
	}
	return Write{Statements: stmts}, nil
}

func globalHubClusterStatements(hub string, p *GlobalHubClustersPayload) []Statement {
	var stmts []Statement
	if up := normalize(p.Upserts); len(up) > 0 {
		names := make([]string, len(up))
		ids := make([]string, len(up))
		objects := make([]json.RawMessage, len(up))
		for i, c := range up {
			names[i], ids[i], objects[i] = c.Name, c.UID, c.Object
		}
		stmts = append(stmts, Statement{What: "upsert managed clusters", SQL: upsertClustersSQL, Args: []any{hub, names, ids, objects}})
	}
	if len(p.Deletes) > 0 {
		ids, names := refKeys(p.Deletes, true)
		stmts = append(stmts, Statement{What: "delete managed clusters", SQL: deleteGHClustersSQL, Args: []any{hub, ids, names}})
	}
	if p.Resync {
		ids, names := refKeys(p.Kept, false)
		stmts = append(stmts, Statement{What: "delete managed clusters a resync leaves out", SQL: pruneGHClustersSQL, Args: []any{hub, ids, names}})
	}
	return stmts
}

// refKeys returns the ids and the names of refs. With byIDFirst a
// reference that has an id contributes only its id (a deletion names the
// cluster by id and falls back to the name); otherwise both.
func refKeys(refs []ObjectRef, byIDFirst bool) (ids, names []string) {
	ids, names = []string{}, []string{}
	for _, r := range refs {
		if r.ID != "" {
			ids = append(ids, r.ID)
			if byIDFirst {
				continue
			}
		}
		if r.Name != "" {
			names = append(names, r.Name)
		}
	}
	return ids, names
}
