package jsonscan

import (
	"bytes"
	"encoding/json"
	"errors"
	"reflect"
	"strings"
	"testing"
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
	if got, want := Valid(data), json.Valid(data); got != want {
		t.Fatalf("Valid(%q) = %v, json.Valid = %v", data, got, want)
	}

	var members []member
	err := object(data, func(name, value []byte) error {
		members = append(members, member{string(name), string(value)})
		return nil
	})
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
	wantElements, ok := refArray(t, data)
	if (err == nil) != ok {
		t.Fatalf("Array(%q) error = %v, encoding/json accepts it as an array: %v", data, err, ok)
	}
	if ok && !reflect.DeepEqual(elements, wantElements) {
		t.Fatalf("Array(%q) elements = %q, want %q", data, elements, wantElements)
	}

	s, isString, err := str(data)
	var want *string
	wantErr := json.Unmarshal(data, &want)
	if (err == nil) != (wantErr == nil) {
		t.Fatalf("String(%q) error = %v, encoding/json: %v", data, err, wantErr)
	}
	if err == nil && (isString != (want != nil) || (want != nil && s != *want)) {
		t.Fatalf("String(%q) = %q, %v; encoding/json: %v", data, s, isString, want)
	}

	list, err := strs(data)
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
	}

	if got, want := IsNull(data), bytes.Equal(bytes.TrimLeft(bytes.TrimRight(data, " \t\r\n"), " \t\r\n"), []byte("null")); got != want {
		t.Fatalf("IsNull(%q) = %v, want %v", data, got, want)
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
	var se *SyntaxError
	if err := object([]byte(`{"a":tru}`), nil); !errors.As(err, &se) || se.Offset != 8 {
		t.Errorf("Object(bad literal) = %#v, want a SyntaxError at offset 8", err)
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
	switch d.next() {
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
