package sim

import (
	"encoding/json"
	"errors"
	"fmt"
	"os"
	"path/filepath"
	"slices"

	"github.com/stbridge/stb/pkg/bundle"
)

// Expected is the state the database must hold once the bridge has written
// everything a run sent, and what the run sent. It is the contract between
// `stb simulate` and `stb verify`.
type Expected struct {
	// Seed, Topic and Generations echo the run's configuration, so that a
	// file says how it was made.
	Seed        int64  `json:"seed"`
	Topic       string `json:"topic"`
	Generations int    `json:"generations"`
	// Messages is the number of messages sent; MessagesByType splits it by
	// bundle type.
	Messages       int            `json:"messages"`
	MessagesByType map[string]int `json:"messagesByType"`
	// Restarts is the number of agent restarts over all hubs.
	Restarts int `json:"restarts"`
	// FirstIncarnation is the incarnation the run's agents started at
	// (Config.FirstIncarnation): a database simulated into before holds
	// what earlier runs left, which a check can tell by their lower
	// incarnations (versions) and by the run in their names (policy
	// events, EventRun). 0 in files written before it was recorded:
	// nothing is then taken for an earlier run's.
	FirstIncarnation uint64 `json:"firstIncarnation,omitempty"`
	// Lost counts the compliance reports never published
	// (Config.LoseProbability); Resyncs the complete bundles sent in
	// answer to resync requests.
	Lost    int `json:"lost,omitempty"`
	Resyncs int `json:"resyncs,omitempty"`
	// GlobalHub counts what the global-hub agents did, nil for the other
	// agent kinds. A run's hubs all run one kind of agent, so it also says
	// which tables hold their rows (GlobalHubAgent).
	GlobalHub *GHStats `json:"globalHub,omitempty"`
	// Hubs maps every hub's name to its final state.
	Hubs map[string]*HubState `json:"hubs"`
}

// HubState is the final state of one hub.
//
// The tables named are those of STB's own agent kinds (AgentSTB,
// AgentHoH), in schema stb. A hub of the global-hub agent
// (Expected.GlobalHubAgent) has its rows in the global hub's own tables
// instead (README "The global hub's database"), where a soft-deleted row
// (deleted_at set) counts as absent: its heartbeat in
// status.leaf_hub_heartbeats, its managed clusters in
// status.managed_clusters and its compliance in local_status.compliance.
type HubState struct {
	// Versions maps each bundle type to the version of the last bundle of
	// that type the hub sent: what stb.bundle_versions must hold.
	Versions map[string]bundle.Version
	// VersionsAtMost maps the delta types whose version is uncertain to
	// the last one sent: stb.bundle_versions may hold no row for such a
	// type, or one no newer than this. A compliancedelta's version is
	// uncertain when a compliance report was sent after the last delta:
	// the deltas before it may each have been applied or dropped, their
	// base having been replaced (see docs/design.md, Conflation). A type is in Versions
	// or here, never in both; nil when there is none.
	VersionsAtMost map[string]bundle.Version
	// Heartbeat says whether the hub sent a heartbeat, so that
	// stb.hub_heartbeats (status.leaf_hub_heartbeats for the global-hub
	// agent) must have its row.
	Heartbeat bool
	// ManagedClusters maps cluster names to the clusters of the hub's last
	// managedclusters snapshot: stb.managed_clusters (the live rows of
	// status.managed_clusters for the global-hub agent) must hold exactly
	// these.
	ManagedClusters map[string]Cluster
	// Compliance maps policy ids and cluster names to compliance states:
	// stb.compliance (local_status.compliance for the global-hub agent)
	// must hold exactly these rows. The pairs are those
	// of the hub's last clusterspolicies bundle; the states those of its
	// last compliance report with the deltas sent after it applied.
	Compliance map[string]map[string]ComplianceState
	// Events maps policy ids and cluster names to the names of the policy
	// events the hub sent about them, sorted: stb.policy_events must
	// hold exactly these, each once.
	Events map[string]map[string][]string
	// The global-hub agent's only (Config.Agent globalhub); empty for the
	// other agent kinds.
	//
	// LocalPolicyEvents maps policy ids and cluster names to the names of
	// the event.localreplicatedpolicy events the agent sent, sorted:
	// event.local_policies must hold exactly these, each once.
	// LocalRootPolicyEvents is the same for event.localrootpolicy and
	// event.local_root_policies, whose events name no cluster ("").
	// ManagedClusterEvents maps cluster ids (id.k8s.io claims) and names
	// to the names of the event.managedcluster events:
	// event.managed_clusters must hold exactly these.
	LocalPolicyEvents     map[string]map[string][]string
	LocalRootPolicyEvents map[string]map[string][]string
	ManagedClusterEvents  map[string]map[string][]string
	// LocalPolicies maps policy ids (metadata.uid) to the hub's policies as
	// policy.localspec last gave them: the live rows of
	// local_spec.policies must be exactly these.
	LocalPolicies map[string]LocalPolicy
	// AlertCounts maps ACS Centrals ("<namespace>/<name>") to the counts
	// the last security.alertcounts of each gave: security.alert_counts
	// must hold exactly these.
	AlertCounts map[string]AlertCounts
	// Migrations maps migration ids and stages to the last report of each
	// since the hub's last report with resync set:
	// stb.cluster_migrations must hold exactly these.
	Migrations map[string]map[string]Migration
	// HubClusterID and HubInfo are the clusterId and the data of the last
	// managedhub.info with a clusterId: the hub's info in
	// status.leaf_hubs (its live row with the newest updated_at: the row
	// of an earlier clusterId stays) must be them, or the hub must have no
	// live row when HubClusterID is "" (the bridge ignores an info
	// without one, as the global hub's manager does).
	HubClusterID string
	HubInfo      json.RawMessage
	// Restarts is the number of times the hub's agent restarted.
	Restarts int
}

// ComplianceRows returns the number of rows of stb.compliance the hub
// must have.
func (h *HubState) ComplianceRows() int {
	n := 0
	for _, clusters := range h.Compliance {
		n += len(clusters)
	}
	return n
}

// PolicyEvents returns the number of rows of stb.policy_events the hub
// must have.
func (h *HubState) PolicyEvents() int {
	n := 0
	for _, clusters := range h.Events {
		for _, names := range clusters {
			n += len(names)
		}
	}
	return n
}

// LocalPolicy is a policy of local_spec.policies: its namespace and name
// (metadata.namespace and policy_name, both of the payload) and the whole
// object as the agent sent it (status cleared).
type LocalPolicy struct {
	Namespace string          `json:"namespace"`
	Name      string          `json:"name"`
	Payload   json.RawMessage `json:"payload"`
}

// AlertCounts is a row of security.alert_counts.
type AlertCounts struct {
	Low       int    `json:"low"`
	Medium    int    `json:"medium"`
	High      int    `json:"high"`
	Critical  int    `json:"critical"`
	DetailURL string `json:"detailUrl"`
}

// Migration is a row of stb.cluster_migrations: the report's error
// message and its whole data.
type Migration struct {
	ErrorMessage string          `json:"errorMessage,omitempty"`
	Payload      json.RawMessage `json:"payload"`
}

// Cluster is a managed cluster as the database must hold it: its id and
// the labels of its payload. For the global-hub agent the id is the
// cluster's id.k8s.io claim (status.managed_clusters.cluster_id), not its
// metadata.uid; the bridge skips a cluster without the claim, as upstream
// does, and the simulator gives every cluster one, so every cluster here
// has a row.
type Cluster struct {
	UID    string            `json:"uid"`
	Labels map[string]string `json:"labels"`
}

// hubStateJSON is the file form of HubState: versions in their wire form
// ("<incarnation>.<generation>"), which reads like the bridge's logs.
// Files written before policies were simulated lack the policy members;
// they read as hubs without policies.
type hubStateJSON struct {
	Versions        map[string]string                     `json:"versions"`
	VersionsAtMost  map[string]string                     `json:"versionsAtMost,omitempty"`
	Heartbeat       bool                                  `json:"heartbeat"`
	ManagedClusters map[string]Cluster                    `json:"managedClusters"`
	Compliance      map[string]map[string]ComplianceState `json:"compliance"`
	Events          map[string]map[string][]string        `json:"events"`
	// The global-hub agent's only (Config.Agent globalhub).
	LocalPolicyEvents     map[string]map[string][]string  `json:"localPolicyEvents,omitempty"`
	LocalRootPolicyEvents map[string]map[string][]string  `json:"localRootPolicyEvents,omitempty"`
	ManagedClusterEvents  map[string]map[string][]string  `json:"managedClusterEvents,omitempty"`
	LocalPolicies         map[string]LocalPolicy          `json:"localPolicies,omitempty"`
	AlertCounts           map[string]AlertCounts          `json:"alertCounts,omitempty"`
	Migrations            map[string]map[string]Migration `json:"migrations,omitempty"`
	HubClusterID          string                          `json:"hubClusterId,omitempty"`
	HubInfo               json.RawMessage                 `json:"hubInfo,omitempty"`
	Restarts              int                             `json:"restarts"`
}

// MarshalJSON writes versions in their wire form.
func (h HubState) MarshalJSON() ([]byte, error) {
	out := hubStateJSON{
		Versions:        versionStrings(h.Versions),
		Heartbeat:       h.Heartbeat,
		ManagedClusters: h.ManagedClusters,
		Compliance:      h.Compliance,
		Events:          h.Events,
		Restarts:        h.Restarts,

		LocalPolicyEvents:     h.LocalPolicyEvents,
		LocalRootPolicyEvents: h.LocalRootPolicyEvents,
		ManagedClusterEvents:  h.ManagedClusterEvents,
		LocalPolicies:         h.LocalPolicies,
		AlertCounts:           h.AlertCounts,
		Migrations:            h.Migrations,
		HubClusterID:          h.HubClusterID,
		HubInfo:               h.HubInfo,
	}
	if len(h.VersionsAtMost) > 0 {
		out.VersionsAtMost = versionStrings(h.VersionsAtMost)
	}
	if out.ManagedClusters == nil {
		out.ManagedClusters = map[string]Cluster{}
	}
	if out.Compliance == nil {
		out.Compliance = map[string]map[string]ComplianceState{}
	}
	if out.Events == nil {
		out.Events = map[string]map[string][]string{}
	}
	return json.Marshal(out)
}

// UnmarshalJSON reads what MarshalJSON writes.
func (h *HubState) UnmarshalJSON(data []byte) error {
	var in hubStateJSON
	if err := json.Unmarshal(data, &in); err != nil {
		return err
	}
	versions, err := parseVersions(in.Versions)
	if err != nil {
		return err
	}
	var atMost map[string]bundle.Version
	if len(in.VersionsAtMost) > 0 {
		if atMost, err = parseVersions(in.VersionsAtMost); err != nil {
			return fmt.Errorf("versionsAtMost: %w", err)
		}
		for t := range atMost {
			if _, dup := versions[t]; dup {
				return fmt.Errorf("version of %s is both exact and bounded", t)
			}
		}
	}
	for id, clusters := range in.Compliance {
		for c, s := range clusters {
			if !s.valid() {
				return fmt.Errorf("compliance of policy %s on cluster %s: unknown state %q", id, c, s)
			}
		}
	}
	clusters := in.ManagedClusters
	if clusters == nil {
		clusters = map[string]Cluster{}
	}
	compliance := in.Compliance
	if compliance == nil {
		compliance = map[string]map[string]ComplianceState{}
	}
	events := in.Events
	if events == nil {
		events = map[string]map[string][]string{}
	}
	for _, byPolicy := range []map[string]map[string][]string{events, in.LocalPolicyEvents, in.LocalRootPolicyEvents, in.ManagedClusterEvents} {
		for _, clusters := range byPolicy {
			for c, names := range clusters {
				slices.Sort(names) // as documented, whatever an editor did to the file
				clusters[c] = slices.Compact(names)
			}
		}
	}
	*h = HubState{
		Versions: versions, VersionsAtMost: atMost, Heartbeat: in.Heartbeat, ManagedClusters: clusters,
		Compliance: compliance, Events: events, Restarts: in.Restarts,
		LocalPolicyEvents: in.LocalPolicyEvents, LocalRootPolicyEvents: in.LocalRootPolicyEvents,
		ManagedClusterEvents: in.ManagedClusterEvents, LocalPolicies: in.LocalPolicies, AlertCounts: in.AlertCounts,
		Migrations: in.Migrations, HubClusterID: in.HubClusterID, HubInfo: in.HubInfo,
	}
	return nil
}

// versionStrings returns versions in their wire form.
func versionStrings(versions map[string]bundle.Version) map[string]string {
	out := make(map[string]string, len(versions))
	for t, v := range versions {
		out[t] = v.String()
	}
	return out
}

// parseVersions reads what versionStrings returns.
func parseVersions(in map[string]string) (map[string]bundle.Version, error) {
	versions := make(map[string]bundle.Version, len(in))
	for t, s := range in {
		v, err := bundle.ParseVersion(s)
		if err != nil {
			return nil, fmt.Errorf("version of %s: %w", t, err)
		}
		versions[t] = v
	}
	return versions, nil
}

// valid reports whether s is one of the three states.
func (s ComplianceState) valid() bool {
	return s == Compliant || s == NonCompliant || s == UnknownCompliance || s == PendingCompliance
}

// GlobalHubAgent reports whether the run's hubs ran the global-hub agent
// (Config.Agent AgentGlobalHub), whose rows are in the global hub's own
// tables rather than in STB's (HubState). Every hub of a run runs the
// same kind of agent, and GlobalHub is set exactly for that kind.
func (e *Expected) GlobalHubAgent() bool { return e.GlobalHub != nil }

// HubNames returns the names of the expected hubs, sorted.
func (e *Expected) HubNames() []string {
	names := make([]string, 0, len(e.Hubs))
	for name := range e.Hubs {
		names = append(names, name)
	}
	slices.Sort(names)
	return names
}

// Clusters returns the number of managed clusters over all hubs.
func (e *Expected) Clusters() int {
	n := 0
	for _, h := range e.Hubs {
		n += len(h.ManagedClusters)
	}
	return n
}

// ComplianceRows returns the number of rows of stb.compliance over all
// hubs.
func (e *Expected) ComplianceRows() int {
	n := 0
	for _, h := range e.Hubs {
		n += h.ComplianceRows()
	}
	return n
}

// PolicyEvents returns the number of rows of stb.policy_events over all
// hubs.
func (e *Expected) PolicyEvents() int {
	n := 0
	for _, h := range e.Hubs {
		n += h.PolicyEvents()
	}
	return n
}

// Encode returns e as indented JSON. The output is stable: maps are
// written with sorted keys, so equal states give equal files.
func (e *Expected) Encode() ([]byte, error) {
	data, err := json.MarshalIndent(e, "", "  ")
	if err != nil {
		return nil, fmt.Errorf("encode expected state: %w", err)
	}
	return append(data, '\n'), nil
}

// WriteFile writes e to path as indented JSON. It writes a temporary file
// beside path and renames it, so that path never holds half a state.
func (e *Expected) WriteFile(path string) (err error) {
	data, err := e.Encode()
	if err != nil {
		return err
	}
	f, err := os.CreateTemp(filepath.Dir(path), "."+filepath.Base(path)+".*.tmp")
	if err != nil {
		return fmt.Errorf("write expected state: %w", err)
	}
	defer func() {
		if err != nil {
			_ = f.Close()           // already failed; the first error is the one to report
			_ = os.Remove(f.Name()) // best effort: do not leave the temporary file behind
		}
	}()
	if _, err := f.Write(data); err != nil {
		return fmt.Errorf("write expected state to %s: %w", f.Name(), err)
	}
	if err := f.Chmod(0o644); err != nil {
		return fmt.Errorf("write expected state to %s: %w", f.Name(), err)
	}
	if err := f.Close(); err != nil {
		return fmt.Errorf("write expected state to %s: %w", f.Name(), err)
	}
	if err := os.Rename(f.Name(), path); err != nil {
		return fmt.Errorf("write expected state: %w", err)
	}
	return nil
}

// ReadExpected reads a file WriteFile wrote.
func ReadExpected(path string) (*Expected, error) {
	data, err := os.ReadFile(path)
	if err != nil {
		return nil, fmt.Errorf("read expected state: %w", err)
	}
	e, err := DecodeExpected(data)
	if err != nil {
		return nil, fmt.Errorf("read expected state from %s: %w", path, err)
	}
	return e, nil
}

// DecodeExpected decodes what Encode returns.
func DecodeExpected(data []byte) (*Expected, error) {
	var e Expected
	if err := json.Unmarshal(data, &e); err != nil {
		return nil, fmt.Errorf("decode expected state: %w", err)
	}
	if e.Hubs == nil {
		return nil, errors.New(`decode expected state: "hubs" is missing`)
	}
	for name, h := range e.Hubs {
		if h == nil {
			return nil, fmt.Errorf("decode expected state: hub %q is null", name)
		}
	}
	if e.MessagesByType == nil {
		e.MessagesByType = map[string]int{}
	}
	return &e, nil
}
