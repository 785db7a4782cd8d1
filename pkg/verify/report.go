package verify

import (
	"cmp"
	"fmt"
	"maps"
	"slices"
	"strings"
)

// Kind is a kind of difference between the database and the expected
// state.
type Kind int

// Kinds of difference, in the order Summary lists them. Where a kind names
// a table of STB's (schema stb), a hub of the global-hub agent has its rows
// in the global hub's own table instead (sim.HubState): its managed
// clusters in status.managed_clusters, its compliance in
// local_status.compliance, its heartbeat in status.leaf_hub_heartbeats;
// a row in the table of the other agent kind is unexpected.
const (
	// StaleVersion: stb.bundle_versions holds an older version than
	// the last bundle of the type the hub sent.
	StaleVersion Kind = iota + 1
	// NewerVersion: it holds a newer one than the last sent.
	NewerVersion
	// MissingVersion: it holds no row for a type the hub sent.
	MissingVersion
	// UnexpectedVersion: it holds a row for a type the hub never sent.
	UnexpectedVersion
	// MissingCluster: a managed cluster of the hub's last snapshot has no
	// row in stb.managed_clusters (no live row in status.managed_clusters).
	MissingCluster
	// UnexpectedCluster: a row of stb.managed_clusters is not in the
	// hub's last snapshot (or a live row of status.managed_clusters, or
	// one of two live rows of one name).
	UnexpectedCluster
	// WrongClusterID: a cluster's row has another cluster_id.
	WrongClusterID
	// WrongLabels: a cluster's row has other metadata.labels.
	WrongLabels
	// MissingCompliance: a (policy, cluster) pair of the hub's last
	// placement has no row in stb.compliance.
	MissingCompliance
	// UnexpectedCompliance: a row of stb.compliance is not a pair of
	// the hub's last placement.
	UnexpectedCompliance
	// WrongCompliance: a pair's row has another compliance state than the
	// hub's last report and the deltas after it give.
	WrongCompliance
	// MissingEvent: a policy event the hub sent has no row in
	// stb.policy_events.
	MissingEvent
	// UnexpectedEvent: a row of stb.policy_events is not an event the
	// hub sent.
	UnexpectedEvent
	// MissingHeartbeat: stb.hub_heartbeats has no row for a hub that
	// sent heartbeats.
	MissingHeartbeat
	// UnexpectedHeartbeat: it has one for a hub that sent none.
	UnexpectedHeartbeat
	// MissingHub: stb.hubs has no row for a hub the bridge wrote
	// bundles of.
	MissingHub
	// UnexpectedHub: some table read has rows of a hub not in the
	// expected state.
	UnexpectedHub
	// MissingLocalEvent: an event.localreplicatedpolicy event a global-hub
	// agent sent has no row in event.local_policies.
	MissingLocalEvent
	// UnexpectedLocalEvent: a row of event.local_policies is not an event
	// the hub sent (or is one stored twice).
	UnexpectedLocalEvent
	// WrongHubInfo: status.leaf_hubs has no live row, or its newest live
	// row has another clusterId or payload, for a hub whose global-hub
	// agent sent managedhub.info with a clusterId; or a live row for a hub
	// that sent none.
	WrongHubInfo
	// MissingRootEvent, UnexpectedRootEvent: as MissingLocalEvent and
	// UnexpectedLocalEvent, for event.localrootpolicy and
	// event.local_root_policies.
	MissingRootEvent
	UnexpectedRootEvent
	// MissingClusterEvent, UnexpectedClusterEvent: an event.managedcluster
	// event the hub sent has no row in event.managed_clusters, or a row
	// there is not one it sent (or is one stored twice).
	MissingClusterEvent
	UnexpectedClusterEvent
	// MissingLocalPolicy, UnexpectedLocalPolicy, WrongLocalPolicy: a policy
	// of the hub's last policy.localspec has no live row in
	// local_spec.policies, a live row is not one of them, or its
	// namespace, name or payload differ.
	MissingLocalPolicy
	UnexpectedLocalPolicy
	WrongLocalPolicy
	// MissingAlertCounts, UnexpectedAlertCounts, WrongAlertCounts: the
	// same for security.alert_counts and the hub's last
	// security.alertcounts per ACS Central.
	MissingAlertCounts
	UnexpectedAlertCounts
	WrongAlertCounts
	// MissingMigration, UnexpectedMigration, WrongMigration: the same for
	// stb.cluster_migrations and the hub's last report per migration
	// and stage since its last resync report.
	MissingMigration
	UnexpectedMigration
	WrongMigration
)

// Category groups differences: a kind and, for version kinds, the bundle
// type.
type Category struct {
	Kind       Kind
	BundleType string // for StaleVersion, NewerVersion, MissingVersion, UnexpectedVersion
}

// Describe says what n affected hubs of the category have, as a phrase
// such as "3 hubs have stale managedclusters versions".
func (c Category) Describe(n int) string {
	hubs, have, are := "hubs", "have", "are"
	if n == 1 {
		hubs, have, are = "hub", "has", "is"
	}
	var what string
	switch c.Kind {
	case StaleVersion:
		what = fmt.Sprintf("%s stale %s versions", have, c.BundleType)
	case NewerVersion:
		what = fmt.Sprintf("%s %s versions newer than the last sent", have, c.BundleType)
	case MissingVersion:
		what = fmt.Sprintf("%s no %s version", have, c.BundleType)
	case UnexpectedVersion:
		what = fmt.Sprintf("%s %s versions but sent no %s bundle", have, c.BundleType, c.BundleType)
	case MissingCluster:
		what = are + " missing managed clusters"
	case UnexpectedCluster:
		what = have + " unexpected managed clusters"
	case WrongClusterID:
		what = have + " managed clusters with wrong cluster ids"
	case WrongLabels:
		what = have + " managed clusters with wrong labels"
	case MissingCompliance:
		what = are + " missing compliance rows"
	case UnexpectedCompliance:
		what = have + " unexpected compliance rows"
	case WrongCompliance:
		what = have + " compliance rows in the wrong state"
	case MissingEvent:
		what = are + " missing policy events"
	case UnexpectedEvent:
		what = have + " unexpected policy events"
	case MissingHeartbeat:
		what = have + " no heartbeat"
	case UnexpectedHeartbeat:
		what = have + " a heartbeat but sent none"
	case MissingLocalEvent:
		what = are + " missing replicated-policy events"
	case UnexpectedLocalEvent:
		what = have + " unexpected replicated-policy events"
	case WrongHubInfo:
		what = have + " a missing, wrong or unexpected hub info"
	case MissingRootEvent:
		what = are + " missing root-policy events"
	case UnexpectedRootEvent:
		what = have + " unexpected root-policy events"
	case MissingClusterEvent:
		what = are + " missing managed-cluster events"
	case UnexpectedClusterEvent:
		what = have + " unexpected managed-cluster events"
	case MissingLocalPolicy:
		what = are + " missing local policies"
	case UnexpectedLocalPolicy:
		what = have + " unexpected local policies"
	case WrongLocalPolicy:
		what = have + " local policies that differ from the last sent"
	case MissingAlertCounts:
		what = are + " missing alert counts"
	case UnexpectedAlertCounts:
		what = have + " unexpected alert counts"
	case WrongAlertCounts:
		what = have + " wrong alert counts"
	case MissingMigration:
		what = are + " missing migration rows"
	case UnexpectedMigration:
		what = have + " unexpected migration rows"
	case WrongMigration:
		what = have + " migration rows that differ from the last report"
	case MissingHub:
		what = are + " missing from stb.hubs"
	case UnexpectedHub:
		return fmt.Sprintf("%d unexpected %s %s rows in the database", n, hubs, have)
	default:
		what = fmt.Sprintf("%s differences of kind %d", have, int(c.Kind))
	}
	return fmt.Sprintf("%d %s %s", n, hubs, what)
}

// MaxMismatches is the number of differences a Report keeps; beyond it
// they are only counted.
const MaxMismatches = 1000

// summaryMismatches is the number of differences Summary lists.
const summaryMismatches = 20

// Report is the outcome of Verify.
type Report struct {
	// Hubs, Versions, Clusters, ComplianceRows and Events count what was
	// expected: hubs, rows of stb.bundle_versions (those whose version
	// is certain), managed clusters and compliance rows (in
	// stb.managed_clusters and stb.compliance, or status.managed_clusters
	// and local_status.compliance for the global-hub agent), and rows of
	// stb.policy_events, event.local_policies and
	// event.local_root_policies.
	Hubs           int
	Versions       int
	Clusters       int
	ComplianceRows int
	Events         int
	// ClusterEvents, LocalPolicies, AlertCounts and Migrations count the
	// expected rows of the global-hub agent's tables:
	// event.managed_clusters, local_spec.policies, security.alert_counts
	// and stb.cluster_migrations.
	ClusterEvents int
	LocalPolicies int
	AlertCounts   int
	Migrations    int

	// Tombstones counts the rows of stb.bundle_versions a hub delete
	// left for types the hub did not send (stb hub delete), and Earlier
	// the rows an earlier run left in a database simulated into again
	// (sim.Expected.FirstIncarnation): versions of types this run did not
	// send, at an incarnation below the run's first, and policy events
	// an earlier run named. Neither is a difference.
	Tombstones, Earlier int

	// Differences is the number of differences found.
	Differences int
	// Mismatches describes the differences, one line each, sorted (so
	// lines of one hub are together); at most MaxMismatches of them.
	Mismatches []string
	// Counts is the number of hubs affected per category.
	Counts map[Category]int

	affected map[Category]map[string]struct{}
}

// OK reports whether the database holds exactly the expected state.
func (r *Report) OK() bool { return r.Differences == 0 }

// add records a difference of hub in category c.
func (r *Report) add(c Category, hub, format string, args ...any) {
	r.Differences++
	if len(r.Mismatches) < MaxMismatches {
		r.Mismatches = append(r.Mismatches, hub+": "+fmt.Sprintf(format, args...))
	}
	if r.affected == nil {
		r.affected = make(map[Category]map[string]struct{})
	}
	hubs := r.affected[c]
	if hubs == nil {
		hubs = make(map[string]struct{})
		r.affected[c] = hubs
	}
	hubs[hub] = struct{}{}
}

// finish sorts the mismatches and fills Counts.
func (r *Report) finish() {
	slices.Sort(r.Mismatches)
	r.Counts = make(map[Category]int, len(r.affected))
	for c, hubs := range r.affected {
		r.Counts[c] = len(hubs)
	}
}

// categories returns the categories with differences in Summary's order.
func (r *Report) categories() []Category {
	return slices.SortedFunc(maps.Keys(r.Counts), func(a, b Category) int {
		return cmp.Or(cmp.Compare(a.Kind, b.Kind), strings.Compare(a.BundleType, b.BundleType))
	})
}

// Summary says whether the database matches and, if not, how: the number
// of hubs affected per category and the first differences.
func (r *Report) Summary() string {
	if r.OK() {
		s := fmt.Sprintf("database matches the expected state: %d hubs, %d bundle versions, %d managed clusters, %d compliance rows, %d policy events",
			r.Hubs, r.Versions, r.Clusters, r.ComplianceRows, r.Events)
		if r.hasGlobalHubRows() {
			s += ", " + r.globalHubSummary()
		}
		if r.Tombstones > 0 || r.Earlier > 0 {
			s += fmt.Sprintf(" (besides %d tombstones of deleted hubs and %d rows of earlier runs)", r.Tombstones, r.Earlier)
		}
		return s
	}
	var b strings.Builder
	fmt.Fprintf(&b, "database differs from the expected state of %d hubs: %s\n", r.Hubs, plural(r.Differences, "difference"))
	for _, c := range r.categories() {
		fmt.Fprintf(&b, "  %s\n", c.Describe(r.Counts[c]))
	}
	n := min(len(r.Mismatches), summaryMismatches)
	if n == r.Differences {
		b.WriteString("differences:\n")
	} else {
		fmt.Fprintf(&b, "first %d of %s:\n", n, plural(r.Differences, "difference"))
	}
	for _, m := range r.Mismatches[:n] {
		fmt.Fprintf(&b, "  %s\n", m)
	}
	return strings.TrimSuffix(b.String(), "\n")
}

// plural returns n and noun, with an s unless n is 1.
func plural(n int, noun string) string {
	if n == 1 {
		return "1 " + noun
	}
	return fmt.Sprintf("%d %ss", n, noun)
}
