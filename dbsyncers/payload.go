package dbsyncers

import (
	"encoding/json"
	"errors"
	"fmt"
	"slices"
	"strings"
)

// decodeObjects decodes the data every status bundle carries: a JSON object
// whose "objects" member lists the bundle's items. It returns the items
// undecoded, so each type decodes only what it needs and keeps the rest as
// it came. "objects": null counts as an empty list (a Go agent marshals a
// nil slice so); other members are ignored, so agents may add some.
//
// A missing "objects" member is an error when required: for a complete
// bundle an empty list deletes the hub's rows, and that must be said, not
// inferred from a truncated or mistyped payload.
func decodeObjects(data []byte, required bool) ([]json.RawMessage, error) {
	var top map[string]json.RawMessage
	if err := json.Unmarshal(data, &top); err != nil {
		return nil, fmt.Errorf("payload: %w", err)
	}
	if top == nil {
		return nil, errors.New("payload: want a JSON object, got null")
	}
	raw, ok := top["objects"]
	if !ok {
		if required {
			return nil, errors.New(`payload: "objects" is missing`)
		}
		return nil, nil
	}
	var objects []json.RawMessage
	if err := json.Unmarshal(raw, &objects); err != nil {
		return nil, fmt.Errorf(`payload: "objects": %w`, err)
	}
	return objects, nil
}

// checkName returns an error unless s can be a key column: not empty, and
// free of NUL characters, which JSON can carry ("\u0000") but PostgreSQL
// text cannot. Catching them here makes them a bad_payload dead letter at
// the reader instead of a data exception in a worker's transaction.
func checkName(field, s string) error {
	if s == "" {
		return fmt.Errorf("%s is missing or empty", field)
	}
	if len(s) > MaxNameBytes {
		// A longer key could not be indexed (SQLSTATE 54000) and would
		// fail in every retry; Kubernetes names are at most 253 bytes.
		return fmt.Errorf("%s is %d bytes long, more than %d", field, len(s), MaxNameBytes)
	}
	return checkText(field, s)
}

// MaxNameBytes bounds names used as keys (clusters, policies, events):
// Kubernetes object names are at most 253 bytes, and a B-tree index entry
// must fit in a third of a page.
const MaxNameBytes = 512

// checkText returns an error if s holds a NUL character (see checkName).
func checkText(field, s string) error {
	if strings.IndexByte(s, 0) >= 0 {
		return fmt.Errorf("%s contains a NUL character", field)
	}
	return nil
}

// checkNames checks every name of a list with checkName.
func checkNames(field string, names []string) error {
	for i, s := range names {
		if err := checkName(fmt.Sprintf("%s[%d]", field, i), s); err != nil {
			return err
		}
	}
	return nil
}

// sortedSet sorts names and removes duplicates, in place: decoders own the
// slices they decoded, and a sorted, duplicate-free list is what a single
// set-based statement needs (one touch per row, keys in one order).
func sortedSet(names []string) []string {
	slices.Sort(names)
	return slices.Compact(names)
}

// without returns the elements of a that are not in b, both sorted sets,
// reusing a's array.
func without(a, b []string) []string {
	out := a[:0]
	j := 0
	for _, s := range a {
		for j < len(b) && b[j] < s {
			j++
		}
		if j < len(b) && b[j] == s {
			continue
		}
		out = append(out, s)
	}
	return out
}
