package bundle

import (
	"errors"
	"testing"
)

// TestDecodeOnce: a bundle is decoded the first time it is asked, and
// keeps what that gave, payload or error; one built with its payload is
// never decoded. The decoder is handed the bundle: its Attrs too.
func TestDecodeOnce(t *testing.T) {
	calls := 0
	bad := errors.New("bad data")
	decode := func(b *Bundle) (any, error) {
		calls++
		if string(b.Raw) == "bad" {
			return "partial", bad
		}
		out := b.Type + ":" + string(b.Raw)
		if a, ok := b.Attrs.(string); ok {
			out += "+" + a
		}
		return out, nil
	}
	for _, tc := range []struct {
		name    string
		b       Bundle
		payload any
		err     error
		calls   int
	}{
		{"good", Bundle{Type: "t", Raw: []byte("x")}, "t:x", nil, 1},
		{"bad", Bundle{Type: "t", Raw: []byte("bad")}, nil, bad, 1},
		{"no data", Bundle{Type: "t"}, "t:", nil, 1},
		{"with its family's attributes", Bundle{Type: "t", Raw: []byte("x"), Attrs: "a"}, "t:x+a", nil, 1},
		{"built with its payload", Bundle{Type: "t", Raw: []byte("x"), Payload: "given"}, "given", nil, 0},
	} {
		t.Run(tc.name, func(t *testing.T) {
			calls = 0
			for range 3 {
				if err := tc.b.Decode(decode); !errors.Is(err, tc.err) || (err == nil) != (tc.err == nil) {
					t.Fatalf("Decode = %v, want %v", err, tc.err)
				}
			}
			if tc.b.Payload != tc.payload || calls != tc.calls || !tc.b.Decoded() {
				t.Errorf("payload %v after %d decodes (decoded %v), want %v after %d", tc.b.Payload, calls, tc.b.Decoded(), tc.payload, tc.calls)
			}
		})
	}
}
