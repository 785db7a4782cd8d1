package dbsyncers

import (
	"encoding/json"
	"errors"
	"fmt"
)

// decodeObjects decodes the data every status bundle carries: a JSON object
// whose "objects" member lists the bundle's items. It returns the items
// undecoded, so each type decodes only what it needs and keeps the rest as
// it came. "objects": null counts as an empty list (a Go agent marshals a
// nil slice so); other members are ignored, so agents may add some.
//
// A missing "objects" member is an error when required: for a complete
// bundle an empty list deletes the hub's rows, and that must be said, not
// inferred from a truncated or mistyped payload.
func decodeObjects(data []byte, required bool) ([]json.RawMessage, error) {
	var top map[string]json.RawMessage
	if err := json.Unmarshal(data, &top); err != nil {
		return nil, fmt.Errorf("payload: %w", err)
	}
	if top == nil {
		return nil, errors.New("payload: want a JSON object, got null")
	}
	raw, ok := top["objects"]
	if !ok {
		if required {
			return nil, errors.New(`payload: "objects" is missing`)
		}
		return nil, nil
	}
	var objects []json.RawMessage
	if err := json.Unmarshal(raw, &objects); err != nil {
		return nil, fmt.Errorf(`payload: "objects": %w`, err)
	}
	return objects, nil
}
