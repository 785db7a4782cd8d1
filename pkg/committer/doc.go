// Package committer decides how far each Kafka partition may be committed and
// persists that position to status.transport.
//
// The reader registers every offset it reads with the partition's Partition
// tracker before handing the bundle on; whoever finishes with the bundle
// (written, stale, conflated away, dead-lettered) marks it done. The
// committed position of a partition is the lowest offset still not done, or,
// when none is outstanding, the last offset read plus one. A restart
// therefore replays at most what was not yet safely in the database, and the
// bundle_versions fence makes that replay write nothing older.
package committer
