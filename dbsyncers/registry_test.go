package dbsyncers

import (
	"context"
	"errors"
	"slices"
	"testing"

	"github.com/stbridge/stb/pkg/bundle"
)

func fakeSyncer(name string, rule bundle.Rule, dependsOn string) Syncer {
	return Syncer{
		TypeInfo: bundle.TypeInfo{Name: name, Kind: bundle.Complete, Rule: rule, DependsOn: dependsOn},
		Decode:   func([]byte) (any, error) { return nil, nil },
		Handle:   func(context.Context, DB, []*bundle.Bundle) error { return nil },
	}
}

func TestNewRegistry(t *testing.T) {
	noHandler := fakeSyncer("c", bundle.NoDependency, "")
	noHandler.Handle = nil
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
		{"missing handler", []Syncer{noHandler}, true, nil},
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
	var names []string
	for _, ti := range r.Types() {
		names = append(names, ti.Name)
	}
	// Heartbeats come first: they are cheap and say the hub is alive.
	want := []string{"heartbeat", "managedclusters"}
	if len(names) < len(want) || !slices.Equal(names[:len(want)], want) {
		t.Fatalf("types = %v, want them to start with %v", names, want)
	}
	for _, name := range want {
		s, _ := r.Lookup(name)
		if s.Kind != bundle.Complete || s.Rule != bundle.NoDependency {
			t.Errorf("%s: kind %v rule %v, want complete without dependency", name, s.Kind, s.Rule)
		}
	}
}
