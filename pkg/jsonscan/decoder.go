//go:build !stb_jsontext

package jsonscan

// This file and lexer.go are the hand-written implementation of the
// package, the default; jsontext.go is the same API on jsontext, built
// with -tags stb_jsontext.

import "unicode/utf8"

// Decoder reads one JSON value from a byte slice in a single pass, the
// caller pulling the members and elements it wants and leaving the rest to
// be skipped (and validated) as they go by.
//
// Each read method (Object, Array, String, Strings, Raw, Skip) reads
// exactly one value. The function given to Object is called for each
// member with the decoder positioned at the member's value; it reads that
// value with at most one read method, or leaves it, in which case Object
// skips it. Array's function does the same for each element.
//
// A Decoder does not copy its input: Raw, Span and the names given to
// Object's function are subslices of it (a name only until the function
// returns). The zero Decoder reads an empty input.
type Decoder struct {
	data    []byte
	i       int // the next byte to read
	depth   int // arrays and objects open around the position
	scratch []byte
}

// NewDecoder returns a decoder reading data.
func NewDecoder(data []byte) *Decoder { return &Decoder{data: data} }

// Reset makes d read data from its start, keeping its scratch buffer.
func (d *Decoder) Reset(data []byte) {
	d.data, d.i, d.depth = data, 0, 0
}

// Done returns an error unless only whitespace is left after the value
// read, as encoding/json requires of a document.
func (d *Decoder) Done() error {
	return trailing(d.data, d.i)
}

// next skips whitespace and returns the next byte, or 0 at the end.
func (d *Decoder) next() byte {
	d.i = ws(d.data, d.i)
	if d.i < len(d.data) {
		return d.data[d.i]
	}
	return 0
}

// other handles a value that is not of the kind a read method wants: null
// is read and reported with isNull; anything else is an error.
func (d *Decoder) other(want string) (isNull bool, err error) {
	if d.i >= len(d.data) {
		return false, errAt(d.data, d.i, "")
	}
	if d.data[d.i] == 'n' {
		end, err := scanLiteral(d.data, d.i, "null")
		d.i = end
		return err == nil, err
	}
	if _, err := scanValue(d.data, d.i, d.depth); err != nil {
		return false, err
	}
	return false, &TypeError{Want: want, Got: kind(d.data[d.i])}
}

// Object reads an object, calling fn with each member's name; null is an
// object without members. An error from fn stops the read and is returned
// as is.
func (d *Decoder) Object(fn func(name []byte) error) error {
	if d.next() != '{' {
		_, err := d.other("object")
		return err
	}
	if empty, err := d.enter('}'); empty || err != nil {
		return err
	}
	for more := true; more; {
		if d.i >= len(d.data) || d.data[d.i] != '"' {
			return errAt(d.data, d.i, "looking for beginning of object key string")
		}
		end, escaped, err := scanString(d.data, d.i)
		if err != nil {
			return err
		}
		name := d.data[d.i+1 : end-1]
		if escaped || !utf8.Valid(name) {
			d.scratch = unquoteInto(d.scratch[:0], d.data[d.i:end])
			name = d.scratch
		}
		d.i = ws(d.data, end)
		if d.i >= len(d.data) || d.data[d.i] != ':' {
			return errAt(d.data, d.i, "after object key")
		}
		d.i = ws(d.data, d.i+1)
		var read func() error
		if fn != nil {
			read = func() error { return fn(name) }
		}
		if err := d.value(read); err != nil {
			return err
		}
		if more, err = d.more('}', "after object key:value pair"); err != nil {
			return err
		}
	}
	return nil
}

// Array reads an array, calling fn at each element; null is an array
// without elements. An error from fn stops the read and is returned as is.
func (d *Decoder) Array(fn func() error) error {
	if d.next() != '[' {
		_, err := d.other("array")
		return err
	}
	if empty, err := d.enter(']'); empty || err != nil {
		return err
	}
	for more := true; more; {
		if err := d.value(fn); err != nil {
			return err
		}
		var err error
		if more, err = d.more(']', "after array element"); err != nil {
			return err
		}
	}
	return nil
}

// enter reads the opening byte of an array or object at the position and
// reports whether the container is empty (and so already read).
func (d *Decoder) enter(close byte) (empty bool, err error) {
	if d.depth++; d.depth > MaxDepth {
		return false, &SyntaxError{d.i, "exceeded max depth"}
	}
	d.i = ws(d.data, d.i+1)
	if d.i < len(d.data) && d.data[d.i] == close {
		d.i++
		d.depth--
		return true, nil
	}
	return false, nil
}

// value calls read, which may read the value at the position, and skips
// the value if it did not.
func (d *Decoder) value(read func() error) error {
	start := d.i
	if read != nil {
		if err := read(); err != nil {
			return err
		}
	}
	if d.i == start {
		return d.Skip()
	}
	return nil
}

// more reads what follows a member or element: a comma, after which more
// come, or the closing byte of the container, which ends it.
func (d *Decoder) more(close byte, context string) (bool, error) {
	d.i = ws(d.data, d.i)
	if d.i >= len(d.data) {
		return false, errAt(d.data, d.i, "")
	}
	switch d.data[d.i] {
	case close:
		d.i++
		d.depth--
		return false, nil
	case ',':
		d.i = ws(d.data, d.i+1)
		return true, nil
	}
	return false, errAt(d.data, d.i, context)
}

// String reads a string and returns it unquoted (as encoding/json does,
// invalid UTF-8 becoming U+FFFD), or ok=false for null. The string shares
// no memory with the input.
func (d *Decoder) String() (s string, ok bool, err error) {
	if d.next() != '"' {
		_, err := d.other("string")
		return "", false, err
	}
	end, escaped, err := scanString(d.data, d.i)
	if err != nil {
		return "", false, err
	}
	q := d.data[d.i:end]
	d.i = end
	if content := q[1 : len(q)-1]; !escaped && utf8.Valid(content) {
		return string(content), true, nil
	}
	d.scratch = unquoteInto(d.scratch[:0], q)
	return string(d.scratch), true, nil
}

// Strings reads an array of strings: nil for null, and a null element is
// an empty string.
func (d *Decoder) Strings() ([]string, error) {
	var out []string
	isArray := d.next() == '['
	err := d.Array(func() error {
		s, _, err := d.String()
		out = append(out, s)
		return err
	})
	if err != nil {
		return nil, err
	}
	if out == nil && isArray {
		out = []string{}
	}
	return out, nil
}

// Raw reads any value and returns it as it is in the input.
func (d *Decoder) Raw() ([]byte, error) {
	d.i = ws(d.data, d.i)
	start := d.i
	end, err := scanValue(d.data, d.i, d.depth)
	if err != nil {
		return nil, err
	}
	d.i = end
	return d.data[start:end], nil
}

// Skip reads any value and discards it.
func (d *Decoder) Skip() error {
	_, err := d.Raw()
	return err
}

// Span calls read, which must read one value with the decoder, and returns
// that value as it is in the input, as Raw would have.
func (d *Decoder) Span(read func() error) ([]byte, error) {
	d.i = ws(d.data, d.i)
	start := d.i
	if err := read(); err != nil {
		return nil, err
	}
	return d.data[start:d.i], nil
}
