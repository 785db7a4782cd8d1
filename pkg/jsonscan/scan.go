package jsonscan

import (
	"encoding/json"
	"fmt"
	"unicode/utf8"
)

// MaxDepth is the deepest nesting accepted, the same as encoding/json's.
const MaxDepth = 10000

// SyntaxError is returned for data that is not a single JSON value.
type SyntaxError struct {
	// Offset is the byte offset in the data given to the function that
	// returned the error (not in an enclosing document).
	Offset int
	msg    string
}

func (e *SyntaxError) Error() string { return fmt.Sprintf("%s at offset %d", e.msg, e.Offset) }

// TypeError is returned when a value is valid JSON of another kind than the
// one asked for, such as a number where a string must be.
type TypeError struct {
	Want string // "object", "array", "string"
	Got  string // the kind found: "number", "string", "true", ...
}

func (e *TypeError) Error() string { return fmt.Sprintf("want %s, got %s", e.Want, e.Got) }

// Object calls fn with the name and the raw value of each member of the
// object in data, in order; null is an object without members. data must
// hold one JSON value and nothing else but whitespace. The scan is a single
// pass: fn may have been called for the members before a syntax error that
// Object then returns, so a caller should only record what it is given
// until Object returns nil. name is only valid during the call (it is
// unquoted into a scratch buffer when it has escapes); value is a subslice
// of data with no surrounding whitespace. An error from fn stops the scan
// and is returned as is.
func Object(data []byte, fn func(name, value []byte) error) error {
	i := ws(data, 0)
	if i >= len(data) || data[i] != '{' {
		return notA(data, i, "object")
	}
	var scratch []byte
	end, err := scanObject(data, i, 1, func(name []byte, escaped bool, value []byte) error {
		if escaped || !utf8.Valid(name) {
			scratch = unquoteInto(scratch[:0], name)
			name = scratch
		} else {
			name = name[1 : len(name)-1]
		}
		return fn(name, value)
	})
	if err != nil {
		return err
	}
	return trailing(data, end)
}

// Array calls fn with the raw value of each element of the array in data,
// in order; null is an array without elements. The rules of Object apply.
func Array(data []byte, fn func(value []byte) error) error {
	i := ws(data, 0)
	if i >= len(data) || data[i] != '[' {
		return notA(data, i, "array")
	}
	end, err := scanArray(data, i, 1, fn)
	if err != nil {
		return err
	}
	return trailing(data, end)
}

// notA returns the error for a value at data[i] that is not the kind
// wanted: nil for null, a TypeError for another valid value, or the
// SyntaxError that makes it invalid.
func notA(data []byte, i int, want string) error {
	end, err := scanValue(data, i, 0)
	if err != nil {
		return err
	}
	if err := trailing(data, end); err != nil {
		return err
	}
	if data[i] == 'n' {
		return nil // null has no members or elements
	}
	return &TypeError{Want: want, Got: kind(data[i])}
}

func trailing(data []byte, end int) error {
	if j := ws(data, end); j != len(data) {
		return &SyntaxError{j, fmt.Sprintf("invalid character %s after top-level value", quoteChar(data[j]))}
	}
	return nil
}

// String returns the string in data, unquoted, and ok=false for null. It
// shares no memory with data.
func String(data []byte) (s string, ok bool, err error) {
	i := ws(data, 0)
	if i >= len(data) || data[i] != '"' {
		return "", false, notA(data, i, "string")
	}
	end, escaped, err := scanString(data, i)
	if err != nil {
		return "", false, err
	}
	if err := trailing(data, end); err != nil {
		return "", false, err
	}
	content := data[i+1 : end-1]
	if !escaped && utf8.Valid(content) {
		return string(content), true, nil
	}
	return string(unquoteInto(nil, data[i:end])), true, nil
}

// Strings returns the array of strings in data, nil for null. A null
// element is an empty string.
func Strings(data []byte) ([]string, error) {
	var out []string
	err := Array(data, func(v []byte) error {
		s, _, err := String(v)
		if err != nil {
			return err
		}
		out = append(out, s)
		return nil
	})
	if err != nil {
		return nil, err
	}
	if out == nil && !IsNull(data) {
		out = []string{}
	}
	return out, nil
}

// IsNull reports whether data is the literal null, with optional
// whitespace around it.
func IsNull(data []byte) bool {
	i := ws(data, 0)
	j := i + 4
	return j <= len(data) && string(data[i:j]) == "null" && ws(data, j) == len(data)
}

// Valid reports whether data is one JSON value, as json.Valid does.
func Valid(data []byte) bool {
	i := ws(data, 0)
	end, err := scanValue(data, i, 0)
	return err == nil && ws(data, end) == len(data)
}

func kind(c byte) string {
	switch c {
	case '{':
		return "object"
	case '[':
		return "array"
	case '"':
		return "string"
	case 't':
		return "true"
	case 'f':
		return "false"
	case 'n':
		return "null"
	}
	return "number"
}

// unquoteInto appends the unquoted content of the JSON string q to dst the
// way encoding/json does (escapes, surrogate pairs, invalid UTF-8 as
// U+FFFD). It is the slow path, for strings with escapes or non-UTF-8
// bytes, and leaves the decoding to encoding/json so that the two cannot
// differ.
func unquoteInto(dst, q []byte) []byte {
	var s string
	if err := json.Unmarshal(q, &s); err != nil {
		// q was validated as a JSON string; encoding/json accepts those.
		panic(fmt.Sprintf("jsonscan: encoding/json rejected a valid string %q: %v", q, err))
	}
	return append(dst, s...)
}

func quoteChar(c byte) string {
	if c == '\'' {
		return `'\''`
	}
	if c == '"' {
		return `'"'`
	}
	s := fmt.Sprintf("%q", c)
	return "'" + s[1:len(s)-1] + "'"
}
