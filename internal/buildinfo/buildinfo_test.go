package buildinfo

import (
	"runtime"
	"runtime/debug"
	"strings"
	"testing"

	"github.com/prometheus/client_golang/prometheus"
	"github.com/prometheus/client_golang/prometheus/testutil"
)

func TestResolve(t *testing.T) {
	vcs := &debug.BuildInfo{
		Main: debug.Module{Path: "github.com/stbridge/stb", Version: "v0.3.1-0.20261127210000-abcdef012345+dirty"},
		Settings: []debug.BuildSetting{
			{Key: "vcs", Value: "git"},
			{Key: "vcs.revision", Value: "abcdef0123456789"},
			{Key: "vcs.modified", Value: "true"},
		},
	}
	clean := &debug.BuildInfo{
		Main:     debug.Module{Path: "github.com/stbridge/stb", Version: "(devel)"},
		Settings: []debug.BuildSetting{{Key: "vcs.revision", Value: "0123"}, {Key: "vcs.modified", Value: "false"}},
	}
	for _, tc := range []struct {
		name              string
		version, revision string
		bi                *debug.BuildInfo
		want              Info
	}{
		{"stamped wins over the record", "v1.2.3", "feedbee", vcs, Info{"v1.2.3", "feedbee", runtime.Version()}},
		{"the record when not stamped", "", "", vcs, Info{"v0.3.1-0.20261127210000-abcdef012345+dirty", "abcdef0123456789-dirty", runtime.Version()}},
		{"(devel) is no version; clean tree no -dirty", "", "", clean, Info{Unknown, "0123", runtime.Version()}},
		{"stamped version, revision from the record", "v2.0.0", "", clean, Info{"v2.0.0", "0123", runtime.Version()}},
		{"nothing at all", "", "", nil, Info{Unknown, Unknown, runtime.Version()}},
		{"no version control seen", "", "", &debug.BuildInfo{}, Info{Unknown, Unknown, runtime.Version()}},
	} {
		t.Run(tc.name, func(t *testing.T) {
			if got := resolve(tc.version, tc.revision, tc.bi); got != tc.want {
				t.Errorf("resolve(%q, %q) = %+v, want %+v", tc.version, tc.revision, got, tc.want)
			}
		})
	}
}

func TestCollector(t *testing.T) {
	reg := prometheus.NewRegistry()
	reg.MustRegister(newCollector(Info{Version: "v1.2.3", Revision: "feedbee", GoVersion: "go1.26.8"}))
	want := `
# HELP stb_build_info Build of the running stb, always 1: version (release or git describe), revision (commit, -dirty if modified) and goversion (the Go release that built it).
# TYPE stb_build_info gauge
stb_build_info{goversion="go1.26.8",revision="feedbee",version="v1.2.3"} 1
`
	if err := testutil.GatherAndCompare(reg, strings.NewReader(want), "stb_build_info"); err != nil {
		t.Error(err)
	}
}

// TestGetInTest: a test binary is not stamped and has no module version, so
// Get falls back to Unknown rather than an empty label.
func TestGetInTest(t *testing.T) {
	info := Get()
	if info.Version == "" || info.Revision == "" || info.GoVersion != runtime.Version() {
		t.Errorf("Get() = %+v: want every field set, GoVersion %s", info, runtime.Version())
	}
}
