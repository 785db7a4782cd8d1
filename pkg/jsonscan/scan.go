package jsonscan

import (
	"encoding/json"
	"fmt"
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

// trailing returns an error unless only whitespace follows end, the end of
// the top-level value.
func trailing(data []byte, end int) error {
	if j := ws(data, end); j != len(data) {
		return &SyntaxError{j, fmt.Sprintf("invalid character %s after top-level value", quoteChar(data[j]))}
	}
	return nil
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
