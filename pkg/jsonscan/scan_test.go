package jsonscan

import (
	"bytes"
	"encoding/json"
	"errors"
	"fmt"
	"reflect"
	"strings"
	"sync"
	"testing"
	"unsafe"
)

// scanCases are the table cases of the package, also the fuzz seeds.
var scanCases = []string{
	``, ` `, `{}`, ` { } `, `[]`, `null`, `true`, `false`, `nul`, `nulll`, `0`, `-0`, `01`, `-`, `1.`, `1.5`,
	`1e`, `1e+`, `1E-7`, `-12.5e10`, `.5`, `+1`, `"a"`, `"\u00e9\n"`, `"\ud83d\ude00"`, `"\ud83d"`, `"\x"`,
	`"\u12"`, `"\u12g4"`, "\"tab\there\"", "\"\xff\xfe\"", `"unterminated`, `{"a":1}`, `{"a":1,}`, `{"a"}`,
	`{"a":}`, `{,}`, `{"a":1 "b":2}`, `{1:2}`, `[1,2,]`, `[,]`, `[1 2]`, `[[[]]]`, `{"a":[1,{"b":null}]}`,
	`{"objects":[{"metadata":{"name":"a","uid":"u"}}]}`, `{"a":1}x`, `{"a":1} {}`, "\t{\"a\":\"b\"}\r\n",
	`{"a":1,"a":2}`, `{"\u0061":"escaped name"}`, `["a",null,"b"]`, `["a",1]`, `{"a":"\u0000"}`,
	`[` + strings.Repeat(`[`, MaxDepth) + strings.Repeat(`]`, MaxDepth) + `]`,
	strings.Repeat(`[`, MaxDepth) + strings.Repeat(`]`, MaxDepth),
	strings.Repeat(`{"a":`, MaxDepth) + `1` + strings.Repeat(`}`, MaxDepth),
	strings.Repeat(`{"a":`, MaxDepth+1) + `1` + strings.Repeat(`}`, MaxDepth+1),
}

type member struct {
	Name  string
	Value string
}

// refObject is what encoding/json sees in data as an object: its members
// in order, or ok=false when json.Unmarshal into a map would fail.
func refObject(t *testing.T, data []byte) (members []member, ok bool) {
	var m map[string]json.RawMessage
	if json.Unmarshal(data, &m) != nil {
		return nil, false
	}
	dec := json.NewDecoder(bytes.NewReader(data))
	if tok, err := dec.Token(); err != nil || tok == nil {
		return nil, true // null
	}
	for dec.More() {
		tok, err := dec.Token()
		if err != nil {
			t.Fatalf("Token after Unmarshal accepted %q: %v", data, err)
		}
		var raw json.RawMessage
		if err := dec.Decode(&raw); err != nil {
			t.Fatalf("Decode after Unmarshal accepted %q: %v", data, err)
		}
		members = append(members, member{tok.(string), string(raw)})
	}
	return members, true
}

// refArray is refObject for arrays.
func refArray(t *testing.T, data []byte) (elements []string, ok bool) {
	var raws []json.RawMessage
	if json.Unmarshal(data, &raws) != nil {
		return nil, false
	}
	for _, r := range raws {
		elements = append(elements, string(r))
	}
	return elements, true
}

// checkAgainstEncodingJSON compares every function of the package with
// encoding/json on data.
func checkAgainstEncodingJSON(t *testing.T, data []byte) {
	// Nothing may write the input: jsontext overwrites the first byte of
	// a value it has handed out when the buffer is its own, which the
	// input must never be.
	orig := bytes.Clone(data)
	defer func() {
		if !bytes.Equal(data, orig) {
			t.Fatalf("the input %q was changed to %q", orig, data)
		}
	}()
	if got, want := Valid(data), json.Valid(data); got != want {
		t.Fatalf("Valid(%q) = %v, json.Valid = %v", data, got, want)
	}

	var members []member
	err := object(data, func(name, value []byte) error {
		members = append(members, member{string(name), string(value)})
		return nil
	})
	checkErrorType(t, "Object", data, err)
	wantMembers, ok := refObject(t, data)
	if (err == nil) != ok {
		t.Fatalf("Object(%q) error = %v, encoding/json accepts it as an object: %v", data, err, ok)
	}
	if ok && !reflect.DeepEqual(members, wantMembers) {
		t.Fatalf("Object(%q) members = %q, want %q", data, members, wantMembers)
	}

	var elements []string
	err = array(data, func(value []byte) error {
		elements = append(elements, string(value))
		return nil
	})
	checkErrorType(t, "Array", data, err)
	wantElements, ok := refArray(t, data)
	if (err == nil) != ok {
		t.Fatalf("Array(%q) error = %v, encoding/json accepts it as an array: %v", data, err, ok)
	}
	if ok && !reflect.DeepEqual(elements, wantElements) {
		t.Fatalf("Array(%q) elements = %q, want %q", data, elements, wantElements)
	}

	s, isString, err := str(data)
	checkErrorType(t, "String", data, err)
	var want *string
	wantErr := json.Unmarshal(data, &want)
	if (err == nil) != (wantErr == nil) {
		t.Fatalf("String(%q) error = %v, encoding/json: %v", data, err, wantErr)
	}
	if err == nil && (isString != (want != nil) || (want != nil && s != *want)) {
		t.Fatalf("String(%q) = %q, %v; encoding/json: %v", data, s, isString, want)
	}

	list, err := strs(data)
	checkErrorType(t, "Strings", data, err)
	var wantList []string
	wantErr = json.Unmarshal(data, &wantList)
	if (err == nil) != (wantErr == nil) {
		t.Fatalf("Strings(%q) error = %v, encoding/json: %v", data, err, wantErr)
	}
	if err == nil && !reflect.DeepEqual(list, wantList) {
		t.Fatalf("Strings(%q) = %#v, encoding/json %#v", data, list, wantList)
	}

	for _, leave := range []bool{false, true} {
		d := NewDecoder(data)
		err := walk(d, leave)
		if err == nil {
			err = d.Done()
		}
		if (err == nil) != json.Valid(data) {
			t.Fatalf("walking %q (leaving every other value: %v): %v; json.Valid %v", data, leave, err, json.Valid(data))
		}
		// walk asks every value for its own kind: its errors are all
		// syntax errors.
		var se *SyntaxError
		if err != nil && (!errors.As(err, &se) || se.Offset < 0 || se.Offset > len(data)) {
			t.Fatalf("walking %q: %#v, want a *SyntaxError with an offset in the data", data, err)
		}
	}

	if got, want := IsNull(data), bytes.Equal(bytes.TrimLeft(bytes.TrimRight(data, " \t\r\n"), " \t\r\n"), []byte("null")); got != want {
		t.Fatalf("IsNull(%q) = %v, want %v", data, got, want)
	}
}

// checkErrorType checks the type of err, returned by call on data: a
// *TypeError, or a *SyntaxError with an offset in data, and only a
// *TypeError when encoding/json accepts data (the value was of another
// kind than asked for). Callers tell bad data from a bad kind by type.
func checkErrorType(t *testing.T, call string, data []byte, err error) {
	t.Helper()
	if err == nil {
		return
	}
	var te *TypeError
	if errors.As(err, &te) {
		return
	}
	var se *SyntaxError
	if json.Valid(data) || !errors.As(err, &se) || se.Offset < 0 || se.Offset > len(data) {
		t.Fatalf("%s(%q) = %#v (json.Valid %v), want a *TypeError, or a *SyntaxError with an offset in the data",
			call, data, err, json.Valid(data))
	}
}

func TestAgainstEncodingJSON(t *testing.T) {
	for _, c := range scanCases {
		name := c
		if len(name) > 40 {
			name = name[:40]
		}
		t.Run(name, func(t *testing.T) { checkAgainstEncodingJSON(t, []byte(c)) })
	}
}

// FuzzScan: on any input, the package accepts and returns what
// encoding/json does.
func FuzzScan(f *testing.F) {
	for _, c := range scanCases {
		f.Add([]byte(c))
	}
	f.Fuzz(checkAgainstEncodingJSON)
}

func TestErrors(t *testing.T) {
	var te *TypeError
	if err := object([]byte(`[1]`), nil); !errors.As(err, &te) || te.Want != "object" || te.Got != "array" {
		t.Errorf("Object([1]) = %v, want a TypeError object/array", err)
	}
	if _, _, err := str([]byte(`12`)); !errors.As(err, &te) || te.Want != "string" || te.Got != "number" {
		t.Errorf("String(12) = %v, want a TypeError string/number", err)
	}
	var se *SyntaxError
	if err := object([]byte(`{"a":tru}`), nil); !errors.As(err, &se) || se.Offset != 8 {
		t.Errorf("Object(bad literal) = %#v, want a SyntaxError at offset 8", err)
	}
	// An input cut short is reported at its end, as encoding/json does.
	if data := []byte(`{"a":["b","c`); !errors.As(object(data, nil), &se) || se.Offset != len(data) {
		t.Errorf("Object(truncated) = %#v, want a SyntaxError at offset %d", se, len(data))
	}
	stop := errors.New("stop")
	calls := 0
	err := array([]byte(`[1,2,3]`), func([]byte) error { calls++; return stop })
	if err != stop || calls != 1 {
		t.Errorf("Array with a failing fn = %v after %d calls, want stop after 1", err, calls)
	}
}

// TestEscapedNameScratch: an escaped name is handed over unquoted, and the
// scratch buffer it lives in does not leak into the next name.
func TestEscapedNameScratch(t *testing.T) {
	var names []string
	err := object([]byte(`{"\u006eame":1,"x":2,"\u00e9t\u00e9":3,"ab":4}`), func(name, _ []byte) error {
		names = append(names, string(name))
		return nil
	})
	if err != nil {
		t.Fatal(err)
	}
	if want := []string{"name", "x", "été", "ab"}; !reflect.DeepEqual(names, want) {
		t.Errorf("names = %q, want %q", names, want)
	}
}

// within reports whether b is a subslice of data.
func within(b, data []byte) bool {
	if len(b) == 0 || len(data) == 0 {
		return len(b) == 0
	}
	start := uintptr(unsafe.Pointer(&data[0]))
	p := uintptr(unsafe.Pointer(&b[0]))
	return start <= p && p+uintptr(len(b)) <= start+uintptr(len(data))
}

// TestSubslices: Raw, Span and unescaped names are the input's own bytes,
// not copies, as the Decoder's documentation promises; escaped names are
// not.
func TestSubslices(t *testing.T) {
	data := []byte(` {"a" : [1, {"b":"c"}] , "\u0064":"e", "f": {"g":null}} `)
	d := NewDecoder(data)
	var spans, raws, names, escaped []string
	top, err := d.Span(func() error {
		return d.Object(func(name []byte) error {
			if string(name) == "d" {
				if within(name, data) {
					t.Errorf("escaped name %q is a subslice of the input", name)
				}
				escaped = append(escaped, string(name))
			} else {
				if !within(name, data) {
					t.Errorf("name %q is not a subslice of the input", name)
				}
				names = append(names, string(name))
			}
			if string(name) == "a" {
				return d.Array(func() error {
					v, err := d.Span(func() error { return d.Skip() })
					if !within(v, data) {
						t.Errorf("span %q is not a subslice of the input", v)
					}
					spans = append(spans, string(v))
					return err
				})
			}
			v, err := d.Raw()
			if !within(v, data) {
				t.Errorf("raw %q is not a subslice of the input", v)
			}
			raws = append(raws, string(v))
			return err
		})
	})
	if err == nil {
		err = d.Done()
	}
	if err != nil {
		t.Fatal(err)
	}
	if want := strings.TrimSpace(string(data)); string(top) != want || !within(top, data) {
		t.Errorf("top-level span = %q, want %q, a subslice of the input", top, want)
	}
	for _, c := range []struct {
		name      string
		got, want []string
	}{
		{"spans", spans, []string{`1`, `{"b":"c"}`}},
		{"raws", raws, []string{`"e"`, `{"g":null}`}},
		{"names", names, []string{"a", "f"}},
		{"escaped names", escaped, []string{"d"}},
	} {
		if !reflect.DeepEqual(c.got, c.want) {
			t.Errorf("%s = %q, want %q", c.name, c.got, c.want)
		}
	}
}

// TestReset: a Decoder reads a new input after Reset, from its start,
// whatever it was doing; the zero Decoder reads an empty input.
func TestReset(t *testing.T) {
	var d Decoder
	var se *SyntaxError
	if err := d.Object(nil); !errors.As(err, &se) || se.Offset != 0 {
		t.Errorf("zero Decoder: Object = %v, want a SyntaxError at offset 0", err)
	}
	d.Reset([]byte(`{"a":["x","y"],"b":1}`))
	err := d.Object(func(name []byte) error {
		d.Reset([]byte(` ["z"] `)) // in the middle of a value
		return errors.New("stop")
	})
	if err == nil || err.Error() != "stop" {
		t.Fatalf("Object = %v, want stop", err)
	}
	d.Reset([]byte(` ["z"] `))
	list, err := d.Strings()
	if err == nil {
		err = d.Done()
	}
	if err != nil || !reflect.DeepEqual(list, []string{"z"}) {
		t.Errorf("after Reset: Strings = %q, %v; want [z]", list, err)
	}
}

// TestConcurrentDecoders: decoders in several goroutines do not share
// state (the jsontext build pools jsontext's decoders); run with -race.
func TestConcurrentDecoders(t *testing.T) {
	var wg sync.WaitGroup
	for g := range 4 {
		wg.Go(func() {
			for i := range 200 {
				want := fmt.Sprintf("g%d-%d", g, i)
				data := []byte(fmt.Sprintf(`{"pad":[1,2,{"x":"y"}],"name":%q,"list":[%q]}`, want, want))
				d := NewDecoder(data)
				var name string
				var list []string
				err := d.Object(func(field []byte) error {
					switch string(field) {
					case "name":
						s, _, err := d.String()
						name = s
						return err
					case "list":
						var err error
						list, err = d.Strings()
						return err
					}
					return nil
				})
				if err == nil {
					err = d.Done()
				}
				if err != nil || name != want || len(list) != 1 || list[0] != want {
					t.Errorf("decoded %q, %q, %v; want %q", name, list, err, want)
					return
				}
			}
		})
	}
	wg.Wait()
}

// walk reads the value at d's position with the read method of its kind,
// all the way down, or, with leave, leaves every other member and element
// for the decoder to skip.
func walk(d *Decoder, leave bool) error {
	n := 0
	visit := func() error {
		if n++; leave && n%2 == 0 {
			return nil
		}
		return walk(d, leave)
	}
	switch d.peek() {
	case '{':
		return d.Object(func([]byte) error { return visit() })
	case '[':
		return d.Array(visit)
	case '"':
		_, _, err := d.String()
		return err
	}
	return d.Skip()
}
