package profiles

import (
	"slices"
	"strings"
	"testing"

	"github.com/stbridge/stb/dbsyncers"
	"github.com/stbridge/stb/dbsyncers/work"
	"github.com/stbridge/stb/pkg/db/dbtest"
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
		// STB's own format the reader decodes itself; the global hub's is
		// a family.
		f := set.Families()
		if want := map[bool]int{true: 1, false: 0}[set.Has(GlobalHub)]; len(f) != want {
			t.Errorf("%v: %d families, want %d (the reader decodes STB's format itself)", names, len(f), want)
		}
		for _, fam := range f {
			if fam.Name() != GlobalHub {
				t.Errorf("%v: family %q, want only %s's", names, fam.Name(), GlobalHub)
			}
		}
	}
}

// Every profile's type names are distinct from every other's: a hub
// delete leaves one tombstone per name (or forgets the version of a
// key-fenced one), and a unit's slots are by name.
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

// TestHubScope: every type is either fenced per hub or per key, never
// both; a key-fenced type takes equal versions (its version is constant,
// and stb.bundle_versions must pass every bundle); the work profile is
// key-fenced; and every table a profile declares for hub deletes exists
// with its columns (the hub's, the soft delete's, those it sets) in the
// migrated schema, so that a delete cannot fail on a misspelled name. The
// global hub's own tables are declared (never found by a column's name),
// with their hub column leaf_hub_name or hub_name.
func TestHubScope(t *testing.T) {
	scope := HubScope()
	fenced := HubFencedTypes()
	for _, typ := range scope.KeyFenced {
		if slices.Contains(fenced, typ) {
			t.Errorf("type %q is both hub-fenced and key-fenced", typ)
		}
	}
	if got, want := len(fenced)+len(scope.KeyFenced), len(AllTypeNames()); got != want {
		t.Errorf("%d hub-fenced and %d key-fenced types, want %d in all", len(fenced), len(scope.KeyFenced), want)
	}
	if !slices.Contains(scope.KeyFenced, work.BundleType) || slices.Contains(fenced, work.BundleType) {
		t.Errorf("key-fenced %v, hub-fenced %v: want %s key-fenced", scope.KeyFenced, fenced, work.BundleType)
	}
	for _, p := range All() {
		for _, s := range p.Syncers() {
			if p.KeyFenced && !s.TakesEqual {
				t.Errorf("profile %s is key-fenced but its type %s does not take equal versions", p.Name, s.Name)
			}
		}
	}

	pool, _ := dbtest.New(t)
	if len(scope.Tables) == 0 {
		t.Fatal("no family declares a table")
	}
	declared := map[string]string{}
	for _, tab := range scope.Tables {
		declared[tab.Table] = tab.Column
		columns := []string{tab.Column}
		if tab.DeletedAt != "" {
			columns = append(columns, tab.DeletedAt)
		}
		for c := range tab.Set {
			columns = append(columns, c)
		}
		for _, c := range columns {
			var ok bool
			err := pool.QueryRow(t.Context(), `
				SELECT EXISTS (SELECT 1 FROM pg_attribute
					WHERE attrelid = to_regclass($1) AND attname = $2 AND NOT attisdropped)`, tab.Table, c).Scan(&ok)
			if err != nil || !ok {
				t.Errorf("table %s has no column %s (%v)", tab.Table, c, err)
			}
		}
		if tab.DeletedAt != "" && len(tab.Set) > 0 {
			t.Errorf("table %s is both soft-deleted and updated", tab.Table)
		}
	}
	for table, column := range map[string]string{
		"status.managed_clusters": "leaf_hub_name", "status.leaf_hubs": "leaf_hub_name", "local_spec.policies": "leaf_hub_name",
		"local_status.compliance": "leaf_hub_name", "status.leaf_hub_heartbeats": "leaf_hub_name", "security.alert_counts": "hub_name",
	} {
		if got, ok := declared[table]; !ok || got != column {
			t.Errorf("the global hub's %s is declared with hub column %q (declared: %v), want %q", table, got, ok, column)
		}
	}
}
