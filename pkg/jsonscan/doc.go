// Package jsonscan reads the few members the bridge needs out of a bundle's
// JSON data without building values for the rest: a pull API over
// github.com/go-json-experiment/json/jsontext (what becomes
// encoding/json/jsontext), which does all the reading.
//
// The reader decodes every message it reads, and with encoding/json that
// was most of its time: a status bundle is mostly objects kept as they came
// (managed clusters) or lists of names, and encoding/json builds a map for
// the envelope, copies every raw object and reflects over a struct per
// item. Here one pass validates a value and hands out its members and
// elements as subslices of the input, and strings are copied only when
// they are kept. The decoders pull what they want (Object, Array, String,
// Raw, …) and the rest is skipped, and validated, as it goes by.
//
// What it accepts is exactly what encoding/json accepts (json.Valid): the
// same grammar, the same whitespace, invalid UTF-8 inside strings, and at
// most 10,000 levels of nesting. Strings are unquoted as encoding/json does,
// invalid UTF-8 becoming U+FFFD. FuzzScan checks both against encoding/json.
// Member names are matched by the caller, exactly: unlike encoding/json's
// struct fields, "Metadata" is not "metadata".
//
// Until issue 13 this package scanned JSON itself, with 589 lines of
// hand-written lexer; measured end to end (BENCHMARKS.md, "jsonscan against
// jsontext") jsontext was within 10 % of it, and replaced it.
package jsonscan
