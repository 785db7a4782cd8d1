package dbsyncers

import (
	"errors"
	"fmt"
	"slices"
	"strings"

	"github.com/stbridge/stb/pkg/jsonscan"
)

// eachObject reads the data every status bundle carries, a JSON object
// whose "objects" member lists the bundle's items, in one pass: fn is
// called with the decoder positioned at each item, reads what its type
// needs and leaves the rest to be skipped, so that the items can be kept
// as they came (as subslices of data) or reduced to a few fields.
// "objects": null counts as an empty list (a Go agent marshals a nil slice
// so); other members are ignored, so agents may add some. When "objects"
// is given twice the last one counts: reset is called before its items,
// to drop what fn kept of the earlier ones.
//
// A missing "objects" member is an error when required: for a complete
// bundle an empty list deletes the hub's rows, and that must be said, not
// inferred from a truncated or mistyped payload. fn's error is returned
// as the error of item i. A nil fn skips the items (still validating them).
func eachObject(data []byte, required bool, reset func(), fn func(i int, d *jsonscan.Decoder) error) error {
	if jsonscan.IsNull(data) {
		return errors.New("payload: want a JSON object, got null")
	}
	d := jsonscan.NewDecoder(data)
	found := false
	err := d.Object(func(name []byte) error {
		if string(name) != "objects" {
			return nil
		}
		if found {
			reset()
		}
		found = true
		i := 0
		err := d.Array(func() error {
			if fn == nil {
				return nil // the items are skipped
			}
			if err := fn(i, d); err != nil {
				return &objectError{i, err}
			}
			i++
			return nil
		})
		if _, ok := err.(*objectError); err != nil && !ok {
			return fmt.Errorf(`"objects": %w`, err)
		}
		return err
	})
	if err == nil {
		err = d.Done()
	}
	if err != nil {
		return fmt.Errorf("payload: %w", err)
	}
	if !found && required {
		return errors.New(`payload: "objects" is missing`)
	}
	return nil
}

// objectError is the error of item i of a bundle's "objects".
type objectError struct {
	i   int
	err error
}

func (e *objectError) Error() string { return fmt.Sprintf("object %d: %v", e.i, e.err) }
func (e *objectError) Unwrap() error { return e.err }

// setString reads a string into *dst, leaving it alone for null (as
// encoding/json does); the error names field.
func setString(d *jsonscan.Decoder, dst *string, field string) error {
	s, ok, err := d.String()
	if err != nil {
		return fmt.Errorf("%s: %w", field, err)
	}
	if ok {
		*dst = s
	}
	return nil
}

// setStrings reads a list of strings into *dst, nil for null; a null
// element is an empty string (which checkNames then rejects).
func setStrings(d *jsonscan.Decoder, dst *[]string, field string) error {
	list, err := d.Strings()
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
