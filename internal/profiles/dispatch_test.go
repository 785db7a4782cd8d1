package profiles

import (
	"go/ast"
	"go/parser"
	"go/token"
	"io/fs"
	"path/filepath"
	"slices"
	"strconv"
	"strings"
	"testing"
)

// TestNoDispatchOnProfileNames: outside internal/profiles no code chooses
// what to do by comparing with a profile's or an agent's name, whether
// spelt as a string ("cne") or as a constant holding one (sim.AgentSTB,
// work.Name): no == or != and no switch case on one. What a profile does
// differently is a hook of its Profile or Agent, reached through All.
//
// The walk parses the module's non-test files: a constant holding a name
// is any top-level constant whose value is a name or another such
// constant; a selector pkg.C refers to it through the file's imports.
// The simulators (pkg/sim and below) are left out: an agent kind is the
// simulator's own configuration, which it reads as any option.
func TestNoDispatchOnProfileNames(t *testing.T) {
	names := map[string]bool{}
	for _, p := range All() {
		names[p.Name] = true
		for _, a := range p.Agents {
			names[a.Name] = true
		}
	}
	root, err := filepath.Abs("../..")
	if err != nil {
		t.Fatal(err)
	}
	const module = "github.com/stbridge/stb"
	type file struct {
		path, pkg string // the file, its package's import path
		f         *ast.File
	}
	var files []file
	fset := token.NewFileSet()
	err = filepath.WalkDir(root, func(path string, d fs.DirEntry, err error) error {
		if err != nil {
			return err
		}
		rel, _ := filepath.Rel(root, path)
		if d.IsDir() {
			if strings.HasPrefix(d.Name(), ".") || d.Name() == "testdata" || d.Name() == "vendor" {
				return filepath.SkipDir
			}
			return nil
		}
		if !strings.HasSuffix(path, ".go") || strings.HasSuffix(path, "_test.go") {
			return nil
		}
		f, err := parser.ParseFile(fset, path, nil, 0)
		if err != nil {
			return err
		}
		files = append(files, file{rel, module + "/" + filepath.ToSlash(filepath.Dir(rel)), f})
		return nil
	})
	if err != nil {
		t.Fatal(err)
	}
	if len(files) < 50 {
		t.Fatalf("found %d files under %s; is the walk at the module's root?", len(files), root)
	}

	// The constants holding a name, by package and name, to a fixed point
	// (work.Name = wf.Name).
	consts := map[string]bool{} // "<import path>.<name>"
	imports := func(f *ast.File) map[string]string {
		m := map[string]string{}
		for _, im := range f.Imports {
			path, _ := strconv.Unquote(im.Path.Value)
			name := path[strings.LastIndex(path, "/")+1:]
			if im.Name != nil {
				name = im.Name.Name
			}
			m[name] = path
		}
		return m
	}
	// isName reports whether e, in a file of package pkg importing imp,
	// is a profile's or agent's name.
	isName := func(e ast.Expr, pkg string, imp map[string]string) bool {
		switch e := e.(type) {
		case *ast.BasicLit:
			s, err := strconv.Unquote(e.Value)
			return e.Kind == token.STRING && err == nil && names[s]
		case *ast.Ident:
			return consts[pkg+"."+e.Name]
		case *ast.SelectorExpr:
			x, ok := e.X.(*ast.Ident)
			return ok && imp[x.Name] != "" && consts[imp[x.Name]+"."+e.Sel.Name]
		}
		return false
	}
	for changed := true; changed; {
		changed = false
		for _, fl := range files {
			imp := imports(fl.f)
			for _, d := range fl.f.Decls {
				g, ok := d.(*ast.GenDecl)
				if !ok || g.Tok != token.CONST {
					continue
				}
				for _, s := range g.Specs {
					vs := s.(*ast.ValueSpec)
					for i, n := range vs.Names {
						key := fl.pkg + "." + n.Name
						if i < len(vs.Values) && !consts[key] && isName(vs.Values[i], fl.pkg, imp) {
							consts[key], changed = true, true
						}
					}
				}
			}
		}
	}

	var found []string
	for _, fl := range files {
		if strings.HasPrefix(fl.path, filepath.Join("internal", "profiles")+string(filepath.Separator)) ||
			strings.HasPrefix(fl.path, filepath.Join("pkg", "sim")+string(filepath.Separator)) {
			continue
		}
		imp := imports(fl.f)
		report := func(n ast.Node, what string) {
			found = append(found, fset.Position(n.Pos()).String()+": "+what)
		}
		ast.Inspect(fl.f, func(n ast.Node) bool {
			switch n := n.(type) {
			case *ast.BinaryExpr:
				if (n.Op == token.EQL || n.Op == token.NEQ) && (isName(n.X, fl.pkg, imp) || isName(n.Y, fl.pkg, imp)) {
					report(n, "a comparison with a profile's or agent's name")
				}
			case *ast.CaseClause:
				for _, e := range n.List {
					if isName(e, fl.pkg, imp) {
						report(e, "a switch case on a profile's or agent's name")
					}
				}
			}
			return true
		})
	}
	slices.Sort(found)
	for _, f := range found {
		t.Error(f)
	}
	t.Logf("%d files walked, %d constants hold a name", len(files), len(consts))
}
