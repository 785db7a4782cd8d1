// Package buildinfo says which build of stb is running: its version, the
// commit it was built from and the Go release that built it. `stb version`
// prints it and the bridge exports it on /metrics as stb_build_info.
//
// The Makefile stamps the version and the commit at link time:
//
//	go build -ldflags "-X github.com/stbridge/stb/internal/buildinfo.version=v1.2.3 \
//	    -X github.com/stbridge/stb/internal/buildinfo.revision=0123abc" ./cmd/stb
//
// A binary built without them (go build, go install, go test) falls back to
// what the Go toolchain records in it (runtime/debug.ReadBuildInfo): the
// module version and the version-control settings, when the build saw them.
package buildinfo

import (
	"runtime"
	"runtime/debug"

	"github.com/prometheus/client_golang/prometheus"
)

// Stamped by the linker (-ldflags -X); empty unless the Makefile set them.
var (
	version  string
	revision string
)

// Unknown stands for a version or revision the build did not record.
const Unknown = "unknown"

// Info describes a build.
type Info struct {
	// Version is the release (a git tag such as v1.2.3, or `git describe`
	// output between tags), else the module version Go recorded, else
	// Unknown.
	Version string
	// Revision is the commit the binary was built from, with "-dirty"
	// when the working tree had uncommitted changes; Unknown if the build
	// did not see version control.
	Revision string
	// GoVersion is the Go release that built the binary (runtime.Version).
	GoVersion string
}

// Get returns the running binary's build information.
func Get() Info {
	bi, _ := debug.ReadBuildInfo()
	return resolve(version, revision, bi)
}

// resolve prefers the stamped values and falls back to the toolchain's
// record (bi may be nil: a binary built without module support).
func resolve(stampedVersion, stampedRevision string, bi *debug.BuildInfo) Info {
	info := Info{Version: stampedVersion, Revision: stampedRevision, GoVersion: runtime.Version()}
	if bi != nil {
		if info.Version == "" && bi.Main.Version != "" && bi.Main.Version != "(devel)" {
			info.Version = bi.Main.Version
		}
		if info.Revision == "" {
			var rev string
			var dirty bool
			for _, s := range bi.Settings {
				switch s.Key {
				case "vcs.revision":
					rev = s.Value
				case "vcs.modified":
					dirty = s.Value == "true"
				}
			}
			if rev != "" && dirty {
				rev += "-dirty"
			}
			info.Revision = rev
		}
	}
	if info.Version == "" {
		info.Version = Unknown
	}
	if info.Revision == "" {
		info.Revision = Unknown
	}
	return info
}

// NewCollector returns the gauge stb_build_info{version,revision,goversion},
// always 1: the labels carry the information, so that a query can join it
// to other series (`* on (pod) group_left (version) stb_build_info`) or count
// the versions running during a rollout.
func NewCollector() prometheus.Collector {
	return newCollector(Get())
}

func newCollector(info Info) prometheus.Collector {
	g := prometheus.NewGauge(prometheus.GaugeOpts{
		Name: "stb_build_info",
		Help: "Build of the running stb, always 1: version (release or git describe), revision (commit, -dirty if modified) and goversion (the Go release that built it).",
		ConstLabels: prometheus.Labels{
			"version":   info.Version,
			"revision":  info.Revision,
			"goversion": info.GoVersion,
		},
	})
	g.Set(1)
	return g
}
