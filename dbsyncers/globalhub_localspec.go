package dbsyncers

import (
	"encoding/json"
	"fmt"
	"slices"
	"strings"

	"github.com/stbridge/stb/pkg/bundle"
	"github.com/stbridge/stb/pkg/jsonscan"
)

// LocalPolicy is one root policy of a policy.localspec event, kept whole:
// the agent clears its status (agent/pkg/status/syncers/policies: the
// tweak sets policy.Status to the zero value). A policy is its
// metadata.uid, as upstream's local_spec.policies keys it (policy_id
// uuid), in the form PostgreSQL prints a uuid.
type LocalPolicy struct {
	UID, Namespace, Name string
	Object               json.RawMessage
}

// LocalSpecPayload is the decoded data of a policy.localspec event, a
// generic bundle {"create","update","delete","resync","resync_metadata"}
// of Policy objects (pkg/bundle/generic/generic_bundle.go), as
// GlobalHubClustersPayload is of ManagedCluster objects.
type LocalSpecPayload struct {
	// Upserts are the policies of resync, create and update, sorted by
	// uid, one per uid (the last given wins: update after create after
	// resync, upstream's order).
	Upserts []LocalPolicy
	Deletes []ObjectRef
	// Resync is set when resync_metadata lists at least one policy: every
	// other policy of the hub is gone. Kept lists them.
	Resync bool
	Kept   []ObjectRef
}

// GlobalHubLocalSpec returns the syncer of policy.localspec events into
// local_spec.policies (manager/pkg/status/handlers/policy/
// local_policy_spec_handler.go): a stream, like managedcluster (upstream's
// manager takes it in HybridStateMode: every event, in order), because a
// resync is several frames of one version and an update or delete is
// sent once.
func GlobalHubLocalSpec() Syncer {
	return Syncer{
		TypeInfo: bundle.TypeInfo{Name: GHLocalSpec, Kind: bundle.Stream},
		Decode:   decodeGlobalHubLocalSpec,
		Plan:     planGlobalHubLocalSpec,
	}
}

// decodeGlobalHubLocalSpec reads the generic bundle. A policy's
// metadata.uid, and a deletion's id, must be UUIDs (a bad payload
// otherwise, as for managed clusters: local_spec.policies.policy_id is a
// uuid and upstream's statement with another string fails its batch);
// Kubernetes uids always are.
func decodeGlobalHubLocalSpec(data []byte) (any, error) {
	g, err := decodeGenericBundle(GHLocalSpec, data, decodeLocalPolicy)
	if err != nil {
		return nil, err
	}
	for i, r := range g.deletes {
		if r.ID == "" {
			continue
		}
		if g.deletes[i].ID, err = checkUUID(fmt.Sprintf("delete[%d].id", i), r.ID); err != nil {
			return nil, badPayload(fmt.Errorf("%s: %w", GHLocalSpec, err))
		}
	}
	upserts := uniquePolicies(slices.Concat(g.resync, g.create, g.update))
	return &LocalSpecPayload{Upserts: upserts, Deletes: g.deletes, Resync: len(g.kept) > 0, Kept: g.kept}, nil
}

// uniquePolicies returns policies sorted by uid, one per uid, the last
// given winning (see uniqueClusters); policies itself when that is so
// already.
func uniquePolicies(policies []LocalPolicy) []LocalPolicy {
	sorted := true
	for i := 1; i < len(policies) && sorted; i++ {
		sorted = policies[i-1].UID < policies[i].UID
	}
	if sorted {
		return policies
	}
	out := slices.Clone(policies)
	slices.SortStableFunc(out, func(a, b LocalPolicy) int { return strings.Compare(a.UID, b.UID) })
	n := 0
	for i := range out {
		if i+1 < len(out) && out[i+1].UID == out[i].UID {
			continue
		}
		out[n] = out[i]
		n++
	}
	clear(out[n:])
	return out[:n]
}

// decodeLocalPolicy reads one Policy, kept whole; metadata.uid (a UUID)
// and metadata.name are required.
func decodeLocalPolicy(d *jsonscan.Decoder) (LocalPolicy, error) {
	var p LocalPolicy
	obj, err := d.Span(func() error {
		return d.Object(func(name []byte) error {
			if string(name) != "metadata" {
				return nil
			}
			return d.Object(func(name []byte) error {
				switch string(name) {
				case "uid":
					return setString(d, &p.UID, "metadata.uid")
				case "namespace":
					return setString(d, &p.Namespace, "metadata.namespace")
				case "name":
					return setString(d, &p.Name, "metadata.name")
				}
				return nil
			})
		})
	})
	if err == nil && p.UID == "" {
		err = fmt.Errorf("no metadata.uid")
	}
	if err == nil {
		err = checkName("metadata.name", p.Name)
	}
	if err == nil {
		p.UID, err = checkUUID("metadata.uid", p.UID)
	}
	if err == nil {
		err = checkText("metadata.namespace", p.Namespace)
	}
	if err == nil {
		err = checkJSONText("policy "+truncateForError(p.Name), obj)
	}
	p.Object = obj
	return p, err
}

// Statements of the policy.localspec handler, in upstream's order
// (local_policy_spec_handler.go, handleEvent): the upserts, the deletions
// (by uid, else by namespace and name), then for a resync the deletion of
// every policy of the hub it does not list by id. Deletions are soft, as
// gorm deletes a model with a DeletedAt (models.LocalSpecPolicy,
// pkg/database/models/local_spec.go): deleted_at is set on the live rows.
const (
	// upsertLocalPoliciesSQL is upstream's insertOrUpdate: OnConflict
	// UpdateAll, which sets leaf_hub_name, payload, updated_at and
	// deleted_at NULL (a policy reported again is live again), and keeps
	// created_at. policy_name, policy_standard, policy_category and
	// policy_control are generated from the payload and never written. A
	// live row with that hub and payload already is not rewritten.
	upsertLocalPoliciesSQL = `
INSERT INTO local_spec.policies AS t (policy_id, leaf_hub_name, payload, created_at, updated_at)
SELECT s.id::uuid, $1, s.payload::jsonb, ` + nowUTC + `, ` + nowUTC + `
FROM unnest($2::text[], $3::text[]) AS s(id, payload)
ON CONFLICT (policy_id) DO UPDATE SET
	leaf_hub_name = excluded.leaf_hub_name,
	payload       = excluded.payload,
	updated_at    = excluded.updated_at,
	deleted_at    = NULL
WHERE t.deleted_at IS NOT NULL
   OR (t.leaf_hub_name, t.payload) IS DISTINCT FROM (excluded.leaf_hub_name, excluded.payload)`

	// deleteLocalPoliciesSQL: by uid ($2) for a reference that has one,
	// else by the payload's namespace and name ($3, $4), both required
	// (upstream logs a reference with neither and skips it).
	deleteLocalPoliciesSQL = `
UPDATE local_spec.policies AS t SET deleted_at = ` + nowUTC + `
WHERE t.leaf_hub_name = $1 AND t.deleted_at IS NULL
  AND (t.policy_id = ANY($2::text[]::uuid[])
       OR EXISTS (SELECT 1 FROM unnest($3::text[], $4::text[]) AS s(ns, name)
                  WHERE s.ns = t.payload -> 'metadata' ->> 'namespace' AND s.name = t.payload -> 'metadata' ->> 'name'))`

	// pruneLocalPoliciesSQL: the hub's live policies whose uid the
	// resync_metadata does not list (FoundMetadataById: by id only).
	pruneLocalPoliciesSQL = `
UPDATE local_spec.policies AS t SET deleted_at = ` + nowUTC + `
WHERE t.leaf_hub_name = $1 AND t.deleted_at IS NULL
  AND NOT EXISTS (SELECT 1 FROM unnest($2::text[]::uuid[]) AS s(id) WHERE s.id = t.policy_id)`
)

func planGlobalHubLocalSpec(bundles []*bundle.Bundle) (Write, error) {
	var stmts []Statement
	for _, b := range bundles {
		p, err := payloadOf[LocalSpecPayload](b)
		if err != nil {
			return Write{}, err
		}
		if up := uniquePolicies(p.Upserts); len(up) > 0 {
			ids, objs := make([]string, len(up)), make([]string, len(up))
			for i, lp := range up {
				ids[i], objs[i] = lp.UID, string(lp.Object)
			}
			stmts = append(stmts, Statement{What: "upsert local policies", SQL: upsertLocalPoliciesSQL, Args: []any{b.Hub, ids, objs}})
		}
		if len(p.Deletes) > 0 {
			ids, nss, names := []string{}, []string{}, []string{}
			for _, r := range p.Deletes {
				switch {
				case r.ID != "":
					ids = append(ids, r.ID)
				case r.Name != "" && r.Namespace != "":
					nss, names = append(nss, r.Namespace), append(names, r.Name)
				}
			}
			stmts = append(stmts, Statement{What: "soft-delete local policies", SQL: deleteLocalPoliciesSQL, Args: []any{b.Hub, ids, nss, names}})
		}
		if p.Resync {
			stmts = append(stmts, Statement{What: "soft-delete local policies a resync leaves out", SQL: pruneLocalPoliciesSQL, Args: []any{b.Hub, keptIDs(p.Kept)}})
		}
	}
	return Write{Statements: stmts}, nil
}
