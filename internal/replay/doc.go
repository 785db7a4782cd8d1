// Package replay re-drives stored dead letters (`stb deadletters replay`):
// each letter's event is decoded again and written through the same
// version fence and handlers as the bridge's, so that a replay can never
// take the database backwards. The event comes from Kafka, at the letter's
// origin, while the topic still holds it (the exact bytes, whatever their
// size); else from the copy stored with the letter, when that copy is
// whole: the message of a read-side letter, the event of a worker's (of
// every family: the status families rebuild theirs, see
// dispatcher.EventLetters). A global-hub event is numbered knowing the
// agent's runs of its hub alone (stb.bundle_versions' rows of that hub),
// loaded for each letter: a replay never loads the whole table.
//
// Replay depends on what the bridge is made of, never on the bridge: the
// bundle types, decoders and profiles of dbsyncers, the reader's decoding
// rules (transport.Config.Rules) and conflation's dependency rule
// (conflation.CheckDependency), so that the console of a running bridge
// and `stb deadletters replay` both call Run.
//
// Shape: letters loaded a page at a time in id order (keyset paging, so a
// run holds one page whatever the number of letters, and a capped run says
// where it stopped and how many are left); one transaction per letter
// (pgx.Tx, rolled back for a dry run or a failure), the same version fence
// as the dispatcher's, and errors that say whether the letter or the
// system failed, as the dispatcher decides retries (dispatcher.Classify).
package replay
