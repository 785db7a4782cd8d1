package jsonscan

// The whole-document functions the tests compare with encoding/json: each
// reads data as one document through a Decoder, as a caller would.

// object calls fn with the name and the raw value of each member of the
// object in data, in order; null is an object without members. data must
// hold one JSON value and nothing else but whitespace. The scan is a single
// pass: fn may have been called for the members before a syntax error that
// object then returns, so a caller should only record what it is given
// until object returns nil. name is only valid during the call; value is a
// subslice of data without surrounding whitespace. An error from fn stops
// the scan and is returned as is.
func object(data []byte, fn func(name, value []byte) error) error {
	d := NewDecoder(data)
	err := d.Object(func(name []byte) error {
		value, err := d.Raw()
		if err != nil {
			return err
		}
		return fn(name, value)
	})
	if err != nil {
		return err
	}
	return d.Done()
}

// array calls fn with the raw value of each element of the array in data,
// in order; null is an array without elements. The rules of object apply.
func array(data []byte, fn func(value []byte) error) error {
	d := NewDecoder(data)
	err := d.Array(func() error {
		value, err := d.Raw()
		if err != nil {
			return err
		}
		return fn(value)
	})
	if err != nil {
		return err
	}
	return d.Done()
}

// str returns the string in data, unquoted, and ok=false for null. It
// shares no memory with data.
func str(data []byte) (s string, ok bool, err error) {
	d := NewDecoder(data)
	if s, ok, err = d.String(); err != nil {
		return "", false, err
	}
	return s, ok, d.Done()
}

// strs returns the array of strings in data, nil for null. A null
// element is an empty string.
func strs(data []byte) ([]string, error) {
	d := NewDecoder(data)
	list, err := d.Strings()
	if err != nil {
		return nil, err
	}
	return list, d.Done()
}
