// Package docs holds the design and the conventions of the project
// (design.md, conventions.md) and the test that keeps the repository
// standing alone: no tracked file may send its reader to a document that
// is not in the repository.
package docs

import (
	"bytes"
	"os"
	"os/exec"
	"path/filepath"
	"regexp"
	"strings"
	"testing"
)

// outside matches references to the design and style guides the project
// grew from, which live outside the repository. Spelled in pieces so that
// this file does not match itself.
var outside = regexp.MustCompile(strings.Join([]string{
	`DESIGN` + `\.md`,
	`STYLE` + `\.md`,
	`\.\./` + `shared\b`,
	`/work/` + `shared\b`,
}, "|"))

// TestSelfContained fails when a tracked file names a document outside the
// repository; what a reader needs of the design is in docs/design.md, of
// the conventions in docs/conventions.md. Run by `make test` and `make lint`.
func TestSelfContained(t *testing.T) {
	root, err := exec.Command("git", "rev-parse", "--show-toplevel").Output()
	if err != nil {
		t.Fatalf("git rev-parse --show-toplevel: %v (the check reads the tracked files; run it in a git checkout)", err)
	}
	dir := strings.TrimSpace(string(root))
	out, err := exec.Command("git", "-C", dir, "ls-files", "-z").Output()
	if err != nil {
		t.Fatalf("git ls-files: %v", err)
	}
	files := strings.Split(strings.TrimRight(string(out), "\x00"), "\x00")
	if len(files) < 10 {
		t.Fatalf("git ls-files listed %d files, want the repository's", len(files))
	}
	for _, f := range files {
		data, err := os.ReadFile(filepath.Join(dir, f))
		if os.IsNotExist(err) {
			continue // deleted in the work tree, not yet committed
		}
		if err != nil {
			t.Fatal(err)
		}
		if bytes.IndexByte(data, 0) >= 0 {
			continue // binary
		}
		for i, line := range strings.Split(string(data), "\n") {
			if m := outside.FindString(line); m != "" {
				t.Errorf("%s:%d names %q, a document outside the repository: point to docs/design.md or docs/conventions.md instead", f, i+1, m)
			}
		}
	}
}

// TestMatches: the pattern finds each spelling of an outside reference and
// leaves the repository's own documents alone.
func TestMatches(t *testing.T) {
	for _, s := range []string{"see DESIGN" + ".md §10", "(STYLE" + ".md §15)", "../" + "shared/x", "/work/" + "shared/y"} {
		if !outside.MatchString(s) {
			t.Errorf("%q is not caught", s)
		}
	}
	for _, s := range []string{"docs/design.md, Scaling out", "docs/conventions.md", "a shared/ directory", "sharedPool"} {
		if outside.MatchString(s) {
			t.Errorf("%q is caught, but it is no outside reference", s)
		}
	}
}
