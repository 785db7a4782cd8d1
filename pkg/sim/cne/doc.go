// Package cne simulates the nodes of clusters publishing Cloud Native
// Events (the family dbsyncers/cne reads, profile "cne") and verifies
// what a bridge stored: `stb simulate --agent cne` and `stb verify`.
//
// Each node publishes PTP state changes as cloud-event-proxy does
// (plugins/ptp_operator/metrics/manager.go): a ptp-state-change with the
// lock state and the offset, the OS clock's state and offset, the overall
// sync state, the clock class, the GNSS state with its gpsFix. Nodes differ
// in what their publisher writes (O-RAN v3 or v1 field names, decimal64.3
// as a number or a string, CloudEvents 1.0 or 0.3, binary or structured
// mode), and misbehave: they restart and send every state again, send a
// message twice, send a late copy of an earlier one, and step their clock
// back as PTP corrects it. Run records the state the bridge must end with:
// per key the value with the latest CloudEvents time, ties to the later
// message (a node's messages share its partition).
package cne
