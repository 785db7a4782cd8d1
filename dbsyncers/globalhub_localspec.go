package dbsyncers

import (
	"encoding/json"
	"fmt"
	"slices"

	"github.com/stbridge/stb/pkg/bundle"
	"github.com/stbridge/stb/pkg/jsonscan"
)

// LocalPolicy is one root policy of a policy.localspec event, kept whole:
// the agent clears its status (agent/pkg/status/syncers/policies: the
// tweak sets policy.Status to the zero value). A policy is its
// metadata.uid on its hub, as upstream's local_spec.policies keys it.
type LocalPolicy struct {
	UID, Namespace, Name string
	Object               json.RawMessage
}

// LocalSpecPayload is the decoded data of a policy.localspec event, a
// generic bundle {"create","update","delete","resync","resync_metadata"}
// of Policy objects (pkg/bundle/generic/generic_bundle.go), as
// GlobalHubClustersPayload is of ManagedCluster objects.
type LocalSpecPayload struct {
	// Upserts are the policies of resync, create and update, in that
	// order, one per uid (the last given wins).
	Upserts []LocalPolicy
	Deletes []ObjectRef
	// Resync is set when resync_metadata lists at least one policy: every
	// other policy of the hub is gone. Kept lists them.
	Resync bool
	Kept   []ObjectRef
}

// GlobalHubLocalSpec returns the syncer of policy.localspec events into
// status.local_policies: a stream, like managedcluster (upstream's manager
// takes it in HybridStateMode: every event, in order), because a resync is
// several frames of one version and an update or delete is sent once.
func GlobalHubLocalSpec() Syncer {
	return Syncer{
		TypeInfo: bundle.TypeInfo{Name: GHLocalSpec, Kind: bundle.Stream},
		Decode:   decodeGlobalHubLocalSpec,
		Plan:     planGlobalHubLocalSpec,
	}
}

func decodeGlobalHubLocalSpec(data []byte) (any, error) {
	g, err := decodeGenericBundle(GHLocalSpec, data, decodeLocalPolicy)
	if err != nil {
		return nil, err
	}
	// One row per uid, the last given winning: resync, then create, then
	// update, the handler's order.
	var upserts []LocalPolicy
	for _, p := range slices.Concat(g.resync, g.create, g.update) {
		if i := slices.IndexFunc(upserts, func(q LocalPolicy) bool { return q.UID == p.UID }); i >= 0 {
			upserts[i] = p
			continue
		}
		upserts = append(upserts, p)
	}
	return &LocalSpecPayload{Upserts: upserts, Deletes: g.deletes, Resync: len(g.kept) > 0, Kept: g.kept}, nil
}

// decodeLocalPolicy reads one Policy, kept whole; metadata.uid and
// metadata.name are required.
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
		err = checkText("metadata.uid", p.UID)
	}
	if err == nil {
		err = checkText("metadata.namespace", p.Namespace)
	}
	p.Object = obj
	return p, err
}

// Statements of the policy.localspec handler, in upstream's order
// (manager/pkg/status/handlers/policy/local_policy_spec_handler.go): the
// upserts, the deletions (by uid, else by namespace and name), then for a
// resync the deletion of every policy of the hub it does not list by id.
const (
	upsertLocalPoliciesSQL = `
INSERT INTO status.local_policies AS t (hub, policy_id, namespace, name, payload)
SELECT $1, s.id, s.ns, s.name, s.payload::jsonb
FROM unnest($2::text[], $3::text[], $4::text[], $5::text[]) AS s(id, ns, name, payload)
ON CONFLICT (hub, policy_id) DO UPDATE SET
	namespace  = excluded.namespace,
	name       = excluded.name,
	payload    = excluded.payload,
	updated_at = now()
WHERE (t.namespace, t.name, t.payload) IS DISTINCT FROM (excluded.namespace, excluded.name, excluded.payload)`

	deleteLocalPoliciesSQL = `
DELETE FROM status.local_policies AS t
WHERE t.hub = $1
  AND (t.policy_id = ANY($2::text[])
       OR EXISTS (SELECT 1 FROM unnest($3::text[], $4::text[]) AS s(ns, name)
                  WHERE s.ns = t.namespace AND s.name = t.name))`

	pruneLocalPoliciesSQL = `
DELETE FROM status.local_policies AS t
WHERE t.hub = $1 AND NOT (t.policy_id = ANY($2::text[]))`
)

func planGlobalHubLocalSpec(bundles []*bundle.Bundle) (Write, error) {
	var stmts []Statement
	for _, b := range bundles {
		p, err := payloadOf[LocalSpecPayload](b)
		if err != nil {
			return Write{}, err
		}
		if n := len(p.Upserts); n > 0 {
			ids, nss, names, objs := make([]string, n), make([]string, n), make([]string, n), make([]string, n)
			for i, lp := range p.Upserts {
				ids[i], nss[i], names[i], objs[i] = lp.UID, lp.Namespace, lp.Name, string(lp.Object)
			}
			stmts = append(stmts, Statement{What: "upsert local policies", SQL: upsertLocalPoliciesSQL, Args: []any{b.Hub, ids, nss, names, objs}})
		}
		if len(p.Deletes) > 0 {
			ids, nss, names := []string{}, []string{}, []string{}
			for _, r := range p.Deletes {
				switch {
				case r.ID != "":
					ids = append(ids, r.ID)
				case r.Name != "":
					nss, names = append(nss, r.Namespace), append(names, r.Name)
				}
			}
			stmts = append(stmts, Statement{What: "delete local policies", SQL: deleteLocalPoliciesSQL, Args: []any{b.Hub, ids, nss, names}})
		}
		if p.Resync {
			ids := []string{}
			for _, r := range p.Kept {
				if r.ID != "" {
					ids = append(ids, r.ID)
				}
			}
			stmts = append(stmts, Statement{What: "delete local policies a resync leaves out", SQL: pruneLocalPoliciesSQL, Args: []any{b.Hub, ids}})
		}
	}
	return Write{Statements: stmts}, nil
}
