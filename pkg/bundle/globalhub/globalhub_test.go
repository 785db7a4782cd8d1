package globalhub_test

import (
	"strings"
	"testing"

	"github.com/stbridge/stb/pkg/bundle"
	"github.com/stbridge/stb/pkg/bundle/globalhub"
)

// TestTypes: every type is named once, behind bundle.GlobalHubPrefix, and
// a dependency names a type of the table listed before it (the registry
// serves a base first).
func TestTypes(t *testing.T) {
	seen := map[string]bool{}
	for _, ty := range globalhub.Types() {
		if !strings.HasPrefix(ty.Name, bundle.GlobalHubPrefix) || ty.Event() == "" {
			t.Errorf("type %q is not behind %q", ty.Name, bundle.GlobalHubPrefix)
		}
		if seen[ty.Name] {
			t.Errorf("type %q listed twice", ty.Name)
		}
		if ty.DependsOn != "" && !seen[ty.DependsOn] {
			t.Errorf("type %q depends on %q, which is not listed before it", ty.Name, ty.DependsOn)
		}
		seen[ty.Name] = true
	}
	for _, short := range globalhub.Skipped() {
		if seen[bundle.GlobalHubPrefix+short] {
			t.Errorf("type %q is both stored and skipped", short)
		}
	}
}
