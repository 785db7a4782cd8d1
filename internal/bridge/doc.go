// Package bridge is the composition root of `stb run`: it wires the
// pipeline's stages — the transport reader, the conflation manager, the
// dispatcher and its workers, the committer — with the hub lifecycle
// (package hubs), the resync publisher, the HTTP listener of metrics and
// probes, and the operator's console (package console).
//
// New builds it from a Config (start from DefaultConfig), Run runs it until
// its context ends and shuts it down in a fixed, bounded order, Close
// releases it, and Stats reports on it. cmd/stb, the demo, the bench and
// the tests build bridges only through this API.
//
// Shape: watermill's message.Router (a Config, New, Run(ctx) that returns
// once every goroutine it started has, an idempotent Close); Config holds
// each component's Config as pgxpool.Config holds the connection's
// (*pgx.ConnConfig), so every option has one definition and one default,
// in the package it configures.
//
// It lives in internal/, beside the stages rather than among them: the
// stages (conflation, dispatcher, dbsyncers) are the pipeline a reader of
// the project should see, each usable and tested alone; the bridge only
// composes them, and its API (Config, Stats) changes with them, so it is
// importable by the commands, the bench and the tests of this module and
// promised to no one outside it.
package bridge
