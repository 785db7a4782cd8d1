package redact_test

import (
	"errors"
	"fmt"
	"io"
	"testing"

	"github.com/stbridge/stb/pkg/redact"
)

func TestError(t *testing.T) {
	cause := fmt.Errorf("connect: password hunter2 refused: %w", io.ErrUnexpectedEOF)
	tests := []struct {
		name   string
		oldnew []string
		want   string
		same   bool
	}{
		{"hidden", []string{"hunter2", redact.Mask}, "connect: password *** refused: unexpected EOF", false},
		{"in order", []string{"hunter2", "xxxxx", "xxxxx", "[x]"}, "connect: password [x] refused: unexpected EOF", false},
		{"empty old passed over", []string{"", redact.Mask}, cause.Error(), true},
		{"nothing to hide", []string{"swordfish", redact.Mask}, cause.Error(), true},
	}
	for _, tt := range tests {
		t.Run(tt.name, func(t *testing.T) {
			got := redact.Error(cause, tt.oldnew...)
			if got.Error() != tt.want {
				t.Errorf("text %q, want %q", got, tt.want)
			}
			if (got == cause) != tt.same {
				t.Errorf("returned the cause itself: %v, want %v", got == cause, tt.same)
			}
			if !errors.Is(got, io.ErrUnexpectedEOF) {
				t.Error("the redacted error does not wrap its cause")
			}
		})
	}
	if redact.Error(nil, "a", "b") != nil {
		t.Error("Error(nil) != nil")
	}
}

func TestCap(t *testing.T) {
	tests := []struct {
		in   string
		n    int
		want string
	}{
		{"short", 10, "short"},
		{"exactly", 7, "exactly"},
		{"longer text", 6, "longer…"},
		{"añb", 2, "a…"}, // ñ is two bytes: not cut in half
		{"ñ", 1, "…"},
		{"", 0, ""},
	}
	for _, tt := range tests {
		if got := redact.Cap(tt.in, tt.n); got != tt.want {
			t.Errorf("Cap(%q, %d) = %q, want %q", tt.in, tt.n, got, tt.want)
		}
	}
}

func ExampleError() {
	err := errors.New(`parse "postgres://stb:hunter2@db:bad/stb": invalid port`)
	fmt.Println(redact.Error(err, "hunter2", redact.Mask))
	// Output: parse "postgres://stb:***@db:bad/stb": invalid port
}
