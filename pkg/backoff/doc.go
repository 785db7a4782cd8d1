// Package backoff is the wait between retries of something that failed
// for a reason that passes: capped exponential, with jitter so that many
// retries started by one outage do not come back in lockstep. The
// conflation units wait so before retrying a transiently failing bundle
// type, and the dead-letter queue before storing a batch the database
// refused.
//
// An Exponential is a value, as a field of its user's Config
// (conflation.Config.Backoff, deadletter.QueueConfig.Backoff), and keeps no
// state: the caller counts its attempts, as franz-go's kgo.RetryBackoffFn
// takes the attempt number.
package backoff
