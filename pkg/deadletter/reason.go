package deadletter

// Reason says why a message or bundle was dead-lettered. It is stored in
// stb.dead_letters.reason and used as a metric label, so the list is
// short and fixed: every reason the bridge gives is one of these.
type Reason string

// Read side: the message never became a bundle.
const (
	// NotCloudEvent: the message is not a CloudEvent (no specversion).
	NotCloudEvent Reason = "not_cloudevent"
	// MissingAttribute: a required CloudEvents attribute is absent.
	MissingAttribute Reason = "missing_attribute"
	// UnknownType: no bundle type of that name is registered.
	UnknownType Reason = "unknown_type"
	// MalformedVersion: extversion or extdependencyversion does not parse.
	MalformedVersion Reason = "malformed_version"
	// TooLarge: the data exceeds --max-bundle-bytes.
	TooLarge Reason = "too_large"
	// SourceMismatch: source is not the message key (--verify-source).
	SourceMismatch Reason = "source_mismatch"
	// InvalidHub: the hub's name (source) is not valid UTF-8, holds a
	// control character or is longer than the transport's limit.
	InvalidHub Reason = "invalid_hub"
	// BadPayload: the data is not what the type's decoder or handler
	// takes (read and write side).
	BadPayload Reason = "bad_payload"
	// DecodePanic: decoding the message panicked, a bug of the bridge's;
	// the message is kept here, to replay once the bridge is fixed,
	// instead of stopping the bridge at every restart.
	DecodePanic Reason = "decode_panic"
	// ChunkTimeout: a global-hub event sent in chunks was not whole
	// within --chunk-timeout of its first chunk (or was given up, the
	// oldest first, while the chunks held exceeded three quarters of
	// --max-buffered-bytes); the letter holds its first chunk, and its
	// partition's committed position moves past the event.
	ChunkTimeout Reason = "chunk_timeout"
)

// Write side: the bundle could not be written, and never will be.
const (
	// DependencyTimeout: the bundle waited longer than
	// --dependency-timeout for the bundle it depends on.
	DependencyTimeout Reason = "dependency_timeout"
	// StaleBase: deltas whose base is not the version the database holds.
	StaleBase Reason = "stale_base"
	// BadGroup: a job of bundles the handler cannot take together.
	BadGroup Reason = "bad_group"
	// DataException: SQLSTATE class 22, the data does not fit the schema.
	DataException Reason = "data_exception"
	// IntegrityViolation: SQLSTATE class 23.
	IntegrityViolation Reason = "integrity_violation"
	// ProgramLimitExceeded: SQLSTATE class 54, such as an index entry too
	// large; the same data fails the same way every time.
	ProgramLimitExceeded Reason = "program_limit_exceeded"
	// PermanentError: a permanent failure of no more specific kind.
	PermanentError Reason = "permanent_error"
	// WritePanic: planning or writing the bundle panicked, a bug of the
	// bridge's; kept to replay once it is fixed, like DecodePanic.
	WritePanic Reason = "write_panic"
	// ClusterMismatch: a ManifestWork status (profile work) names another
	// cluster than the one its resource is stored for; written by the
	// work.status plan itself, one letter per such status.
	ClusterMismatch Reason = "cluster_mismatch"
)

// ReadReasons are the reasons a message is rejected for on read, for
// metrics that exist from the start.
var ReadReasons = []Reason{NotCloudEvent, MissingAttribute, UnknownType, MalformedVersion, TooLarge, SourceMismatch, InvalidHub, BadPayload, DecodePanic, ChunkTimeout}

// Reasoned is implemented by errors that carry their dead-letter reason;
// the dispatcher recognises a permanent failure by it.
type Reasoned interface {
	error
	DeadLetterReason() Reason
}
