// Package redact edits text before it leaves the process — a log line, a
// page of the console, a row of stb.dead_letters — so that it holds no
// secret and stays within a bound.
//
// Error hides secrets in an error's text while the error still unwraps to
// its cause, for errors.Is and errors.As; Cap cuts text to a number of
// bytes on a UTF-8 boundary. Which values are secret is for the package that
// owns them to say: pkg/transport for librdkafka properties, pkg/db for
// PostgreSQL connection strings. Both hand their secrets to Error, so there
// is one redaction of errors, as pgconn keeps one redaction of its
// connection strings (pgconn.ParseConfig's errors).
package redact
