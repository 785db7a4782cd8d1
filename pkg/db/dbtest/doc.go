// Package dbtest gives each test a throwaway PostgreSQL database of its
// own, migrated to the current schema and dropped when the test ends.
//
// The bridge's database code is tested against a real server, never a mock:
// the behaviour that matters (ON CONFLICT fences, numeric versions, jsonb
// comparison, advisory locks) is the server's. The server comes from
// $STB_TEST_DATABASE_URL (default DefaultURL); when it cannot be reached
// the test fails, and never skips, so that a green run always means the
// database tests ran. `make test` makes sure a server is there first.
package dbtest
