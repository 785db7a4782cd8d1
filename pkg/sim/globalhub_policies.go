package sim

import (
	"encoding/json"
	"fmt"
	"maps"
	"math/rand/v2"
	"slices"
	"strings"
)

// ghSpecChangeProbability is the chance per policy and round that its spec
// changes (its remediationAction flips): a new metadata.generation, which
// the policy.localspec emitter sends (policy_spec_syncer.go @8916332 sends
// only those).
const ghSpecChangeProbability = 0.05

// The policy annotations local_spec.policies reads (2.tables.sql
// @9f733db: policy_standard, policy_category, policy_control).
var ghPolicyAnnotations = map[string]string{
	"policy.open-cluster-management.io/standards":  "NIST SP 800-53",
	"policy.open-cluster-management.io/categories": "CM Configuration Management",
	"policy.open-cluster-management.io/controls":   "CM-2 Baseline Configuration",
}

// ghPolicyNamespace is the namespace of every simulated root policy.
const ghPolicyNamespace = "default"

// ghPolicy is a Policy as the policy.localspec emitter sends it: the
// tweak clears its status (policy_syncer.go, id 17522083995).
type ghPolicy struct {
	APIVersion string `json:"apiVersion"`
	Kind       string `json:"kind"`
	Metadata   struct {
		Name        string            `json:"name"`
		Namespace   string            `json:"namespace"`
		UID         string            `json:"uid"`
		Generation  int               `json:"generation"`
		Annotations map[string]string `json:"annotations"`
	} `json:"metadata"`
	Spec struct {
		Disabled          bool              `json:"disabled"`
		RemediationAction string            `json:"remediationAction"`
		PolicyTemplates   []json.RawMessage `json:"policy-templates"`
	} `json:"spec"`
	Status struct{} `json:"status"`
}

// ghSpecs is the spec side of a hub's policies: each one's
// metadata.generation.
type ghSpecs struct{ generation map[string]int }

func newGHSpecs() *ghSpecs { return &ghSpecs{generation: map[string]int{}} }

// evolve changes some policies' specs.
// With fixed, no spec changes (GlobalHubConfig.Rotate).
func (s *ghSpecs) evolve(rng *rand.Rand, m *policyModel, fixed bool) {
	for _, p := range m.policies {
		if s.generation[p.id] == 0 {
			s.generation[p.id] = 1
		}
		if !fixed && rng.Float64() < ghSpecChangeProbability {
			if p.remediation == remediationActions[0] {
				p.remediation = remediationActions[1]
			} else {
				p.remediation = remediationActions[0]
			}
			s.generation[p.id]++
		}
	}
}

// object returns p as the agent sends it, with its metadata {id: uid, ns,
// name}: the ObjectEmitter's default.
func (s *ghSpecs) object(p *policy) (ghObject, error) {
	var o ghPolicy
	o.APIVersion = "policy.open-cluster-management.io/v1"
	o.Kind = "Policy"
	o.Metadata.Name = p.name
	o.Metadata.Namespace = ghPolicyNamespace
	o.Metadata.UID = p.id
	o.Metadata.Generation = max(s.generation[p.id], 1)
	o.Metadata.Annotations = ghPolicyAnnotations
	o.Spec.RemediationAction = p.remediation
	o.Spec.PolicyTemplates = []json.RawMessage{json.RawMessage(`{"objectDefinition":{"apiVersion":"policy.open-cluster-management.io/v1","kind":"ConfigurationPolicy","metadata":{"name":"` +
		p.name + `-config"},"spec":{"remediationAction":"inform","severity":"low"}}}`)}
	data, err := json.Marshal(&o)
	if err != nil {
		return ghObject{}, fmt.Errorf("encode policy %s: %w", p.name, err)
	}
	meta, err := json.Marshal(ghMeta{ID: p.id, Namespace: ghPolicyNamespace, Name: p.name})
	if err != nil {
		return ghObject{}, err
	}
	return ghObject{key: ghPolicyNamespace + "/" + p.name, data: data, meta: meta}, nil
}

// record returns the rows local_spec.policies must hold.
func (s *ghSpecs) record(m *policyModel) map[string]LocalPolicy {
	out := make(map[string]LocalPolicy, len(m.policies))
	for _, p := range m.policies {
		o, err := s.object(p)
		if err != nil {
			panic(err) // encoded every round before; cannot fail now
		}
		out[p.id] = LocalPolicy{Namespace: ghPolicyNamespace, Name: p.name, Payload: o.data}
	}
	return out
}

// sendSpecs is one tick of the policy.localspec emitter: policies added or
// with a new generation are updates, those gone deletes.
func (a *ghAgent) sendSpecs() error {
	if a.policies == nil {
		return nil
	}
	r := a.run
	em := r.policies
	current := make(map[string]int, len(a.policies.policies))
	names := make(map[string]string, len(a.policies.policies))
	for _, p := range a.policies.policies {
		current[p.id], names[p.id] = a.spec.generation[p.id], p.name
		if r.policyView == nil {
			continue
		}
		if was, ok := r.policyView[p.id]; ok && was == current[p.id] {
			continue
		}
		o, err := a.spec.object(p)
		if err != nil {
			return err
		}
		em.update(o)
	}
	for _, id := range slices.Sorted(maps.Keys(r.policyView)) {
		if _, ok := current[id]; ok {
			continue
		}
		meta, err := json.Marshal(ghMeta{ID: id, Namespace: ghPolicyNamespace, Name: r.policyNames[id]})
		if err != nil {
			return err
		}
		em.delete(ghObject{key: ghPolicyNamespace + "/" + r.policyNames[id], meta: meta})
	}
	r.policyView, r.policyNames = current, names
	return a.tickObjects(TypeGHLocalSpec, em, a.resyncDue())
}

// ghCompliance is grc.Compliance (pkg/bundle/grc/compliance_bundle.go
// @c18324fa): no key omitted, and the handler makes every list, so an
// empty one is [].
type ghCompliance struct {
	PolicyID       string   `json:"policyId"`
	NamespacedName string   `json:"policy_namespaced_name"`
	Compliant      []string `json:"compliantClusters"`
	NonCompliant   []string `json:"nonCompliantClusters"`
	Unknown        []string `json:"unknownComplianceClusters"`
	Pending        []string `json:"pendingComplianceClusters"`
}

// ghCompleteCompliance is grc.CompleteCompliance
// (complete_compliance_bundle.go @eb6946c8): no compliant list.
type ghCompleteCompliance struct {
	PolicyID       string   `json:"policyId"`
	NamespacedName string   `json:"policy_namespaced_name"`
	NonCompliant   []string `json:"nonCompliantClusters"`
	Unknown        []string `json:"unknownComplianceClusters"`
	Pending        []string `json:"pendingComplianceClusters"`
}

func ghComplianceOf(p *policy) ghCompliance {
	o := ghCompliance{PolicyID: p.id, NamespacedName: ghPolicyNamespace + "/" + p.name,
		Compliant: []string{}, NonCompliant: []string{}, Unknown: []string{}, Pending: []string{}}
	for _, c := range p.clusters { // sorted
		switch p.state[c] {
		case Compliant:
			o.Compliant = append(o.Compliant, c)
		case NonCompliant:
			o.NonCompliant = append(o.NonCompliant, c)
		case UnknownCompliance:
			o.Unknown = append(o.Unknown, c)
		case PendingCompliance:
			o.Pending = append(o.Pending, c)
		}
	}
	return o
}

// sendCompliance is one tick of the policy syncer's two generic emitters
// (multi_event_syncer.go @acfdb2a1, one list, compliance first), each sent
// when its version is newer than the last sent:
//
//   - policy.localcompliance holds every policy placed on a cluster and
//     increments its value when one is added or removed or its clusters
//     change (compliance_handler.go @569afb53); a change of state alone
//     does not, but every send carries the states as they are;
//   - policy.localcompletecompliance holds the policies with a cluster
//     that does not comply, and increments when that changed, but not
//     when a policy is deleted (complete_compliance_handler.go @40d36bc4).
//     Its extdependencyversion is the compliance emitter's version as it
//     is when it is sent (LaunchPolicySyncer, id 17522083995): one
//     generation after the last compliance sent, with its value.
func (a *ghAgent) sendCompliance() error {
	if a.policies == nil {
		return nil
	}
	r := a.run
	var placed []ghCompliance
	clusters := map[string]string{}
	complete := map[string]string{}
	var completes []ghCompleteCompliance
	exists := map[string]bool{}
	for _, p := range a.policies.policies {
		exists[p.id] = true
		if len(p.clusters) == 0 {
			continue // a policy on no cluster is not added
		}
		o := ghComplianceOf(p)
		placed = append(placed, o)
		clusters[p.id] = strings.Join(p.clusters, ",")
		if len(o.NonCompliant)+len(o.Unknown)+len(o.Pending) > 0 {
			c := ghCompleteCompliance{PolicyID: o.PolicyID, NamespacedName: o.NamespacedName,
				NonCompliant: o.NonCompliant, Unknown: o.Unknown, Pending: o.Pending}
			completes = append(completes, c)
			complete[p.id] = fmt.Sprint(c)
		}
	}
	for id, set := range clusters {
		if was, ok := r.complianceView[id]; !ok || was != set {
			r.compliance.current.incr()
		}
	}
	for id := range r.complianceView {
		if _, ok := clusters[id]; !ok {
			r.compliance.current.incr()
		}
	}
	for id, c := range complete {
		if was, ok := r.completeView[id]; !ok || was != c {
			r.complete.current.incr()
		}
	}
	for id := range r.completeView {
		if _, ok := complete[id]; !ok && exists[id] {
			r.complete.current.incr() // every cluster complies now: a change
		}
	}
	r.complianceView, r.completeView = clusters, complete

	if r.compliance.shouldSend() {
		if placed == nil {
			placed = []ghCompliance{}
		}
		data, err := json.Marshal(placed)
		if err != nil {
			return fmt.Errorf("encode %s: %w", TypeGHLocalCompliance, err)
		}
		a.send(ghEvent{typ: TypeGHLocalCompliance, version: r.compliance.current, data: data})
		r.compliance.sent()
	}
	if r.complete.shouldSend() {
		if completes == nil {
			completes = []ghCompleteCompliance{}
		}
		data, err := json.Marshal(completes)
		if err != nil {
			return fmt.Errorf("encode %s: %w", TypeGHCompleteCompliance, err)
		}
		dep := r.compliance.current
		a.send(ghEvent{typ: TypeGHCompleteCompliance, version: r.complete.current, dep: &dep, data: data})
		r.complete.sent()
	}
	return nil
}
