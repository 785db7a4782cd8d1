package deadletter

import (
	"testing"

	"github.com/stbridge/stb/pkg/bundle"
)

type message struct{}

func (message) Letter() ([]byte, map[string]string) {
	return []byte("hub-1"), map[string]string{"ce_specversion": "1.0", "ce_id": "e1"}
}

// TestBundlesKeepTheEvent: a bundle read from a message is dead-lettered
// with the data and headers it was read with, the whole event, so that it
// can be replayed from the stored copy (the workers decode the data, and a
// bad one is dead-lettered there, no longer by the reader); a bundle built
// from others (merged deltas) with its payload.
func TestBundlesKeepTheEvent(t *testing.T) {
	read := &bundle.Bundle{Hub: "hub-1", Type: "managedclusters", Raw: []byte(`{"objects":[`), Message: message{}}
	merged := &bundle.Bundle{Hub: "hub-1", Type: "compliancedelta", Payload: map[string]int{"a": 1}}
	ls := Bundles([]*bundle.Bundle{read, merged}, BadPayload, nil)
	if string(ls[0].Data) != `{"objects":[` || string(ls[0].Key) != "hub-1" || ls[0].Headers["ce_id"] != "e1" {
		t.Errorf("letter of a read bundle: data %q, key %q, headers %v; want the event as read", ls[0].Data, ls[0].Key, ls[0].Headers)
	}
	if string(ls[1].Data) != `{"a":1}` || ls[1].Headers["ce_source"] != "hub-1" {
		t.Errorf("letter of a merged bundle: data %q, headers %v; want its payload", ls[1].Data, ls[1].Headers)
	}
}
