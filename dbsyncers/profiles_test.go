package dbsyncers

import (
	"strings"
	"testing"
)

func TestParseProfiles(t *testing.T) {
	cases := []struct {
		profiles []string
		want     Profiles
		err      string
	}{
		{DefaultProfiles(), Profiles{STB: true, GlobalHub: true}, ""},
		{[]string{"stb"}, Profiles{STB: true}, ""},
		{[]string{"globalhub"}, Profiles{GlobalHub: true}, ""},
		{[]string{"globalhub", "stb", "stb"}, Profiles{STB: true, GlobalHub: true}, ""},
		{nil, Profiles{}, "want stb, globalhub or both"},
		{[]string{"hoh"}, Profiles{}, `unknown profile "hoh"`},
	}
	for _, c := range cases {
		got, err := ParseProfiles(c.profiles)
		if c.err != "" {
			if err == nil || !strings.Contains(err.Error(), c.err) {
				t.Errorf("%v: error %v, want %q", c.profiles, err, c.err)
			}
			continue
		}
		if err != nil || got != c.want {
			t.Errorf("%v: %+v, %v; want %+v", c.profiles, got, err, c.want)
		}
	}
}
