package backoff_test

import (
	"testing"
	"time"

	"github.com/stbridge/stb/pkg/backoff"
)

func TestDelay(t *testing.T) {
	b := backoff.Exponential{Min: 100 * time.Millisecond, Max: time.Second}
	tests := []struct {
		attempt int
		ceiling time.Duration // the doubled Min, capped at Max
	}{
		{1, 100 * time.Millisecond},
		{2, 200 * time.Millisecond},
		{4, 800 * time.Millisecond},
		{5, time.Second},
		{1000, time.Second}, // doubling stops at Max: no overflow
	}
	for _, tt := range tests {
		for range 200 {
			d := b.Delay(tt.attempt)
			if d < tt.ceiling/2 || d >= tt.ceiling {
				t.Fatalf("Delay(%d) = %v, want in [%v, %v)", tt.attempt, d, tt.ceiling/2, tt.ceiling)
			}
		}
	}
	if d := (backoff.Exponential{Min: 1, Max: 1}).Delay(3); d != 1 {
		t.Errorf("a 1ns backoff waits %v, want 1ns (nothing to jitter)", d)
	}
}

func TestValidate(t *testing.T) {
	for _, tt := range []struct {
		b  backoff.Exponential
		ok bool
	}{
		{backoff.Exponential{Min: time.Millisecond, Max: time.Second}, true},
		{backoff.Exponential{Min: time.Second, Max: time.Second}, true},
		{backoff.Exponential{}, false},
		{backoff.Exponential{Min: time.Second, Max: time.Millisecond}, false},
		{backoff.Exponential{Min: -time.Second, Max: time.Second}, false},
	} {
		if err := tt.b.Validate(); (err == nil) != tt.ok {
			t.Errorf("%+v.Validate() = %v, want ok %v", tt.b, err, tt.ok)
		}
	}
}
