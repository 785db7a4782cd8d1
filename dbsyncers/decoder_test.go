package dbsyncers

import (
	"errors"
	"testing"

	"github.com/stbridge/stb/pkg/bundle"
)

// The reader rejects a message of a type that applies only on exactly the
// version it names when it names none; only deltas are such types.
func TestRegistryNeedsDependency(t *testing.T) {
	reg, err := ForProfiles(true, true)
	if err != nil {
		t.Fatal(err)
	}
	for typ, want := range map[string]bool{
		"compliancedelta":         true,
		"compliance":              false, // waits for its clusterspolicies, but may name none
		"heartbeat":               false,
		"clusterspolicies":        false,
		GHLocalCompleteCompliance: true,
		"nosuchtype":              false,
	} {
		if got := reg.NeedsDependency(typ); got != want {
			t.Errorf("NeedsDependency(%q) = %v, want %v", typ, got, want)
		}
	}
}

// An unknown type is unknown before decoding and ErrUnknownType when
// decoded anyway; a known one decodes with its syncer.
func TestRegistryDecodes(t *testing.T) {
	reg := Default()
	if reg.Known("nosuchtype") || !reg.Known("heartbeat") {
		t.Fatal("Known does not follow the registry")
	}
	if _, err := reg.Decode("nosuchtype", []byte(`{}`)); !errors.Is(err, bundle.ErrUnknownType) {
		t.Fatalf("Decode of an unknown type: %v", err)
	}
	if _, err := reg.Decode("heartbeat", []byte(`{}`)); err != nil {
		t.Fatalf("Decode of a heartbeat: %v", err)
	}
}
