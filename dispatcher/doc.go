// Package dispatcher runs the database workers: each pops a ready
// conflation unit, takes its next job, decodes its bundles' data (a bundle
// whose data does not decode is dead-lettered on its own), writes it in one
// transaction (the handler and the bundle_versions fence together), and
// reports the outcome back to the unit.
//
// There are exactly as many workers as connections in the pool they use, so
// a worker never waits for a connection and no more workers exist than
// could write. Failures are classified by error type and SQLSTATE: transient
// ones are retried by the unit after a backoff (the worker does not sleep
// holding a connection), permanent ones are dead-lettered.
package dispatcher
