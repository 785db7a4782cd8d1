//go:build !stb_jsontext

package jsonscan

import (
	"encoding/json"
	"fmt"
)

// class of each byte inside a string: 0 is an ordinary byte, 1 ends the
// fast loop (a quote, a backslash or a control character).
var stringStop = func() (t [256]byte) {
	for c := range 0x20 {
		t[c] = 1
	}
	t['"'], t['\\'] = 1, 1
	return t
}()

func errAt(data []byte, i int, context string) error {
	if i >= len(data) {
		return &SyntaxError{len(data), "unexpected end of JSON input"}
	}
	return &SyntaxError{i, fmt.Sprintf("invalid character %s %s", quoteChar(data[i]), context)}
}

// scanValue validates the value starting at data[i] (no whitespace before
// it) and returns the offset just past it. depth is the number of arrays
// and objects enclosing it.
func scanValue(data []byte, i, depth int) (int, error) {
	if i >= len(data) {
		return i, errAt(data, i, "looking for beginning of value")
	}
	switch c := data[i]; {
	case c == '"':
		end, _, err := scanString(data, i)
		return end, err
	case c == '{':
		return scanObject(data, i, depth+1)
	case c == '[':
		return scanArray(data, i, depth+1)
	case c == 't':
		return scanLiteral(data, i, "true")
	case c == 'f':
		return scanLiteral(data, i, "false")
	case c == 'n':
		return scanLiteral(data, i, "null")
	case c == '-' || ('0' <= c && c <= '9'):
		return scanNumber(data, i)
	}
	return i, errAt(data, i, "looking for beginning of value")
}

// scanObject validates the object whose brace is at data[i] and returns the
// offset past it.
func scanObject(data []byte, i, depth int) (int, error) {
	if depth > MaxDepth {
		return i, &SyntaxError{i, "exceeded max depth"}
	}
	i = ws(data, i+1)
	if i < len(data) && data[i] == '}' {
		return i + 1, nil
	}
	for {
		if i >= len(data) || data[i] != '"' {
			return i, errAt(data, i, "looking for beginning of object key string")
		}
		end, _, err := scanString(data, i)
		if err != nil {
			return end, err
		}
		i = ws(data, end)
		if i >= len(data) || data[i] != ':' {
			return i, errAt(data, i, "after object key")
		}
		i = ws(data, i+1)
		if i, err = scanValue(data, i, depth); err != nil {
			return i, err
		}
		i = ws(data, i)
		if i >= len(data) {
			return i, errAt(data, i, "")
		}
		switch data[i] {
		case '}':
			return i + 1, nil
		case ',':
			i = ws(data, i+1)
		default:
			return i, errAt(data, i, "after object key:value pair")
		}
	}
}

// scanArray validates the array whose bracket is at data[i] and returns the
// offset past it.
func scanArray(data []byte, i, depth int) (int, error) {
	if depth > MaxDepth {
		return i, &SyntaxError{i, "exceeded max depth"}
	}
	i = ws(data, i+1)
	if i < len(data) && data[i] == ']' {
		return i + 1, nil
	}
	for {
		var err error
		if i, err = scanValue(data, i, depth); err != nil {
			return i, err
		}
		i = ws(data, i)
		if i >= len(data) {
			return i, errAt(data, i, "")
		}
		switch data[i] {
		case ']':
			return i + 1, nil
		case ',':
			i = ws(data, i+1)
		default:
			return i, errAt(data, i, "after array element")
		}
	}
}

// scanString validates the string whose opening quote is at data[i] and
// returns the offset past its closing quote and whether it has escapes.
func scanString(data []byte, i int) (end int, escaped bool, err error) {
	i++
	for {
		for i < len(data) && stringStop[data[i]] == 0 {
			i++
		}
		if i >= len(data) {
			return i, escaped, errAt(data, i, "")
		}
		switch c := data[i]; {
		case c == '"':
			return i + 1, escaped, nil
		case c == '\\':
			escaped = true
			i++
			if i >= len(data) {
				return i, escaped, errAt(data, i, "")
			}
			switch data[i] {
			case '"', '\\', '/', 'b', 'f', 'n', 'r', 't':
				i++
			case 'u':
				i++
				for range 4 {
					if i >= len(data) {
						return i, escaped, errAt(data, i, "")
					}
					if !isHex(data[i]) {
						return i, escaped, errAt(data, i, "in \\u hexadecimal character escape")
					}
					i++
				}
			default:
				return i, escaped, errAt(data, i, "in string escape code")
			}
		default: // a control character
			return i, escaped, errAt(data, i, "in string literal")
		}
	}
}

func isHex(c byte) bool {
	return '0' <= c && c <= '9' || 'a' <= c && c <= 'f' || 'A' <= c && c <= 'F'
}

func scanLiteral(data []byte, i int, lit string) (int, error) {
	for k := 1; k < len(lit); k++ {
		if i+k >= len(data) || data[i+k] != lit[k] {
			return i + k, errAt(data, i+k, "in literal "+lit+" (expecting "+quoteChar(lit[k])+")")
		}
	}
	return i + len(lit), nil
}

// scanNumber validates -?(0|[1-9][0-9]*)(\.[0-9]+)?([eE][+-]?[0-9]+)?
func scanNumber(data []byte, i int) (int, error) {
	if data[i] == '-' {
		i++
	}
	switch {
	case i < len(data) && data[i] == '0':
		i++
	case i < len(data) && '1' <= data[i] && data[i] <= '9':
		i = digits(data, i+1)
	default:
		return i, errAt(data, i, "in numeric literal")
	}
	if i < len(data) && data[i] == '.' {
		i++
		if i >= len(data) || !isDigit(data[i]) {
			return i, errAt(data, i, "after decimal point in numeric literal")
		}
		i = digits(data, i+1)
	}
	if i < len(data) && (data[i] == 'e' || data[i] == 'E') {
		i++
		if i < len(data) && (data[i] == '+' || data[i] == '-') {
			i++
		}
		if i >= len(data) || !isDigit(data[i]) {
			return i, errAt(data, i, "in exponent of numeric literal")
		}
		i = digits(data, i+1)
	}
	return i, nil
}

func isDigit(c byte) bool { return '0' <= c && c <= '9' }

func digits(data []byte, i int) int {
	for i < len(data) && isDigit(data[i]) {
		i++
	}
	return i
}

// Valid reports whether data is one JSON value, as json.Valid does.
func Valid(data []byte) bool {
	i := ws(data, 0)
	end, err := scanValue(data, i, 0)
	return err == nil && ws(data, end) == len(data)
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
