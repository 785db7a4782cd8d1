package jsonscan_test

import (
	"errors"
	"fmt"

	"github.com/stbridge/stb/pkg/jsonscan"
)

// A decoder reads the members it wants and leaves the rest, which it skips
// and validates on the way: here the name of each object, and each object
// as it came.
func ExampleDecoder() {
	data := []byte(`{"objects":[{"metadata":{"name":"a","uid":"1"},"spec":{"x":[1,2]}},{"metadata":{"name":"b"}}],"extra":true}`)
	d := jsonscan.NewDecoder(data)
	err := d.Object(func(field []byte) error {
		if string(field) != "objects" {
			return nil // skipped
		}
		return d.Array(func() error {
			var name string
			raw, err := d.Span(func() error {
				return d.Object(func(field []byte) error {
					if string(field) != "metadata" {
						return nil
					}
					return d.Object(func(field []byte) error {
						if string(field) == "name" {
							s, _, err := d.String()
							name = s
							return err
						}
						return nil
					})
				})
			})
			fmt.Printf("%s: %s\n", name, raw)
			return err
		})
	})
	if err == nil {
		err = d.Done()
	}
	fmt.Println("error:", err)
	// Output:
	// a: {"metadata":{"name":"a","uid":"1"},"spec":{"x":[1,2]}}
	// b: {"metadata":{"name":"b"}}
	// error: <nil>
}

// Invalid JSON anywhere is an error, with its offset, even in parts the
// caller left to be skipped.
func ExampleDecoder_Done() {
	data := []byte(`{"a":1,"b":[1,2,}`)
	d := jsonscan.NewDecoder(data)
	err := d.Object(nil)
	if err == nil {
		err = d.Done()
	}
	// The message is jsontext's; the offset is that of the byte at fault.
	var se *jsonscan.SyntaxError
	if errors.As(err, &se) {
		fmt.Printf("syntax error at offset %d: %s\n", se.Offset, data[se.Offset:])
	}
	// Output:
	// syntax error at offset 16: }
}
