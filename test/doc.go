// Package test holds the end-to-end tests: the stb binary, built once per
// run, against an embedded Kafka broker (kfake over TCP, spoken to by the
// confluent client inside stb) and a throwaway database on the real local
// PostgreSQL. They simulate hubs, run the bridge as a child process, stop it
// with signals, and check the database with stb verify.
package test
