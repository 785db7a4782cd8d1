package deadletter

// ReplayOutcome is how a replay of a dead letter ended (`stb deadletters
// replay`, the console's replay buttons). Every outcome but ReplaySkipped
// is stored in stb.dead_letters.replay_outcome, whose CHECK constraint
// lists exactly the stored ones (TestSchemaValuesMatchGo in pkg/db).
type ReplayOutcome string

// The outcomes of a replay.
const (
	// NotReplayed is the stored outcome of a letter never replayed.
	NotReplayed ReplayOutcome = ""
	// ReplayApplied: the bundle went through the version fence and was
	// written.
	ReplayApplied ReplayOutcome = "applied"
	// ReplayStale: the database already held the bundle's version or a
	// newer one; nothing was written.
	ReplayStale ReplayOutcome = "stale"
	// ReplayFailed: rejected or refused again; the row's reason and error
	// are the new ones.
	ReplayFailed ReplayOutcome = "failed"
	// ReplaySkipped: the letter's event is neither in Kafka any more nor
	// stored whole; the letter is left as it was, so this outcome is
	// reported and never stored.
	ReplaySkipped ReplayOutcome = "skipped"
)

// ReplayOutcomes lists every outcome of a replay, NotReplayed aside.
var ReplayOutcomes = []ReplayOutcome{ReplayApplied, ReplayStale, ReplayFailed, ReplaySkipped}

// Stored reports whether stb.dead_letters.replay_outcome holds o.
func (o ReplayOutcome) Stored() bool { return o != ReplaySkipped }

// ReplaySource says where a replay had a letter's event from.
type ReplaySource string

// The sources of a replayed event.
const (
	// ReplayFromKafka: the message at the letter's origin, while the topic
	// still holds it (the exact bytes, whatever their size).
	ReplayFromKafka ReplaySource = "kafka"
	// ReplayFromStored: the copy stored with a read-side letter, when that
	// copy is the whole event.
	ReplayFromStored ReplaySource = "stored"
)
