// Package sql holds the bridge's database schema as numbered tern migrations
// (NNN_name.sql, each with an up part and a down part separated by
// "---- create above / drop below ----").
//
// The files are embedded in the binary so that `stb migrate` and `stb run
// --migrate` apply exactly the schema the code was built against, without a
// separate artefact to ship or to fall out of step. pkg/db applies them.
package sql
