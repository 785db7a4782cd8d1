package dbsyncers

import (
	"errors"
	"maps"
	"slices"
	"testing"

	"github.com/stbridge/stb/pkg/bundle"
)

func fakeSyncer(name string, rule bundle.Rule, dependsOn string) Syncer {
	return Syncer{
		TypeInfo: bundle.TypeInfo{Name: name, Kind: bundle.Complete, Rule: rule, DependsOn: dependsOn},
		Decode:   func([]byte) (any, error) { return nil, nil },
		Plan:     func([]*bundle.Bundle) (Write, error) { return Write{}, nil },
	}
}

func TestNewRegistry(t *testing.T) {
	noPlan := fakeSyncer("c", bundle.NoDependency, "")
	noPlan.Plan = nil
	noDecoder := fakeSyncer("c", bundle.NoDependency, "")
	noDecoder.Decode = nil
	bundleDecoder := fakeSyncer("c", bundle.NoDependency, "")
	bundleDecoder.Decode, bundleDecoder.DecodeBundle = nil, func(*bundle.Bundle) (any, error) { return nil, nil }
	twoDecoders := fakeSyncer("c", bundle.NoDependency, "")
	twoDecoders.DecodeBundle = bundleDecoder.DecodeBundle
	tests := []struct {
		name    string
		syncers []Syncer
		wantErr bool
		wantIs  error
	}{
		{"ordered dependency", []Syncer{
			fakeSyncer("a", bundle.NoDependency, ""),
			fakeSyncer("b", bundle.AfterProcessed, "a"),
		}, false, nil},
		{"duplicate type", []Syncer{
			fakeSyncer("a", bundle.NoDependency, ""),
			fakeSyncer("a", bundle.NoDependency, ""),
		}, true, ErrDuplicateType},
		{"unregistered dependency", []Syncer{
			fakeSyncer("b", bundle.AtLeast, "a"),
		}, true, nil},
		{"dependency registered later", []Syncer{
			fakeSyncer("b", bundle.Exactly, "a"),
			fakeSyncer("a", bundle.NoDependency, ""),
		}, true, nil},
		{"missing plan", []Syncer{noPlan}, true, nil},
		{"missing decoder", []Syncer{noDecoder}, true, nil},
		{"a decoder of bundles", []Syncer{bundleDecoder}, false, nil},
		{"two decoders", []Syncer{twoDecoders}, true, nil},
		{"missing name", []Syncer{fakeSyncer("", bundle.NoDependency, "")}, true, nil},
	}
	for _, tt := range tests {
		t.Run(tt.name, func(t *testing.T) {
			r, err := NewRegistry(tt.syncers...)
			if (err != nil) != tt.wantErr {
				t.Fatalf("NewRegistry error = %v, want error %v", err, tt.wantErr)
			}
			if tt.wantIs != nil && !errors.Is(err, tt.wantIs) {
				t.Errorf("error %v is not %v", err, tt.wantIs)
			}
			if err == nil && len(r.Types()) != len(tt.syncers) {
				t.Errorf("Types() has %d entries, want %d", len(r.Types()), len(tt.syncers))
			}
		})
	}
}

func TestDefaultRegistry(t *testing.T) {
	r := Default()
	// Heartbeats come first: they are cheap and say the hub is alive. Then
	// each type after the one it depends on, events last.
	want := []bundle.TypeInfo{
		{Name: "heartbeat", Kind: bundle.Complete},
		{Name: "managedclusters", Kind: bundle.Complete},
		{Name: "clusterspolicies", Kind: bundle.Complete, DependsOn: "managedclusters", Rule: bundle.AfterProcessed},
		{Name: "compliance", Kind: bundle.Complete, DependsOn: "clusterspolicies", Rule: bundle.AtLeast},
		{Name: "compliancedelta", Kind: bundle.Delta, DependsOn: "compliance", Rule: bundle.Exactly},
		{Name: "policyevents", Kind: bundle.Stream},
	}
	if got := r.Types(); !slices.Equal(got, want) {
		t.Fatalf("Types() = %+v\nwant %+v", got, want)
	}
	for _, ti := range want {
		s, ok := r.Lookup(ti.Name)
		if !ok || s.Decode == nil || s.Plan == nil {
			t.Errorf("%s: registered %v, with decoder and handler", ti.Name, ok)
		}
	}
	mergers := r.Mergers()
	if len(mergers) != 1 || mergers["compliancedelta"] == nil {
		t.Errorf("Mergers() = %v, want compliancedelta's only", slices.Collect(maps.Keys(mergers)))
	}
}

func TestRegisterMerge(t *testing.T) {
	complete := fakeSyncer("a", bundle.NoDependency, "")
	complete.Merge = func(older, newer any) any { return newer }
	if _, err := NewRegistry(complete); err == nil {
		t.Errorf("NewRegistry accepted a merge function on a complete type")
	}
	delta := fakeSyncer("d", bundle.Exactly, "a")
	delta.Kind, delta.Merge = bundle.Delta, complete.Merge
	r, err := NewRegistry(fakeSyncer("a", bundle.NoDependency, ""), delta)
	if err != nil {
		t.Fatal(err)
	}
	if m := r.Mergers(); len(m) != 1 || m["d"] == nil {
		t.Errorf("Mergers() = %v, want d's", m)
	}
}
