package jsonscan

// The package's API on jsontext: the JSON is read by the library
// (PeekKind, ReadToken, ReadValue); this file maps its tokens onto the
// Decoder's methods and its errors onto SyntaxError.

import (
	"bytes"
	"errors"
	"io"
	"sync"
	"unicode/utf8"

	"github.com/go-json-experiment/json/jsontext"
)

// options make jsontext accept what encoding/json accepts: an object
// naming a member twice (the caller is given both) and invalid UTF-8 in
// strings. Its nesting limit is encoding/json's, MaxDepth.
var options = []jsontext.Options{jsontext.AllowDuplicateNames(true), jsontext.AllowInvalidUTF8(true)}

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
	data []byte
	// r reads the value being read, from data[off:]; it is nil between
	// top-level values. A jsontext.Decoder is 320 bytes and grows its
	// stacks as it goes, and the bridge's decoders make a Decoder per
	// message: r is taken from readers when a top-level value starts and
	// given back when it has been read.
	r       *reader
	off     int // the offset in data of r's input, or of the next byte when r is nil
	scratch []byte
}

// reader is jsontext's decoder with the buffer it reads. Given a
// *bytes.Buffer, jsontext parses the buffer's bytes in place, without
// copying them into a buffer of its own and without the invalidation it
// does in its own buffer (overwriting the first byte of the previous
// value), so its offsets are offsets in the input and the input is never
// written.
type reader struct {
	in  bytes.Buffer
	dec jsontext.Decoder
}

var readers = sync.Pool{New: func() any { return new(reader) }}

// NewDecoder returns a decoder reading data.
func NewDecoder(data []byte) *Decoder { return &Decoder{data: data} }

// Reset makes d read data from its start, keeping its scratch buffer.
func (d *Decoder) Reset(data []byte) {
	// A reader d holds is dropped, not given back: a read method on the
	// call stack may still use it (Reset called by Object's fn).
	d.data, d.off, d.r = data, 0, nil
}

// begin returns the jsontext decoder reading d, taking a reader from the
// pool when d has none (at the start of a top-level value); took tells
// the caller to give it back with end before it returns.
func (d *Decoder) begin() (dec *jsontext.Decoder, took bool) {
	if d.r != nil {
		return &d.r.dec, false
	}
	r := readers.Get().(*reader)
	r.in = *bytes.NewBuffer(d.data[d.off:])
	r.dec.Reset(&r.in, options...)
	d.r = r
	return &r.dec, true
}

// end gives d's reader back to the pool; the read method that took it
// has read a top-level value, or failed.
func (d *Decoder) end() {
	r := d.r
	if r == nil {
		return // dropped by Reset
	}
	d.off, d.r = d.offset(), nil
	// Let go of data, which r's decoder holds as its buffer.
	r.in = bytes.Buffer{}
	r.dec.Reset(&r.in)
	readers.Put(r)
}

// offset returns the offset in d.data just past the last token or value
// read.
func (d *Decoder) offset() int {
	if d.r == nil {
		return d.off
	}
	return d.off + int(d.r.dec.InputOffset())
}

// Done returns an error unless only whitespace is left after the value
// read, as encoding/json requires of a document.
func (d *Decoder) Done() error {
	// jsontext would read a next value, as it reads a stream of them;
	// a document is only whitespace after the one.
	return trailing(d.data, d.offset())
}

// Object reads an object, calling fn with each member's name; null is an
// object without members. An error from fn stops the read and is returned
// as is.
func (d *Decoder) Object(fn func(name []byte) error) error {
	dec, took := d.begin()
	if took {
		defer d.end()
	}
	if k := dec.PeekKind(); k != '{' {
		_, err := d.other(dec, k, "object")
		return err
	}
	if _, err := dec.ReadToken(); err != nil {
		return d.syntaxError(err) // deeper than MaxDepth
	}
	for {
		switch dec.PeekKind() {
		case '}':
			_, err := dec.ReadToken()
			return d.syntaxError(err)
		case '"':
		default:
			return d.fail(dec)
		}
		q, err := dec.ReadValue()
		if err != nil {
			return d.syntaxError(err)
		}
		name := d.unquote(q)
		// PeekKind checks the colon.
		if !startsValue(dec.PeekKind()) {
			return d.fail(dec)
		}
		var read func() error
		if fn != nil {
			read = func() error { return fn(name) }
		}
		if err := d.value(dec, read); err != nil {
			return err
		}
	}
}

// Array reads an array, calling fn at each element; null is an array
// without elements. An error from fn stops the read and is returned as is.
func (d *Decoder) Array(fn func() error) error {
	dec, took := d.begin()
	if took {
		defer d.end()
	}
	if k := dec.PeekKind(); k != '[' {
		_, err := d.other(dec, k, "array")
		return err
	}
	if _, err := dec.ReadToken(); err != nil {
		return d.syntaxError(err) // deeper than MaxDepth
	}
	for {
		switch k := dec.PeekKind(); {
		case k == ']':
			_, err := dec.ReadToken()
			return d.syntaxError(err)
		case !startsValue(k):
			return d.fail(dec)
		}
		if err := d.value(dec, fn); err != nil {
			return err
		}
	}
}

// value calls read, which may read the value at the position, and skips
// the value if it did not.
func (d *Decoder) value(dec *jsontext.Decoder, read func() error) error {
	from := dec.InputOffset()
	if read != nil {
		if err := read(); err != nil {
			return err
		}
	}
	if dec.InputOffset() == from {
		_, err := dec.ReadValue()
		return d.syntaxError(err)
	}
	return nil
}

// startsValue reports whether PeekKind's k starts a value: PeekKind
// returns 0 for an error it found, and the byte itself for one that
// starts no token, as well as '}' and ']'.
func startsValue(k jsontext.Kind) bool {
	switch k {
	case '{', '[', '"', '0', 'n', 't', 'f':
		return true
	}
	return false
}

// other handles a value of kind k, peeked, that is not of the kind a read
// method wants: null is read and reported with isNull; a valid value of
// another kind is read and a TypeError, and anything else a SyntaxError.
func (d *Decoder) other(dec *jsontext.Decoder, k jsontext.Kind, want string) (isNull bool, err error) {
	switch {
	case k == 'n':
		_, err := dec.ReadToken()
		return err == nil, d.syntaxError(err)
	case startsValue(k):
		if _, err := dec.ReadValue(); err != nil {
			return false, d.syntaxError(err)
		}
		return false, &TypeError{Want: want, Got: kind(byte(k))}
	}
	return false, d.fail(dec)
}

// fail returns jsontext's error about the token at the position, where
// PeekKind has found something that cannot be: the end of the input, a
// missing or misplaced delimiter, a closing bracket of the wrong kind, a
// name that is not a string, a byte that starts no token.
func (d *Decoder) fail(dec *jsontext.Decoder) error {
	if _, err := dec.ReadToken(); err != nil {
		return d.syntaxError(err)
	}
	// Not reached: ReadToken checks what PeekKind did and more.
	return &SyntaxError{d.offset(), "unexpected token"}
}

// syntaxError turns an error of jsontext into a SyntaxError; nil stays
// nil, without a call (this is on every read).
func (d *Decoder) syntaxError(err error) error {
	if err == nil {
		return nil
	}
	return d.newSyntaxError(err)
}

// newSyntaxError returns the SyntaxError of err, with jsontext's offset
// and message. An input that ends early is reported at its end, as
// encoding/json does. The JSON Pointer jsontext adds is left out: it is as
// long as the nesting is deep (20 kB at MaxDepth), and the error may
// become a dead letter's reason.
func (d *Decoder) newSyntaxError(err error) error {
	var se *jsontext.SyntacticError
	switch {
	case err == io.EOF, errors.Is(err, io.ErrUnexpectedEOF):
		return &SyntaxError{len(d.data), "unexpected end of JSON input"}
	case errors.As(err, &se):
		return &SyntaxError{d.off + int(se.ByteOffset), se.Err.Error()}
	}
	return err // not reached: reading a bytes.Buffer does not fail
}

// unquote returns the content of the JSON string q, as jsontext read it:
// a subslice of q when it has no escapes and is valid UTF-8, else decoded
// into d's scratch buffer.
func (d *Decoder) unquote(q []byte) []byte {
	s := q[1 : len(q)-1]
	// Most strings are short and ASCII (names of members, clusters and
	// policies): this loop costs them less than calls to bytes.IndexByte
	// and utf8.Valid, which the others get.
	for i, c := range s {
		if c == '\\' || c >= utf8.RuneSelf {
			if bytes.IndexByte(s[i:], '\\') < 0 && utf8.Valid(s[i:]) {
				return s
			}
			// jsontext has validated q; the error says that it held
			// invalid UTF-8 or a lone surrogate, each decoded as U+FFFD
			// as encoding/json does.
			d.scratch, _ = jsontext.AppendUnquote(d.scratch[:0], q)
			return d.scratch
		}
	}
	return s
}

// String reads a string and returns it unquoted (as encoding/json does,
// invalid UTF-8 becoming U+FFFD), or ok=false for null. The string shares
// no memory with the input.
func (d *Decoder) String() (s string, ok bool, err error) {
	dec, took := d.begin()
	if took {
		defer d.end()
	}
	if k := dec.PeekKind(); k != '"' {
		_, err := d.other(dec, k, "string")
		return "", false, err
	}
	q, err := dec.ReadValue()
	if err != nil {
		return "", false, d.syntaxError(err)
	}
	return string(d.unquote(q)), true, nil
}

// Strings reads an array of strings: nil for null, and a null element is
// an empty string.
func (d *Decoder) Strings() ([]string, error) {
	dec, took := d.begin()
	if took {
		defer d.end()
	}
	var out []string
	isArray := dec.PeekKind() == '['
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
	dec, took := d.begin()
	if took {
		defer d.end()
	}
	v, err := dec.ReadValue()
	if err != nil {
		return nil, d.syntaxError(err)
	}
	end := d.offset()
	return d.data[end-len(v) : end], nil
}

// Skip reads any value and discards it.
func (d *Decoder) Skip() error {
	dec, took := d.begin()
	if took {
		defer d.end()
	}
	// ReadValue is SkipValue without its token-by-token walk through
	// objects and arrays: one pass of jsontext's validator.
	_, err := dec.ReadValue()
	return d.syntaxError(err)
}

// Span calls read, which must read one value with the decoder, and returns
// that value as it is in the input, as Raw would have.
func (d *Decoder) Span(read func() error) ([]byte, error) {
	from := d.offset()
	if err := read(); err != nil {
		return nil, err
	}
	end := d.offset()
	if end == from {
		return d.data[end:end], nil // read read nothing
	}
	// jsontext has read the bytes before the value too: whitespace and
	// the comma or colon that precedes it, if any.
	start := ws(d.data, from)
	if d.data[start] == ',' || d.data[start] == ':' {
		start = ws(d.data, start+1)
	}
	return d.data[start:end], nil
}

// Valid reports whether data is one JSON value, as json.Valid does.
func Valid(data []byte) bool {
	return jsontext.Value(data).IsValid(options...)
}
