package test

import (
	"bytes"
	"encoding/json"
	"errors"
	"io"
	"os/exec"
	"slices"
	"strings"
	"testing"
)

// listedPackage is what the layout rules read of `go list -json`.
type listedPackage struct {
	ImportPath string
	Imports    []string
	Standard   bool
}

// listPackages runs `go list -deps -json` of patterns in the module root
// and returns every package it printed, by import path, and the module's
// path. Test files are not listed: a test may decode what a simulator
// sent with the bridge's decoders, the code it tests may not.
func listPackages(t *testing.T, patterns ...string) (map[string]listedPackage, string) {
	t.Helper()
	mod, err := exec.Command("go", "list", "-m").Output()
	if err != nil {
		t.Fatalf("go list -m: %v", err)
	}
	module := strings.TrimSpace(string(mod))
	cmd := exec.Command("go", append([]string{"list", "-deps", "-json=ImportPath,Imports,Standard"}, patterns...)...)
	cmd.Dir = ".."
	var stderr bytes.Buffer
	cmd.Stderr = &stderr
	out, err := cmd.Output()
	if err != nil {
		t.Fatalf("go list %v: %v\n%s", patterns, err, stderr.String())
	}
	pkgs := map[string]listedPackage{}
	dec := json.NewDecoder(bytes.NewReader(out))
	for {
		var p listedPackage
		if err := dec.Decode(&p); errors.Is(err, io.EOF) {
			break
		} else if err != nil {
			t.Fatalf("go list output: %v", err)
		}
		pkgs[p.ImportPath] = p
	}
	return pkgs, module
}

// importChain returns the shortest chain of imports from the package from
// to a package for which bad is true, as "a -> b -> c", or "" when there is
// none. Paths are shown relative to the module.
func importChain(pkgs map[string]listedPackage, module, from string, bad func(string) bool) string {
	prev := map[string]string{from: ""}
	queue := []string{from}
	for len(queue) > 0 {
		p := queue[0]
		queue = queue[1:]
		for _, imp := range pkgs[p].Imports {
			if _, seen := prev[imp]; seen || pkgs[imp].Standard {
				continue
			}
			prev[imp] = p
			if bad(imp) {
				var chain []string
				for at := imp; at != ""; at = prev[at] {
					chain = append(chain, strings.TrimPrefix(at, module+"/"))
				}
				slices.Reverse(chain)
				return strings.Join(chain, " -> ")
			}
			queue = append(queue, imp)
		}
	}
	return ""
}

// under reports whether path is dir of module or a package below it.
func under(module, path string, dirs ...string) bool {
	for _, d := range dirs {
		d = module + "/" + d
		if path == d || strings.HasPrefix(path, d+"/") {
			return true
		}
	}
	return false
}

// TestPkgImportsNothingAbove: the packages under pkg/ are the importable
// library; the bridge's families, conflation, dispatch and the module's
// internal packages build on them, never the other way (issue 31, item
// 4). And the simulators (pkg/sim/...) are witnesses independent of the
// bridge: they spell the senders' wire formats themselves, so nothing of
// the bridge's decoding side (pkg/transport, pkg/jsonscan, dbsyncers) is
// in their build, or a misspelt name would be agreed on by both sides.
func TestPkgImportsNothingAbove(t *testing.T) {
	pkgs, module := listPackages(t, "./pkg/...")
	var roots []string
	for p := range pkgs {
		if under(module, p, "pkg") {
			roots = append(roots, p)
		}
	}
	slices.Sort(roots)
	if !slices.Contains(roots, module+"/pkg/sim") {
		t.Fatalf("go list ./pkg/... did not list %s/pkg/sim: %v", module, roots)
	}
	above := func(p string) bool {
		return under(module, p, "dbsyncers", "conflation", "dispatcher", "internal") ||
			(strings.HasPrefix(p, module+"/") && strings.Contains(p, "/internal/"))
	}
	decoding := func(p string) bool {
		return above(p) || under(module, p, "pkg/transport", "pkg/jsonscan", "dbsyncers")
	}
	for _, p := range roots {
		rule, bad := "a package under pkg/ imports nothing of dbsyncers, conflation, dispatcher or internal", above
		if under(module, p, "pkg/sim") {
			rule, bad = "a simulator imports nothing of the bridge's decoding side (pkg/transport, pkg/jsonscan, dbsyncers)", decoding
		}
		if chain := importChain(pkgs, module, p, bad); chain != "" {
			t.Errorf("%s: %s imports %s (%s)", rule, strings.TrimPrefix(p, module+"/"),
				chain[strings.LastIndex(chain, " ")+1:], chain)
		}
	}
}
