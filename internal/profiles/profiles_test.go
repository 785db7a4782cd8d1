package profiles

import (
	"slices"
	"strings"
	"testing"

	"github.com/stbridge/stb/dbsyncers"
)

func TestParse(t *testing.T) {
	cases := []struct {
		profiles []string
		want     []string
		err      string
	}{
		{Default(), []string{STB, GlobalHub}, ""},
		{[]string{"stb"}, []string{STB}, ""},
		{[]string{"globalhub"}, []string{GlobalHub}, ""},
		{[]string{"globalhub", "stb", "stb"}, []string{STB, GlobalHub}, ""},
		{nil, nil, "no profile: want one or more of stb, globalhub"},
		{[]string{"hoh"}, nil, `unknown profile "hoh"`},
		{[]string{"stb", "hoh"}, nil, `unknown profile "hoh"`},
	}
	for _, c := range cases {
		got, err := Parse(c.profiles)
		if c.err != "" {
			if err == nil || !strings.Contains(err.Error(), c.err) {
				t.Errorf("%v: error %v, want %q", c.profiles, err, c.err)
			}
			continue
		}
		if err != nil || !slices.Equal(got.Names(), c.want) {
			t.Errorf("%v: %v, %v; want %v", c.profiles, got.Names(), err, c.want)
		}
	}
}

// The registry of a set holds its profiles' types, in All's order, and
// nothing else; the built-in ones match dbsyncers' own lists.
func TestSetRegistry(t *testing.T) {
	for _, names := range [][]string{{STB}, {GlobalHub}, {GlobalHub, STB}} {
		set, err := Parse(names)
		if err != nil {
			t.Fatal(err)
		}
		reg, err := set.Registry()
		if err != nil {
			t.Fatal(err)
		}
		want, err := dbsyncers.ForProfiles(set.Has(STB), set.Has(GlobalHub))
		if err != nil {
			t.Fatal(err)
		}
		if got, want := typeNames(reg), typeNames(want); !slices.Equal(got, want) {
			t.Errorf("%v: types %v, want %v", names, got, want)
		}
		if f := set.Families(); len(f) != 0 {
			t.Errorf("%v: %d families, want none (the reader decodes both built-in profiles)", names, len(f))
		}
	}
}

// Every profile's type names are distinct from every other's: a hub
// delete leaves one tombstone per name, and a unit's slots are by name.
func TestAllTypeNamesDistinct(t *testing.T) {
	names := AllTypeNames()
	seen := map[string]bool{}
	for _, n := range names {
		if seen[n] {
			t.Errorf("type %q in two profiles", n)
		}
		seen[n] = true
	}
	all, err := Parse(Names())
	if err != nil {
		t.Fatal(err)
	}
	reg, err := all.Registry()
	if err != nil {
		t.Fatalf("every profile at once: %v", err)
	}
	if got := typeNames(reg); !slices.Equal(got, names) {
		t.Errorf("every profile's registry %v, AllTypeNames %v", got, names)
	}
}

func typeNames(reg *dbsyncers.Registry) []string {
	var out []string
	for _, ti := range reg.Types() {
		out = append(out, ti.Name)
	}
	return out
}
