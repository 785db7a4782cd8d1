package sql

import (
	"io/fs"
	"strings"
	"testing"

	"github.com/jackc/tern/v2/migrate"
)

// separator splits a tern migration into its up and down parts.
const separator = "---- create above / drop below ----"

// TestMigrationsAreLoadable checks what tern needs before any database is
// involved: numbered files without gaps, each reversible, so a broken file
// fails here with its name rather than at start-up of the bridge.
func TestMigrationsAreLoadable(t *testing.T) {
	paths, err := migrate.FindMigrations(Migrations)
	if err != nil {
		t.Fatalf("FindMigrations: %v", err)
	}
	if len(paths) == 0 {
		t.Fatal("no migrations embedded")
	}
	for _, p := range paths {
		data, err := fs.ReadFile(Migrations, p)
		if err != nil {
			t.Fatalf("read %s: %v", p, err)
		}
		up, down, ok := strings.Cut(string(data), separator)
		if !ok {
			t.Errorf("%s: no %q line", p, separator)
			continue
		}
		if strings.TrimSpace(up) == "" || strings.TrimSpace(down) == "" {
			t.Errorf("%s: empty up or down part", p)
		}
		if strings.Contains(string(data), "{{") {
			t.Errorf("%s: contains %q, which tern would evaluate as a template", p, "{{")
		}
	}
}
