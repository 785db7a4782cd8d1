package sql

import "embed"

// Migrations holds every migration file of this directory, at the root of
// the file system, in the layout github.com/jackc/tern/v2/migrate loads
// with (*Migrator).LoadMigrations.
//
//go:embed *.sql
var Migrations embed.FS
