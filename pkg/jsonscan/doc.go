// Package jsonscan reads the few members the bridge needs out of a bundle's
// JSON data without building values for the rest.
//
// The reader decodes every message it reads, and with encoding/json that
// was most of its time: a status bundle is mostly objects kept as they came
// (managed clusters) or lists of names, and encoding/json builds a map for
// the envelope, copies every raw object and reflects over a struct per
// item. Here one pass validates a value and hands out its members and
// elements as subslices of the input, and strings are copied only when
// they are kept.
//
// What it accepts is exactly what encoding/json accepts (json.Valid): the
// same grammar, the same whitespace, invalid UTF-8 inside strings, and at
// most 10,000 levels of nesting. Strings are unquoted as encoding/json does,
// invalid UTF-8 becoming U+FFFD. FuzzScan checks both against encoding/json.
// Member names are matched by the caller, exactly: unlike encoding/json's
// struct fields, "Metadata" is not "metadata".
//
// Built with -tags stb_jsontext, the same API is implemented on jsontext
// (github.com/go-json-experiment/json/jsontext, what becomes
// encoding/json/jsontext) instead of the hand-written lexer, to measure
// the two in the bridge's decoders and end to end (issue 13): the
// package's tests, FuzzScan among them, pass with both. What differs is
// the text of a SyntaxError and, for a few errors, which byte its offset
// points at (the backslash of a bad escape or the byte after it; a
// trailing comma or the bracket after it).
package jsonscan
