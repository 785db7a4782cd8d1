package bridge

import (
	"strings"
	"testing"
)

func TestProfiles(t *testing.T) {
	cases := []struct {
		profiles       []string
		stb, globalHub bool
		err            string
	}{
		{DefaultConfig().Profiles, true, true, ""},
		{[]string{"stb"}, true, false, ""},
		{[]string{"globalhub"}, false, true, ""},
		{[]string{"globalhub", "stb", "stb"}, true, true, ""},
		{nil, false, false, "want stb, globalhub or both"},
		{[]string{"hoh"}, false, false, `unknown profile "hoh"`},
	}
	for _, c := range cases {
		cfg := DefaultConfig()
		cfg.Profiles = c.profiles
		stb, gh, err := cfg.profiles()
		if c.err != "" {
			if err == nil || !strings.Contains(err.Error(), c.err) || cfg.Validate() == nil {
				t.Errorf("%v: error %v, want %q (and Validate to fail)", c.profiles, err, c.err)
			}
			continue
		}
		if err != nil || stb != c.stb || gh != c.globalHub {
			t.Errorf("%v: stb %v globalhub %v, %v; want %v %v", c.profiles, stb, gh, err, c.stb, c.globalHub)
		}
	}
}
