package bundle

import (
	"errors"
	"math"
	"sort"
	"strconv"
	"testing"
)

func TestVersionOrdering(t *testing.T) {
	// Sorted oldest first: incarnation decides before generation.
	ordered := []Version{
		{0, 0}, {0, 1}, {0, math.MaxUint64}, {1, 0}, {1, 1}, {1, 2}, {1, 10}, {2, 0}, {math.MaxUint64, 0}, {math.MaxUint64, math.MaxUint64},
	}
	for i, a := range ordered {
		for j, b := range ordered {
			want := 0
			if i < j {
				want = -1
			} else if i > j {
				want = 1
			}
			if got := a.Compare(b); got != want {
				t.Errorf("%v.Compare(%v) = %d, want %d", a, b, got, want)
			}
			if got := a.Newer(b); got != (i > j) {
				t.Errorf("%v.Newer(%v) = %v, want %v", a, b, got, i > j)
			}
		}
	}
	shuffled := []Version{{2, 0}, {1, 10}, {0, 1}, {1, 2}, {1, 1}}
	sort.Slice(shuffled, func(i, j int) bool { return shuffled[i].Compare(shuffled[j]) < 0 })
	want := []Version{{0, 1}, {1, 1}, {1, 2}, {1, 10}, {2, 0}}
	for i := range want {
		if shuffled[i] != want[i] {
			t.Fatalf("sorted %v, want %v", shuffled, want)
		}
	}
}

func TestParseVersion(t *testing.T) {
	max := strconv.FormatUint(math.MaxUint64, 10)
	cases := []struct {
		in   string
		want Version
		ok   bool
	}{
		{"1.2", Version{1, 2}, true},
		{"0.0", Version{0, 0}, true},
		{max + "." + max, Version{math.MaxUint64, math.MaxUint64}, true},
		{"007.1", Version{7, 1}, true},
		{"", Version{}, false},
		{"1", Version{}, false},
		{"1.", Version{}, false},
		{".1", Version{}, false},
		{"1.2.3", Version{}, false},
		{"-1.2", Version{}, false},
		{"+1.2", Version{}, false},
		{"1.-2", Version{}, false},
		{" 1.2", Version{}, false},
		{"1.2 ", Version{}, false},
		{"a.b", Version{}, false},
		{"0x1.2", Version{}, false},
		{"1_000.2", Version{}, false},
		{"18446744073709551616.1", Version{}, false}, // MaxUint64 + 1
		{"1.18446744073709551616", Version{}, false},
	}
	for _, tc := range cases {
		got, err := ParseVersion(tc.in)
		if tc.ok {
			if err != nil || got != tc.want {
				t.Errorf("ParseVersion(%q) = %v, %v; want %v", tc.in, got, err, tc.want)
			}
			if got.String() != strconv.FormatUint(tc.want.Incarnation, 10)+"."+strconv.FormatUint(tc.want.Generation, 10) {
				t.Errorf("String() = %q", got.String())
			}
			continue
		}
		if !errors.Is(err, ErrMalformedVersion) {
			t.Errorf("ParseVersion(%q) error %v, want ErrMalformedVersion", tc.in, err)
		}
	}
}

// FuzzParseVersion: whatever parses prints back to a string that parses
// to the same version, and nothing panics.
func FuzzParseVersion(f *testing.F) {
	for _, s := range []string{"1.2", "0.0", "18446744073709551615.18446744073709551615", "1", "-1.2", "a.b", "1.2.3", ""} {
		f.Add(s)
	}
	f.Fuzz(func(t *testing.T, s string) {
		v, err := ParseVersion(s)
		if err != nil {
			return
		}
		again, err := ParseVersion(v.String())
		if err != nil || again != v {
			t.Fatalf("%q parsed to %v, whose String %q parses to %v, %v", s, v, v.String(), again, err)
		}
	})
}
