// Package db is the bridge's plumbing to PostgreSQL that is not about any
// one bundle type: opening connection pools, applying the schema
// migrations of package sql, and reading or forgetting the per-hub bundle
// versions that conflation units load at start-up so that a replay cannot
// take the database backwards.
//
// Connection URLs carry passwords; every error this package returns shows
// the URL redacted (see RedactURL) so that errors can be logged as they are.
//
// The bundle handlers themselves live in dbsyncers; db knows nothing of
// them, which lets dbsyncers' tests use db and its dbtest helper freely.
package db
