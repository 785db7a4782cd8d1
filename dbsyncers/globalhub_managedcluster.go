package dbsyncers

import (
	"encoding/json"
	"fmt"
	"slices"
	"strings"

	"github.com/stbridge/stb/pkg/bundle"
	"github.com/stbridge/stb/pkg/jsonscan"
)

// ClusterIDClaim is the cluster claim the global-hub agent identifies a
// managed cluster by (status.clusterClaims[].name); its value is the
// cluster's id, status.managed_clusters.cluster_id, which deletions and
// resyncs refer to (upstream: constants.ClusterIdClaimName).
const ClusterIDClaim = "id.k8s.io"

// ObjectRef names an object a global-hub generic bundle deletes or lists
// in a resync: {"id","ns","name"}, each left out when empty
// (pkg/bundle/generic/generic_bundle.go, ObjectMetadata).
type ObjectRef struct {
	ID, Namespace, Name string
}

// GHCluster is one ManagedCluster of a global-hub managedcluster event:
// its id (the value of its first id.k8s.io cluster claim, "" without
// one, as a UUID in lower case), its name, and the object as it came,
// stored as the row's payload.
type GHCluster struct {
	ID, Name string
	Object   json.RawMessage
}

// GlobalHubClustersPayload is the decoded data of a global-hub
// managedcluster event, a generic bundle {"create","update","delete",
// "resync","resync_metadata"}: a hybrid of deltas (create, update, delete)
// and, when resync_metadata is given, the complete list of the hub's
// clusters.
type GlobalHubClustersPayload struct {
	// Upserts are the clusters of resync, create and update that have an
	// id, sorted by id, one per id (the last given wins: update after
	// create after resync, upstream's order).
	Upserts []GHCluster
	// Skipped names the clusters without an id.k8s.io claim, which
	// upstream's manager skips ("has no cluster claim id, skip").
	Skipped []string
	// Deletes are the references of delete.
	Deletes []ObjectRef
	// Resync is set when resync_metadata lists at least one cluster: every
	// other cluster of the hub is gone. Kept lists its references.
	Resync bool
	Kept   []ObjectRef
}

// GlobalHubManagedCluster returns the syncer of managedcluster events into
// status.managed_clusters (manager/pkg/status/handlers/managedcluster/
// managedcluster_handler.go). They are a stream (every event written, in
// order, none conflated): a create or delete left out would be lost, as
// the agent sends each change once. The version fence still makes a
// replay write nothing.
func GlobalHubManagedCluster() Syncer {
	return Syncer{
		TypeInfo: bundle.TypeInfo{Name: GHManagedCluster, Kind: bundle.Stream},
		Decode:   decodeGlobalHubClusters,
		Plan:     planGlobalHubClusters,
	}
}

// decodeGlobalHubClusters reads the generic bundle. Every member may be
// left out or null (the agent omits empty ones); members it does not know
// are ignored. Each cluster object must have metadata.name. A deleted or
// kept reference must carry an id or a name.
//
// An id that is not a UUID, in a cluster claim or in a deletion, is a bad
// payload, dead-lettered with a message that says so: status.
// managed_clusters.cluster_id is a uuid, and upstream's insert (or
// delete) with it fails its whole batch, which its manager then retries
// for ever. The agent sends the claim the hub's ClusterClaim controller
// sets, always a UUID. Ids of resync_metadata are only compared (upstream:
// FoundMetadataById, by string): one that is not a UUID can match no
// cluster and is left out.
func decodeGlobalHubClusters(data []byte) (any, error) {
	g, err := decodeGenericBundle(GHManagedCluster, data, decodeGHCluster)
	if err != nil {
		return nil, err
	}
	p := &GlobalHubClustersPayload{Deletes: g.deletes, Resync: len(g.kept) > 0, Kept: g.kept}
	for _, c := range slices.Concat(g.resync, g.create, g.update) {
		if c.ID == "" {
			p.Skipped = append(p.Skipped, c.Name)
			continue
		}
		p.Upserts = append(p.Upserts, c)
	}
	p.Upserts = uniqueClusters(p.Upserts)
	for i, r := range p.Deletes {
		if r.ID == "" {
			continue
		}
		if p.Deletes[i].ID, err = checkUUID(fmt.Sprintf("delete[%d].id", i), r.ID); err != nil {
			return nil, badPayload(fmt.Errorf("%s: %w", GHManagedCluster, err))
		}
	}
	return p, nil
}

// uniqueClusters returns clusters sorted by id, one per id, the last given
// winning: one INSERT ... ON CONFLICT may not touch a row twice, and a
// fixed key order keeps two hubs' writers (a cluster moving between them)
// from deadlocking. It returns clusters itself when that is already so (a
// decoded payload), a new slice otherwise: a bundle's payload must not
// change.
func uniqueClusters(clusters []GHCluster) []GHCluster {
	sorted := true
	for i := 1; i < len(clusters) && sorted; i++ {
		sorted = clusters[i-1].ID < clusters[i].ID
	}
	if sorted {
		return clusters
	}
	out := slices.Clone(clusters)
	// Stable, so equal ids keep their order and the last one wins.
	slices.SortStableFunc(out, func(a, b GHCluster) int { return strings.Compare(a.ID, b.ID) })
	n := 0
	for i := range out {
		if i+1 < len(out) && out[i+1].ID == out[i].ID {
			continue
		}
		out[n] = out[i]
		n++
	}
	clear(out[n:])
	return out[:n]
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

// decodeGHCluster reads one ManagedCluster, keeping it whole. Its id is
// the value of the FIRST status.clusterClaims entry named id.k8s.io, as
// upstream's utils.GetClusterClaimID (pkg/utils/object.go) returns it;
// a cluster whose first such claim has an empty value has no id.
func decodeGHCluster(d *jsonscan.Decoder) (GHCluster, error) {
	var c GHCluster
	found := false
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
						if err == nil && name == ClusterIDClaim && !found {
							found, c.ID = true, value
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
	if c.ID != "" {
		if c.ID, err = checkUUID("status.clusterClaims "+ClusterIDClaim+" of "+truncateForError(c.Name), c.ID); err != nil {
			return c, err
		}
	}
	if err := checkJSONText("cluster "+truncateForError(c.Name), obj); err != nil {
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
		for _, f := range []struct{ name, v string }{{"id", r.ID}, {"ns", r.Namespace}, {"name", r.Name}} {
			if err == nil {
				err = checkText(f.name, f.v)
			}
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

// keptIDs returns the ids of a resync's references that are UUIDs, in
// the form the database prints them: upstream's FoundMetadataById matches
// a stored cluster_id by id alone, and another string can match none.
func keptIDs(refs []ObjectRef) []string {
	ids := []string{}
	for _, r := range refs {
		if id, ok := canonicalUUID(r.ID); ok {
			ids = append(ids, id)
		}
	}
	return ids
}

// Statements of the managedcluster handler, sent as one batch in upstream's
// order (managedcluster_handler.go, handleEvent): the upserts of resync,
// create and update, then the deletions, then for a non-empty
// resync_metadata the deletion of every cluster of the hub it does not
// list.
const (
	// upsertGHClustersSQL is upstream's insertOrUpdate: models.
	// ManagedCluster (pkg/database/models/status.go) created with
	// OnConflict UpdateAll, which sets every column but the primary key
	// and created_at (gorm leaves autoCreateTime columns out) from the new
	// row: leaf_hub_name (a cluster that moves to another hub moves its
	// row), payload, error 'none', updated_at, and deleted_at NULL (a
	// soft-deleted cluster reported again is live again). cluster_name is
	// generated from the payload and never written.
	//
	// A live row whose hub, payload and error are already those is not
	// rewritten (upstream would only move its updated_at): an unchanged
	// resync of thousands of clusters costs reads, not writes, and no
	// trigger work.
	upsertGHClustersSQL = `
INSERT INTO status.managed_clusters AS t (cluster_id, leaf_hub_name, payload, error, created_at, updated_at)
SELECT s.id::uuid, $1, s.payload::jsonb, 'none'::status.error_type, ` + nowUTC + `, ` + nowUTC + `
FROM unnest($2::text[], $3::text[]) AS s(id, payload)
ON CONFLICT (cluster_id) DO UPDATE SET
	leaf_hub_name = excluded.leaf_hub_name,
	payload       = excluded.payload,
	error         = excluded.error,
	updated_at    = excluded.updated_at,
	deleted_at    = NULL
WHERE t.deleted_at IS NOT NULL
   OR (t.leaf_hub_name, t.payload, t.error) IS DISTINCT FROM (excluded.leaf_hub_name, excluded.payload, excluded.error)`

	// deleteGHClustersSQL soft-deletes (gorm's Delete of a model with a
	// DeletedAt: deleted_at set on the live rows) the hub's clusters a
	// delete names: by id ($2) for a reference that has one, else by name
	// ($3) (managedcluster_handler.go: Where leaf_hub_name and cluster_id,
	// else leaf_hub_name and cluster_name).
	deleteGHClustersSQL = `
UPDATE status.managed_clusters AS t SET deleted_at = ` + nowUTC + `
WHERE t.leaf_hub_name = $1 AND t.deleted_at IS NULL
  AND (t.cluster_id = ANY($2::text[]::uuid[]) OR t.cluster_name = ANY($3::text[]))`

	// pruneGHClustersSQL soft-deletes the hub's live clusters whose id the
	// resync_metadata does not list (managedcluster_handler.go: the ids of
	// the hub's clusters for which FoundMetadataById finds nothing, by id
	// only, pkg/bundle/generic/generic_bundle.go). NOT EXISTS over unnest
	// plans as a hashed anti-join.
	pruneGHClustersSQL = `
UPDATE status.managed_clusters AS t SET deleted_at = ` + nowUTC + `
WHERE t.leaf_hub_name = $1 AND t.deleted_at IS NULL
  AND NOT EXISTS (SELECT 1 FROM unnest($2::text[]::uuid[]) AS s(id) WHERE s.id = t.cluster_id)`
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
	if up := uniqueClusters(p.Upserts); len(up) > 0 {
		ids := make([]string, len(up))
		objects := make([]string, len(up))
		for i, c := range up {
			ids[i], objects[i] = c.ID, string(c.Object)
		}
		stmts = append(stmts, Statement{What: "upsert managed clusters", SQL: upsertGHClustersSQL, Args: []any{hub, ids, objects}})
	}
	if len(p.Deletes) > 0 {
		ids, names := []string{}, []string{}
		for _, r := range p.Deletes {
			switch {
			case r.ID != "":
				ids = append(ids, r.ID)
			case r.Name != "":
				names = append(names, r.Name)
			}
		}
		stmts = append(stmts, Statement{What: "soft-delete managed clusters", SQL: deleteGHClustersSQL, Args: []any{hub, ids, names}})
	}
	if p.Resync {
		stmts = append(stmts, Statement{What: "soft-delete managed clusters a resync leaves out", SQL: pruneGHClustersSQL, Args: []any{hub, keptIDs(p.Kept)}})
	}
	return stmts
}
