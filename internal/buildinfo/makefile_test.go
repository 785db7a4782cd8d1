package buildinfo

import (
	"os"
	"os/exec"
	"regexp"
	"strings"
	"testing"
)

// TestMakefileStamps links a program with the Makefile's own
// VERSION_LDFLAGS and checks that the version and revision arrive: a
// variable renamed here, or a package path mistyped there, would otherwise
// leave every release reporting "unknown" (-X on a missing name is silently
// ignored by the linker).
func TestMakefileStamps(t *testing.T) {
	mk, err := os.ReadFile("../../Makefile")
	if err != nil {
		t.Fatal(err)
	}
	pkg := regexp.MustCompile(`(?m)^BUILDINFO_PKG\s*:?=\s*(\S+)\s*$`).FindSubmatch(mk)
	flags := regexp.MustCompile(`(?m)^VERSION_LDFLAGS\s*:?=\s*(.+?)\s*$`).FindSubmatch(mk)
	if pkg == nil || flags == nil {
		t.Fatalf("the Makefile defines no BUILDINFO_PKG or VERSION_LDFLAGS")
	}
	ldflags := strings.NewReplacer(
		"$(BUILDINFO_PKG)", string(pkg[1]),
		"$(VERSION)", "v9.8.7-test",
		"$(REVISION)", "0123abc-dirty",
	).Replace(string(flags[1]))
	out, err := exec.Command("go", "run", "-ldflags", ldflags, "./testdata/stamped").CombinedOutput()
	if err != nil {
		t.Fatalf("go run -ldflags %q: %v\n%s", ldflags, err, out)
	}
	if got, want := strings.TrimSpace(string(out)), "v9.8.7-test 0123abc-dirty"; got != want {
		t.Errorf("built with the Makefile's -ldflags %q, the program reports %q, want %q", ldflags, got, want)
	}
}
