package dbsyncers

import (
	"cmp"
	"errors"
	"fmt"
	"slices"
	"strconv"
	"strings"

	"github.com/jackc/pgx/v5"

	"github.com/stbridge/stb/pkg/bundle"
	"github.com/stbridge/stb/pkg/deadletter"
	"github.com/stbridge/stb/pkg/jsonscan"
)

// ComplianceChange is one (policy, cluster) pair of a compliance delta and
// the state it changes to.
type ComplianceChange struct {
	PolicyID string
	Cluster  string
	State    ComplianceState
}

// ComplianceDeltaPayload is the decoded data of a compliancedelta bundle,
// or of several folded together by ComplianceDelta().Merge: its changes
// sorted by policy and cluster, one per pair.
type ComplianceDeltaPayload struct {
	Changes []ComplianceChange
}

// ComplianceDelta returns the syncer of "compliancedelta" bundles: the
// compliance changes of a hub since its compliance bundle at exactly the
// delta's base version (extdependencyversion). Deltas come to Plan as
// one ordered group on one base; Merge folds them together when a hub's
// waiting deltas grow too large.
func ComplianceDelta() Syncer {
	return Syncer{
		TypeInfo: bundle.TypeInfo{
			Name: "compliancedelta", Kind: bundle.Delta,
			DependsOn: "compliance", Rule: bundle.Exactly,
		},
		Decode: decodeComplianceDelta,
		Plan:   planComplianceDelta,
		Merge:  mergeComplianceDelta,
	}
}

// severity orders the states a single delta may give one pair: a cluster
// listed in more than one list of a policy takes the worst of them
// (non_compliant, then unknown, then compliant), as a complete compliance
// bundle does.
func severity(s ComplianceState) int {
	switch s {
	case NonCompliant:
		return 2
	case UnknownCompliance:
		return 1
	}
	return 0
}

// decodeComplianceDelta reads {"objects":[{"policyId","compliantClusters":
// [...],"nonCompliantClusters":[...],"unknownComplianceClusters":[...]}...]}.
// Within one delta a pair listed by a later object takes that object's
// state; one listed twice by the same object takes the worse state.
func decodeComplianceDelta(data []byte) (any, error) {
	type ranked struct {
		ComplianceChange
		rank int // object index, then severity: the highest wins
	}
	var changes []ranked
	reset := func() { changes = changes[:0] }
	err := eachObject(data, true, reset, func(i int, d *jsonscan.Decoder) error {
		var policyID string
		var compliant, nonCompliant, unknown []string
		err := d.Object(func(field []byte) error {
			switch string(field) {
			case "policyId":
				return setString(d, &policyID, "policyId")
			case "compliantClusters":
				return setStrings(d, &compliant, "compliantClusters")
			case "nonCompliantClusters":
				return setStrings(d, &nonCompliant, "nonCompliantClusters")
			case "unknownComplianceClusters":
				return setStrings(d, &unknown, "unknownComplianceClusters")
			}
			return nil
		})
		if err != nil {
			return err
		}
		if err := checkName("policyId", policyID); err != nil {
			return err
		}
		for _, l := range [...]struct {
			field string
			names []string
			state ComplianceState
		}{
			{"compliantClusters", compliant, Compliant},
			{"nonCompliantClusters", nonCompliant, NonCompliant},
			{"unknownComplianceClusters", unknown, UnknownCompliance},
		} {
			if err := checkNames(l.field, l.names); err != nil {
				return fmt.Errorf("policy %q: %w", policyID, err)
			}
			for _, c := range l.names {
				changes = append(changes, ranked{ComplianceChange{policyID, c, l.state}, 4*i + severity(l.state)})
			}
		}
		return nil
	})
	if err != nil {
		return nil, badPayload(fmt.Errorf("compliancedelta %w", err))
	}
	slices.SortFunc(changes, func(a, b ranked) int {
		return cmp.Or(compareChange(a.ComplianceChange, b.ComplianceChange), cmp.Compare(a.rank, b.rank))
	})
	out := make([]ComplianceChange, 0, len(changes))
	for i, c := range changes {
		if i+1 < len(changes) && compareChange(changes[i+1].ComplianceChange, c.ComplianceChange) == 0 {
			continue // a higher rank of the same pair follows
		}
		out = append(out, c.ComplianceChange)
	}
	return &ComplianceDeltaPayload{Changes: out}, nil
}

// compareChange orders changes by policy, then cluster.
func compareChange(a, b ComplianceChange) int {
	return cmp.Or(strings.Compare(a.PolicyID, b.PolicyID), strings.Compare(a.Cluster, b.Cluster))
}

// mergeComplianceDelta folds newer into older: the union of their pairs,
// newer's state winning where both have one. It modifies neither: the
// result is a new payload, sharing strings only, since older may be the
// payload of a bundle still referenced elsewhere (conflation units hand
// bundles out by pointer and promise not to change them). Each merge is
// one pass over both sorted lists.
//
// A payload of another type means a programming error upstream; the merge
// then returns a value the handler rejects, so the group becomes a
// bad_payload dead letter instead of silently losing a delta.
func mergeComplianceDelta(older, newer any) any {
	o, ok1 := older.(*ComplianceDeltaPayload)
	n, ok2 := newer.(*ComplianceDeltaPayload)
	if !ok1 || !ok2 || o == nil || n == nil {
		return &unmergeable{Older: fmt.Sprintf("%T", older), Newer: fmt.Sprintf("%T", newer)}
	}
	switch {
	case len(n.Changes) == 0:
		return o
	case len(o.Changes) == 0:
		return n
	}
	out := make([]ComplianceChange, 0, len(o.Changes)+len(n.Changes))
	a, b := o.Changes, n.Changes
	for len(a) > 0 && len(b) > 0 {
		switch c := compareChange(a[0], b[0]); {
		case c < 0:
			out, a = append(out, a[0]), a[1:]
		case c > 0:
			out, b = append(out, b[0]), b[1:]
		default:
			out, a, b = append(out, b[0]), a[1:], b[1:]
		}
	}
	out = append(append(out, a...), b...)
	return &ComplianceDeltaPayload{Changes: out}
}

// unmergeable is what mergeComplianceDelta returns for payloads it cannot
// merge; no handler accepts it.
type unmergeable struct{ Older, Newer string }

// foldComplianceDeltas returns the changes of a group of deltas applied in
// order, later winning per pair, sorted and one per pair, checking each
// payload. A group is small: conflation units merge a hub's waiting deltas
// into one once they exceed --max-delta-bytes.
func foldComplianceDeltas(bundles []*bundle.Bundle) ([]ComplianceChange, error) {
	var acc *ComplianceDeltaPayload
	for _, b := range bundles {
		p, err := payloadOf[ComplianceDeltaPayload](b)
		if err != nil {
			return nil, err
		}
		// STB's own deltas carry no PendingCompliance: it is out of range.
		for i, c := range p.Changes {
			if c.PolicyID == "" || c.Cluster == "" || c.State < Compliant || c.State > UnknownCompliance ||
				(i > 0 && compareChange(p.Changes[i-1], c) >= 0) {
				return nil, &PermanentError{Reason: deadletter.BadPayload, Err: fmt.Errorf(
					"compliancedelta %s of hub %q: change %d (%q, %q, %v) is empty, invalid, listed twice or out of order",
					b.Version, b.Hub, i, c.PolicyID, c.Cluster, c.State)}
			}
		}
		if acc == nil {
			acc = p
			continue
		}
		acc = mergeComplianceDelta(acc, p).(*ComplianceDeltaPayload)
	}
	return acc.Changes, nil
}

// baseSQL reads, and locks against a concurrent move until commit, the
// version of the hub's last written compliance bundle: the base the deltas
// must sit on.
const baseSQL = `
SELECT incarnation::text, generation::text
FROM stb.bundle_versions
WHERE hub = $1 AND bundle_type = 'compliance'
FOR SHARE`

// updateDeltaSQL writes the folded changes, like the compliance handler's
// listed rows (only rows that exist, only when the state differs), guarded
// by the base check ($5, $6) so that on a stale base it writes nothing,
// even before the transaction is rolled back.
const updateDeltaSQL = updateListedHead + unnestComplianceRows + updateListedTail + `
  AND EXISTS (
	SELECT 1 FROM stb.bundle_versions AS v
	WHERE v.hub = $1 AND v.bundle_type = 'compliance'
	  AND v.incarnation = $5::numeric AND v.generation = $6::numeric)`

// planComplianceDelta writes a group of deltas of one hub, all on one
// base, in one round trip: the base check and one UPDATE of the changes
// folded in order (later wins per pair). As with compliance bundles, a
// change to a pair without a row (one a newer placement removed) is
// skipped.
//
// When the hub's stored compliance is not at exactly the group's base the
// deltas describe changes to a state the database does not hold: the
// handler writes nothing and returns a *PermanentError with reason
// deadletter.StaleBase. Conflation units hold deltas back until their base is
// written and drop those on replaced bases, so this is a defence in depth
// against, for example, a second replica writing the same hub.
func planComplianceDelta(bundles []*bundle.Bundle) (Write, error) {
	last := bundles[len(bundles)-1]
	base := last.Dependency
	for _, b := range bundles {
		if !b.HasDependency {
			return Write{}, &PermanentError{Reason: deadletter.BadPayload, Err: fmt.Errorf(
				"compliancedelta %s of hub %q has no base version (extdependencyversion)", b.Version, b.Hub)}
		}
		if b.Dependency != base {
			return Write{}, &PermanentError{Reason: deadletter.BadGroup, Err: fmt.Errorf(
				"compliancedelta group of hub %q mixes bases %s and %s", b.Hub, b.Dependency, base)}
		}
	}
	changes, err := foldComplianceDeltas(bundles)
	if err != nil {
		return Write{}, err
	}
	var rows complianceRows
	for _, c := range changes {
		rows.add(c.PolicyID, c.Cluster, c.State)
	}
	checkBase := func(row pgx.Row) error {
		stored, found, err := scanVersion(row)
		if err != nil {
			return fmt.Errorf("read compliance base: %w", err)
		}
		if !found || stored != base {
			have := "none"
			if found {
				have = stored.String()
			}
			return &PermanentError{Reason: deadletter.StaleBase, Err: fmt.Errorf(
				"compliancedelta group of hub %q is on compliance %s, the database holds %s", last.Hub, base, have)}
		}
		return nil
	}
	return Write{Statements: []Statement{
		{What: "read compliance base", SQL: baseSQL, Args: []any{last.Hub}, Row: checkBase},
		{What: "update compliance from deltas", SQL: updateDeltaSQL, Args: []any{last.Hub, rows.policyIDs, rows.clusters, rows.states,
			strconv.FormatUint(base.Incarnation, 10), strconv.FormatUint(base.Generation, 10)}},
	}}, nil
}

// scanVersion reads a version sent as two decimal texts; found is false
// when there was no row.
func scanVersion(row pgx.Row) (v bundle.Version, found bool, err error) {
	var inc, gen string
	if err := row.Scan(&inc, &gen); err != nil {
		if errors.Is(err, pgx.ErrNoRows) {
			return v, false, nil
		}
		return v, false, err
	}
	v, err = bundle.ParseVersion(inc + "." + gen)
	return v, err == nil, err
}
