package dbsyncers

import (
	"errors"
	"fmt"
	"slices"
	"strings"

	"github.com/stbridge/stb/pkg/jsonscan"
)

// eachObject reads the data every status bundle carries, a JSON object
// whose "objects" member lists the bundle's items, and calls fn with each
// item as it came, a subslice of data, so each type reads only what it
// needs and keeps the rest. "objects": null counts as an empty list (a Go
// agent marshals a nil slice so); other members are ignored, so agents may
// add some; given twice, the last "objects" counts.
//
// A missing "objects" member is an error when required: for a complete
// bundle an empty list deletes the hub's rows, and that must be said, not
// inferred from a truncated or mistyped payload. fn's error is returned
// wrapped as the error of item i.
func eachObject(data []byte, required bool, fn func(i int, obj []byte) error) error {
	if jsonscan.IsNull(data) {
		return errors.New("payload: want a JSON object, got null")
	}
	var objects []byte
	found := false
	err := jsonscan.Object(data, func(name, value []byte) error {
		if string(name) == "objects" {
			objects, found = value, true
		}
		return nil
	})
	if err != nil {
		return fmt.Errorf("payload: %w", err)
	}
	if !found {
		if required {
			return errors.New(`payload: "objects" is missing`)
		}
		return nil
	}
	i := 0
	err = jsonscan.Array(objects, func(obj []byte) error {
		if err := fn(i, obj); err != nil {
			return &objectError{i, err}
		}
		i++
		return nil
	})
	var oe *objectError
	switch {
	case errors.As(err, &oe):
		return fmt.Errorf("payload: object %d: %w", oe.i, oe.err)
	case err != nil:
		return fmt.Errorf(`payload: "objects": %w`, err)
	}
	return nil
}

// objectError carries an item's error out of the scan of "objects".
type objectError struct {
	i   int
	err error
}

func (e *objectError) Error() string { return fmt.Sprintf("object %d: %v", e.i, e.err) }

// members calls set with the name and value of each member of the object
// in data (null has none), as jsonscan.Object does.
func members(data []byte, set func(name string, value []byte) error) error {
	return jsonscan.Object(data, func(name, value []byte) error {
		return set(string(name), value)
	})
}

// setString sets *dst to the string in value, leaving it alone for null
// (as encoding/json does); the error names field.
func setString(dst *string, field string, value []byte) error {
	s, ok, err := jsonscan.String(value)
	if err != nil {
		return fmt.Errorf("%s: %w", field, err)
	}
	if ok {
		*dst = s
	}
	return nil
}

// setStrings sets *dst to the list of strings in value, nil for null; a
// null element is an empty string (which checkNames then rejects).
func setStrings(dst *[]string, field string, value []byte) error {
	list, err := jsonscan.Strings(value)
	if err != nil {
		return fmt.Errorf("%s: %w", field, err)
	}
	*dst = list
	return nil
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
