// Package conflation keeps, per hub, only the bundles that still need to be
// written, and decides which of them may be written next.
//
// The transport reader calls Manager.Insert for every bundle it read (its
// data still raw: a unit decodes only the deltas it merges, Config.Decode). A
// Manager maps each hub to a Unit; a Unit holds per bundle type the latest
// unprocessed complete bundle (older ones are conflated away), an ordered
// group of deltas on one base, or a queue of stream events, together with the
// version last processed, whether a worker has it, and its retry state. A
// Unit that has something ready is pushed, at most once, on the ReadyQueue;
// the dispatcher pops it, takes a Job with Unit.Next, and reports the
// outcome with Unit.Report. A Unit is served by one worker at a time, which
// keeps each hub's writes in order while different hubs write in parallel.
//
// The package does no I/O and knows nothing of Kafka or SQL. Every operation
// is short and runs under the unit's own mutex; pushes onto the ready queue
// and Release calls on finished bundles happen after that mutex is
// released.
package conflation
