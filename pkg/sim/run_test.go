package sim

import (
	"context"
	"encoding/json"
	"errors"
	"maps"
	"reflect"
	"strconv"
	"strings"
	"testing"
	"time"

	"github.com/stbridge/stb/dbsyncers"
	"github.com/stbridge/stb/pkg/bundle"
)

func TestRunIsDeterministic(t *testing.T) {
	cfg := Config{Hubs: 7, Clusters: 12, Generations: 15, Seed: 42, RestartProbability: 0.2}
	exp1, rec1 := run(t, cfg)
	exp2, rec2 := run(t, cfg)
	if !reflect.DeepEqual(exp1, exp2) {
		t.Fatal("two runs with the same seed returned different expected states")
	}
	if len(rec1.msgs) != len(rec2.msgs) {
		t.Fatalf("runs sent %d and %d messages", len(rec1.msgs), len(rec2.msgs))
	}
	for i := range rec1.msgs {
		a, b := rec1.msgs[i], rec2.msgs[i]
		a.Time, b.Time = time.Time{}, time.Time{} // the only field taken from the clock
		if !reflect.DeepEqual(a, b) {
			t.Fatalf("message %d differs:\n%+v\n%+v", i, a, b)
		}
	}

	cfg.Seed = 43
	exp3, _ := run(t, cfg)
	if reflect.DeepEqual(exp1.Hubs, exp3.Hubs) {
		t.Fatal("runs with different seeds returned the same hub states")
	}
}

// A hub's behaviour depends only on the seed and its own index, so adding
// hubs does not change the ones already there.
func TestRunHubsAreIndependent(t *testing.T) {
	small, _ := run(t, Config{Hubs: 2, Clusters: 5, Generations: 8, Seed: 7})
	large, _ := run(t, Config{Hubs: 5, Clusters: 5, Generations: 8, Seed: 7})
	for name, st := range small.Hubs {
		if !reflect.DeepEqual(st, large.Hubs[name]) {
			t.Errorf("hub %s differs when simulated beside more hubs", name)
		}
	}
}

func TestRunVersions(t *testing.T) {
	cfg := Config{Hubs: 10, Clusters: 3, Generations: 40, Seed: 1, RestartProbability: 0.3, FirstIncarnation: 5}
	exp, rec := run(t, cfg)

	last := map[string]bundle.Version{}
	restarts := map[string]int{}
	for i, m := range rec.msgs {
		prev, seen := last[m.Hub]
		switch {
		case !seen:
			if m.Version != (bundle.Version{Incarnation: 5, Generation: 1}) {
				t.Fatalf("message %d: first version of %s is %s, want 5.1", i, m.Hub, m.Version)
			}
		case m.Version.Incarnation == prev.Incarnation:
			if m.Version.Generation != prev.Generation+1 {
				t.Fatalf("message %d: %s went from %s to %s within an incarnation", i, m.Hub, prev, m.Version)
			}
		default:
			if m.Version.Incarnation != prev.Incarnation+1 || m.Version.Generation != 1 {
				t.Fatalf("message %d: %s restarted from %s to %s, want %d.1", i, m.Hub, prev, m.Version, prev.Incarnation+1)
			}
			// A restart happens between rounds, before the heartbeat.
			if m.Type != TypeHeartbeat {
				t.Fatalf("message %d: %s restarted before a %s", i, m.Hub, m.Type)
			}
			restarts[m.Hub]++
		}
		if !m.Version.Newer(prev) {
			t.Fatalf("message %d: version of %s did not increase: %s after %s", i, m.Hub, m.Version, prev)
		}
		last[m.Hub] = m.Version
	}

	total := 0
	for name, st := range exp.Hubs {
		if st.Restarts != restarts[name] {
			t.Errorf("hub %s: Expected says %d restarts, messages show %d", name, st.Restarts, restarts[name])
		}
		total += st.Restarts
	}
	if total == 0 || total != exp.Restarts {
		t.Errorf("restarts: %d over hubs, Expected.Restarts %d; want the same, above 0 at probability 0.3", total, exp.Restarts)
	}

	// Expected holds the last version sent per hub and type, but for
	// compliancedelta when a compliance report followed the last delta:
	// that one is only a bound.
	final := map[string]map[string]bundle.Version{}
	for _, m := range rec.msgs {
		if final[m.Hub] == nil {
			final[m.Hub] = map[string]bundle.Version{}
		}
		final[m.Hub][m.Type] = m.Version
	}
	bounded := 0
	for name, st := range exp.Hubs {
		want, wantAtMost := maps.Clone(final[name]), map[string]bundle.Version(nil)
		if d, ok := want[TypeComplianceDelta]; ok && want[TypeCompliance].Newer(d) {
			delete(want, TypeComplianceDelta)
			wantAtMost = map[string]bundle.Version{TypeComplianceDelta: d}
			bounded++
		}
		if !reflect.DeepEqual(st.Versions, want) || !reflect.DeepEqual(st.VersionsAtMost, wantAtMost) {
			t.Errorf("hub %s: Expected versions %v and at most %v, last sent %v", name, st.Versions, st.VersionsAtMost, final[name])
		}
	}
	if bounded == 0 || bounded == len(exp.Hubs) {
		t.Errorf("%d of %d hubs have a bounded compliancedelta version; want some, not all", bounded, len(exp.Hubs))
	}
}

func TestRunRestartsCanBeDisabled(t *testing.T) {
	exp, _ := run(t, Config{Hubs: 20, Clusters: 1, Generations: 30, RestartProbability: -1})
	if exp.Restarts != 0 {
		t.Fatalf("%d restarts with restarts disabled", exp.Restarts)
	}
}

func TestRunMessages(t *testing.T) {
	cfg := Config{Hubs: 4, Clusters: 20, Generations: 25, Seed: 9, Topic: "hubs-status", ChurnProbability: 0.5}
	exp, rec := run(t, cfg)

	if exp.Messages != len(rec.msgs) {
		t.Fatalf("Messages %d, recorded %d", exp.Messages, len(rec.msgs))
	}
	byType := map[string]int{}
	for _, m := range rec.msgs {
		byType[m.Type]++
	}
	if !maps.Equal(exp.MessagesByType, byType) {
		t.Errorf("MessagesByType %v, recorded %v", exp.MessagesByType, byType)
	}
	for _, typ := range []string{TypeHeartbeat, TypeManagedClusters} {
		if got, want := exp.MessagesByType[typ], cfg.Hubs*cfg.Generations; got != want {
			t.Errorf("MessagesByType[%s] = %d, want %d", typ, got, want)
		}
	}
	for _, typ := range []string{TypeClustersPolicies, TypeCompliance, TypeComplianceDelta, TypePolicyEvents} {
		if exp.MessagesByType[typ] == 0 {
			t.Errorf("no %s bundle sent", typ)
		}
	}
	if rec.flushes != 1 {
		t.Errorf("publisher flushed %d times, want 1", rec.flushes)
	}

	// Hubs take turns, each sending its bundles of the round together, a
	// heartbeat first and a managedclusters snapshot second.
	round, hubs := 0, []string{}
	for i, m := range rec.msgs {
		if m.Type == TypeHeartbeat {
			if len(hubs)%cfg.Hubs == 0 {
				round++
			}
			hubs = append(hubs, m.Hub)
			if want := cfg.withDefaults().hubName(len(hubs) - 1 - (round-1)*cfg.Hubs); m.Hub != want {
				t.Fatalf("message %d: round %d starts a heartbeat of %s, want %s", i, round, m.Hub, want)
			}
			if next := rec.msgs[i+1]; next.Hub != m.Hub || next.Type != TypeManagedClusters {
				t.Fatalf("message %d: a heartbeat of %s is followed by a %s of %s", i, m.Hub, next.Type, next.Hub)
			}
			continue
		}
		if prev := rec.msgs[i-1]; m.Hub != prev.Hub {
			t.Fatalf("message %d: a %s of %s follows a %s of %s", i, m.Type, m.Hub, prev.Type, prev.Hub)
		}
	}

	// Every message decodes with the bridge's own decoders, and the last
	// snapshot of each hub is what Expected holds.
	registry := dbsyncers.Default()
	ids := map[string]bool{}
	lastSnapshot := map[string]map[string]Cluster{}
	before := time.Now()
	for i, m := range rec.msgs {
		wantDependency := m.Type == TypeCompliance || m.Type == TypeComplianceDelta
		if m.Topic != cfg.Topic || (m.Dependency != nil) != wantDependency || m.Time.IsZero() || m.Time.After(before) {
			t.Fatalf("message %d: %s with topic %q, dependency %v, time %v", i, m.Type, m.Topic, m.Dependency, m.Time)
		}
		if ids[m.ID] {
			t.Fatalf("message %d: duplicate id %q", i, m.ID)
		}
		ids[m.ID] = true
		s, ok := registry.Lookup(m.Type)
		if !ok {
			t.Fatalf("message %d: type %q unknown to the bridge", i, m.Type)
		}
		if _, err := s.Decode(m.Data); err != nil {
			t.Fatalf("message %d: the bridge cannot decode %s: %v", i, m.Type, err)
		}
		if m.Type == TypeManagedClusters {
			lastSnapshot[m.Hub] = decodeSnapshot(t, m.Data)
		}
	}
	for name, st := range exp.Hubs {
		if !reflect.DeepEqual(st.ManagedClusters, lastSnapshot[name]) {
			t.Errorf("hub %s: Expected clusters differ from its last snapshot", name)
		}
		if !st.Heartbeat {
			t.Errorf("hub %s: no heartbeat expected", name)
		}
		// About Clusters clusters: 10% or at least one either way.
		if n := len(st.ManagedClusters); n < 18 || n > 22 {
			t.Errorf("hub %s has %d clusters, want 18..22", name, n)
		}
		for cname, c := range st.ManagedClusters {
			g, err := strconv.Atoi(c.Labels[LabelGeneration])
			if err != nil || g < 1 || g > cfg.Generations {
				t.Errorf("hub %s cluster %s: generation label %q", name, cname, c.Labels[LabelGeneration])
			}
		}
	}
}

// decodeSnapshot reads a managedclusters payload into the form Expected
// keeps.
func decodeSnapshot(t *testing.T, data []byte) map[string]Cluster {
	t.Helper()
	var p struct {
		Objects []struct {
			APIVersion string `json:"apiVersion"`
			Kind       string `json:"kind"`
			Metadata   struct {
				Name   string            `json:"name"`
				UID    string            `json:"uid"`
				Labels map[string]string `json:"labels"`
			} `json:"metadata"`
		} `json:"objects"`
	}
	if err := json.Unmarshal(data, &p); err != nil {
		t.Fatalf("decode snapshot: %v", err)
	}
	out := make(map[string]Cluster, len(p.Objects))
	for _, o := range p.Objects {
		if o.Kind != "ManagedCluster" || o.APIVersion != "cluster.open-cluster-management.io/v1" {
			t.Fatalf("object %s is a %s %s", o.Metadata.Name, o.APIVersion, o.Kind)
		}
		if _, dup := out[o.Metadata.Name]; dup {
			t.Fatalf("cluster %s listed twice", o.Metadata.Name)
		}
		out[o.Metadata.Name] = Cluster{UID: o.Metadata.UID, Labels: o.Metadata.Labels}
	}
	return out
}

func TestRunClusterChanges(t *testing.T) {
	// Only the clusters that change get the round's generation label.
	_, rec := run(t, Config{Hubs: 1, Clusters: 200, Generations: 2, Seed: 3, ChangeProbability: 0.25, ChurnProbability: -1})
	snapshots := ofType(rec.msgs, TypeManagedClusters)
	if len(snapshots) != 2 {
		t.Fatalf("%d snapshots in 2 rounds", len(snapshots))
	}
	second := decodeSnapshot(t, snapshots[1].Data)
	changed := 0
	for _, c := range second {
		if c.Labels[LabelGeneration] == "2" {
			changed++
		}
	}
	if changed < 20 || changed > 80 {
		t.Fatalf("%d of 200 clusters changed at probability 0.25", changed)
	}
}

func TestRunZeroClusters(t *testing.T) {
	exp, rec := run(t, Config{Hubs: 2, Clusters: 0, Generations: 3})
	for name, st := range exp.Hubs {
		if len(st.ManagedClusters) != 0 {
			t.Errorf("hub %s has %d clusters, want 0", name, len(st.ManagedClusters))
		}
	}
	if got := string(rec.msgs[1].Data); got != `{"objects":[]}` {
		t.Errorf("empty snapshot is %s", got)
	}
	// Policies are placed nowhere: no rows, so no deltas and no events.
	for name, st := range exp.Hubs {
		if len(st.Compliance) != 0 || len(st.Events) != 0 {
			t.Errorf("hub %s expects %d compliance rows and %d events, want none", name, st.ComplianceRows(), st.PolicyEvents())
		}
	}
	for _, typ := range []string{TypeComplianceDelta, TypePolicyEvents} {
		if n := exp.MessagesByType[typ]; n != 0 {
			t.Errorf("%d %s bundles sent without clusters", n, typ)
		}
	}
	for _, m := range ofType(rec.msgs, TypeClustersPolicies) {
		if !strings.Contains(string(m.Data), `"clusters":[]`) {
			t.Errorf("placement without clusters: %s", m.Data)
		}
	}
}

func TestRunRate(t *testing.T) {
	// 200 messages at 1000/s take about 190 ms (the first 10 ms' worth go
	// at once); assert only a floor, never a ceiling.
	cfg := Config{Hubs: 10, Clusters: 2, Generations: 10, Rate: 1000, Policies: -1}
	start := time.Now()
	exp, _ := run(t, cfg)
	elapsed := time.Since(start)
	if exp.Messages != 200 {
		t.Fatalf("sent %d messages, want 200", exp.Messages)
	}
	if elapsed < 150*time.Millisecond {
		t.Fatalf("200 messages at 1000/s took %v, want at least 150ms", elapsed)
	}
}

func TestRunStopsOnContext(t *testing.T) {
	ctx, cancel := context.WithCancel(context.Background())
	sent := 0
	pub := PublisherFunc(func(context.Context, Message) error { return nil })
	_, err := Run(ctx, Config{Hubs: 3, Clusters: 1, Generations: 1000, Rate: 10000}, pub, func(n int) {
		sent = n
		if n == 50 {
			cancel()
		}
	})
	if !errors.Is(err, context.Canceled) {
		t.Fatalf("Run after cancel: %v, want context.Canceled", err)
	}
	if sent != 50 {
		t.Fatalf("sent %d messages after cancelling at 50", sent)
	}
}

func TestRunPublishError(t *testing.T) {
	boom := errors.New("broker down")
	calls := 0
	pub := PublisherFunc(func(context.Context, Message) error {
		calls++
		if calls == 3 {
			return boom
		}
		return nil
	})
	exp, err := Run(context.Background(), Config{Hubs: 2, Clusters: 1, Generations: 2}, pub, nil)
	if !errors.Is(err, boom) || exp != nil {
		t.Fatalf("Run = %v, %v; want nil and the publish error", exp, err)
	}
}

func TestRunRejectsBadConfig(t *testing.T) {
	pub := PublisherFunc(func(context.Context, Message) error { t.Fatal("published"); return nil })
	if _, err := Run(context.Background(), Config{}, pub, nil); err == nil {
		t.Fatal("Run accepted an empty config")
	}
}
