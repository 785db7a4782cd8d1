package dbsyncers

import (
	"errors"
	"testing"

	"github.com/stbridge/stb/pkg/bundle"
	"github.com/stbridge/stb/pkg/deadletter"
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
	if _, err := reg.Decode(&bundle.Bundle{Type: "nosuchtype", Raw: []byte(`{}`)}); !errors.Is(err, bundle.ErrUnknownType) {
		t.Fatalf("Decode of an unknown type: %v", err)
	}
	if _, err := reg.Decode(&bundle.Bundle{Type: "heartbeat", Raw: []byte(`{}`)}); err != nil {
		t.Fatalf("Decode of a heartbeat: %v", err)
	}
}

// A type with a DecodeBundle is handed the bundle, Attrs and all; its
// errors are bad_payloads like Decode's.
func TestRegistryDecodesBundles(t *testing.T) {
	reg, err := NewRegistry(Syncer{
		TypeInfo: bundle.TypeInfo{Name: "attrs", Kind: bundle.Stream},
		DecodeBundle: func(b *bundle.Bundle) (any, error) {
			a, ok := b.Attrs.(string)
			if !ok {
				return nil, errors.New("no attributes")
			}
			return a + ":" + string(b.Raw), nil
		},
		Plan: func([]*bundle.Bundle) (Write, error) { return Write{}, nil },
	})
	if err != nil {
		t.Fatal(err)
	}
	b := &bundle.Bundle{Type: "attrs", Raw: []byte("data"), Attrs: "id-1"}
	if err := reg.DecodeBundle(b); err != nil || b.Payload != "id-1:data" {
		t.Fatalf("payload %v, err %v; want id-1:data", b.Payload, err)
	}
	_, err = reg.Decode(&bundle.Bundle{Type: "attrs", Raw: []byte("data")})
	var reasoned deadletter.Reasoned
	if !errors.As(err, &reasoned) || reasoned.DeadLetterReason() != deadletter.BadPayload {
		t.Fatalf("a bundle without its attributes: %v, want a bad_payload", err)
	}
}
