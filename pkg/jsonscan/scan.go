package jsonscan

import "fmt"

// MaxDepth is the deepest nesting accepted, the same as encoding/json's.
const MaxDepth = 10000

// SyntaxError is returned for data that is not a single JSON value. Its
// message is jsontext's, without the JSON pointer to the place (at 10,000
// levels of nesting a pointer is 20 kB, and a message can become a dead
// letter's reason).
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

// ws returns the offset of the first byte at or after i that is not JSON
// whitespace.
func ws(data []byte, i int) int {
	for i < len(data) {
		switch data[i] {
		case ' ', '\t', '\n', '\r':
			i++
		default:
			return i
		}
	}
	return i
}

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
