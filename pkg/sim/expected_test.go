package sim

import (
	"bytes"
	"errors"
	"io/fs"
	"os"
	"path/filepath"
	"reflect"
	"strings"
	"testing"

	"github.com/stbridge/stb/pkg/bundle"
)

func TestExpectedRoundTrip(t *testing.T) {
	exp, _ := run(t, Config{Hubs: 5, Clusters: 8, Generations: 12, Seed: 5, RestartProbability: 0.3})
	path := filepath.Join(t.TempDir(), "expected.json")
	if err := exp.WriteFile(path); err != nil {
		t.Fatalf("WriteFile: %v", err)
	}
	got, err := ReadExpected(path)
	if err != nil {
		t.Fatalf("ReadExpected: %v", err)
	}
	if !reflect.DeepEqual(got, exp) {
		t.Fatalf("round trip changed the expected state")
	}

	// Stable: writing again gives the same bytes, and no temporary file
	// is left beside it.
	first, err := os.ReadFile(path)
	if err != nil {
		t.Fatal(err)
	}
	if err := got.WriteFile(path); err != nil {
		t.Fatalf("WriteFile again: %v", err)
	}
	second, err := os.ReadFile(path)
	if err != nil {
		t.Fatal(err)
	}
	if !bytes.Equal(first, second) {
		t.Fatal("writing the same state twice gave different files")
	}
	entries, err := os.ReadDir(filepath.Dir(path))
	if err != nil {
		t.Fatal(err)
	}
	if len(entries) != 1 {
		t.Fatalf("directory holds %d entries, want only expected.json", len(entries))
	}
}

func TestExpectedFileForm(t *testing.T) {
	exp := &Expected{
		Seed: 1, Topic: "status", Generations: 2, Messages: 2,
		MessagesByType: map[string]int{"heartbeat": 1, "managedclusters": 1},
		Hubs: map[string]*HubState{"hub-001": {
			Versions:       map[string]bundle.Version{"heartbeat": {Incarnation: 2, Generation: 1}, "managedclusters": {Incarnation: 18446744073709551615, Generation: 2}},
			VersionsAtMost: map[string]bundle.Version{"compliancedelta": {Incarnation: 2, Generation: 7}},
			Heartbeat:      true,
			ManagedClusters: map[string]Cluster{
				"hub-001-cluster-001": {UID: "u1", Labels: map[string]string{"generation": "2"}},
			},
			Compliance: map[string]map[string]ComplianceState{
				"p1": {"hub-001-cluster-001": NonCompliant},
			},
			Events: map[string]map[string][]string{
				"p1": {"hub-001-cluster-001": {"policy-001.00000001", "policy-001.00000002"}},
			},
		}},
	}
	data, err := exp.Encode()
	if err != nil {
		t.Fatal(err)
	}
	for _, want := range []string{
		`"heartbeat": "2.1"`,
		`"managedclusters": "18446744073709551615.2"`,
		"\"versionsAtMost\": {\n        \"compliancedelta\": \"2.7\"\n      }",
		`"hub-001-cluster-001": "non_compliant"`,
		`"policy-001.00000002"`,
		"\n  \"hubs\": {\n    \"hub-001\": {",
	} {
		if !strings.Contains(string(data), want) {
			t.Errorf("file lacks %q:\n%s", want, data)
		}
	}
	got, err := DecodeExpected(data)
	if err != nil {
		t.Fatal(err)
	}
	if !reflect.DeepEqual(got, exp) {
		t.Fatalf("decoded %+v, want %+v", got, exp)
	}
}

// A file written before policies were simulated reads as hubs without
// policies: no compliance rows and no events expected.
func TestDecodeExpectedWithoutPolicies(t *testing.T) {
	exp, err := DecodeExpected([]byte(`{"hubs": {"h": {"versions": {"heartbeat": "1.1"}, "heartbeat": true, "managedClusters": {}}}}`))
	if err != nil {
		t.Fatal(err)
	}
	h := exp.Hubs["h"]
	if h.Compliance == nil || h.Events == nil || len(h.Compliance)+len(h.Events) != 0 || h.VersionsAtMost != nil {
		t.Fatalf("decoded %+v, want empty policy state", h)
	}
}

func TestDecodeExpectedRejects(t *testing.T) {
	for name, data := range map[string]string{
		"not JSON":    `{`,
		"no hubs":     `{"messages": 3}`,
		"null hub":    `{"hubs": {"h": null}}`,
		"bad version": `{"hubs": {"h": {"versions": {"heartbeat": "1-2"}}}}`,
		"bad bound":   `{"hubs": {"h": {"versionsAtMost": {"compliancedelta": "x"}}}}`,
		"exact and bounded": `{"hubs": {"h": {"versions": {"compliancedelta": "1.2"},
			"versionsAtMost": {"compliancedelta": "1.2"}}}}`,
		"bad compliance": `{"hubs": {"h": {"compliance": {"p": {"c": "mostly"}}}}}`,
	} {
		t.Run(name, func(t *testing.T) {
			if _, err := DecodeExpected([]byte(data)); err == nil {
				t.Fatalf("DecodeExpected(%s) succeeded", data)
			}
		})
	}
}

func TestReadExpectedMissingFile(t *testing.T) {
	if _, err := ReadExpected(filepath.Join(t.TempDir(), "nope.json")); !errors.Is(err, fs.ErrNotExist) {
		t.Fatalf("ReadExpected of a missing file: %v, want fs.ErrNotExist", err)
	}
}
