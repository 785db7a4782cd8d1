package work

import (
	"bytes"
	"cmp"
	"encoding/json"
	"errors"
	"fmt"
	"math"
	"strconv"
	"strings"
	"time"
	"unsafe"

	"github.com/stbridge/stb/pkg/bundle"
	"github.com/stbridge/stb/pkg/jsonscan"
)

// header is what a status event says beside its data: its attributes and
// extensions, checked, and where it was read. Family.Bundle keeps it in
// the bundle's Attrs (as a *header) beside the data in Raw, for decode
// and for a dead letter of the bundle (EventOf).
type header struct {
	Type       string
	ID         string
	Agent      string // the CloudEvents source: the agent
	Source     string // originalsource: the source the work belongs to
	ResourceID string
	Cluster    string
	// ResourceVersion and SequenceID are the fence; a delete without a
	// sequence id has math.MaxInt64 (Family.Bundle).
	ResourceVersion int64
	SequenceID      int64
	Deleted         bool
	StatusHash      string
	Metadata        json.RawMessage
	Time            time.Time
	Topic           string
	Partition       int32
	Offset          int64
}

// heldBytes is what h keeps in memory beside the bundle it is the Attrs
// of (bundle.Bundle.Held): the struct and the bytes of its strings, but
// Cluster's, which is the bundle's Hub, and Topic's, which is its
// Origin's. The event's Kafka headers, which hold the same values again
// in binary mode, the reader counts with the message.
func (h *header) heldBytes() int {
	return int(unsafe.Sizeof(*h)) + len(h.Type) + len(h.ID) + len(h.Agent) + len(h.Source) +
		len(h.ResourceID) + len(h.StatusHash) + len(h.Metadata)
}

// attrsOf returns the checked attributes Family.Bundle kept in b, or a
// bad_payload: a work.status bundle some other code built, without them,
// can be neither decoded nor told apart from another event.
func attrsOf(b *bundle.Bundle) (*header, error) {
	h, ok := b.Attrs.(*header)
	if !ok || h == nil {
		return nil, badPayload(fmt.Errorf("work.status bundle of cluster %q has attributes %T, want those Family.Bundle keeps", b.Hub, b.Attrs))
	}
	return h, nil
}

// EventOf returns the event a work.status bundle was read from, rebuilt
// from its Attrs and Raw (dispatcher.EventLetters): the attributes and
// extensions as a binary-mode Kafka message's headers, and the data as
// it came. A worker's dead letter of the bundle so stores the event,
// which a replay reads through Family.Bundle as the reader did, in
// either mode it was read in. ok is false for another type or a bundle
// without the attributes Family.Bundle keeps.
func (Family) EventOf(b *bundle.Bundle) (headers map[string]string, data []byte, ok bool) {
	if b == nil || b.Type != BundleType {
		return nil, nil, false
	}
	h, err := attrsOf(b)
	if err != nil || h.Type == "" {
		return nil, nil, false
	}
	data = b.Raw
	headers = map[string]string{
		"ce_specversion":           "1.0",
		"ce_type":                  h.Type,
		"ce_id":                    h.ID,
		"ce_source":                h.Agent,
		"ce_" + ExtClusterName:     h.Cluster,
		"ce_" + ExtOriginalSource:  h.Source,
		"ce_" + ExtResourceID:      h.ResourceID,
		"ce_" + ExtResourceVersion: strconv.FormatInt(h.ResourceVersion, 10),
	}
	if h.SequenceID != math.MaxInt64 {
		// MaxInt64 stands for a delete sent without one (Family.Bundle);
		// it is of no snowflake node 1, so never an agent's.
		headers["ce_"+ExtSequenceID] = strconv.FormatInt(h.SequenceID, 10)
	}
	if h.StatusHash != "" {
		headers["ce_"+ExtStatusHash] = h.StatusHash
	}
	if h.Metadata != nil {
		headers["ce_"+ExtMetadata] = string(h.Metadata)
	}
	if !h.Time.IsZero() {
		headers["ce_time"] = h.Time.Format(time.RFC3339Nano)
	}
	if len(data) > 0 {
		headers["content-type"] = "application/json"
	}
	return headers, data, true
}

// Status is one resource's status as an agent reported it: the row
// work.resource_status holds for it.
type Status struct {
	header
	// Status is the event's data, a ManifestBundleStatus; nil when the
	// event had none (a delete_request may not).
	Status json.RawMessage
}

// Key is a resource's identity: the source its work came from and the
// work's id (sdk-go's resourceid, the ManifestWork's UID).
type Key struct{ Source, ResourceID string }

// Key returns s's key.
func (s *Status) Key() Key { return Key{s.Source, s.ResourceID} }

// compareKey orders statuses by key.
func compareKey(a, b *Status) int {
	return cmp.Or(strings.Compare(a.Source, b.Source), strings.Compare(a.ResourceID, b.ResourceID))
}

// CompareFence orders two statuses of one resource by the pair
// (resourceversion, sequenceid): a status replaces a stored one only when
// its pair is strictly greater; an equal pair is a copy of the same event.
// This is the order Maestro's UpdateStatus applies (pkg/services/
// resource.go: a status of another resource version is disregarded, then
// compareSequenceIDs must say newer), made total so that a status of a
// newer generation replaces one of an older.
func CompareFence(a, b *Status) int {
	return cmp.Or(cmp.Compare(a.ResourceVersion, b.ResourceVersion), cmp.Compare(a.SequenceID, b.SequenceID))
}

// Payload is the decoded data of a work.status bundle, or of several of
// one cluster folded by Merge: statuses sorted by key, one per key, the
// greatest fence of each.
type Payload struct {
	Statuses []*Status
}

// decode reads a bundle Family.Bundle made: the status is its Attrs (the
// event's checked attributes) and its Raw (the event's data, as it came).
func decode(b *bundle.Bundle) (any, error) {
	h, err := attrsOf(b)
	if err != nil {
		return nil, err
	}
	s := Status{header: *h}
	if s.Source == "" || s.ResourceID == "" || s.Cluster == "" || s.SequenceID <= 0 || s.ResourceVersion < 0 {
		return nil, badPayload(fmt.Errorf("work.status: attributes of resource %q of %q lack its key, cluster or fence", s.ResourceID, s.Source))
	}
	if len(bytes.TrimSpace(b.Raw)) > 0 {
		// Not validated again: Family.Bundle scanned the data whole,
		// and PostgreSQL parses it into jsonb. Checking it here too
		// cost a third of the read path of a 20 KB status
		// (BenchmarkReadStatus: 30% of the CPU in jsonscan.Valid).
		s.Status = json.RawMessage(b.Raw)
	}
	return &Payload{Statuses: []*Status{&s}}, nil
}

// merge folds newer into older, per key the greater fence winning and,
// for equal fences, the one first seen (a copy changes nothing). It
// modifies neither payload. Payloads of another type give a value Plan
// rejects, so that the group is dead-lettered instead of losing a status.
func merge(older, newer any) any {
	o, ok1 := older.(*Payload)
	n, ok2 := newer.(*Payload)
	if !ok1 || !ok2 || o == nil || n == nil {
		return unmergeable{fmt.Sprintf("%T", older), fmt.Sprintf("%T", newer)}
	}
	switch {
	case len(n.Statuses) == 0:
		return o
	case len(o.Statuses) == 0:
		return n
	}
	out := make([]*Status, 0, len(o.Statuses)+len(n.Statuses))
	a, b := o.Statuses, n.Statuses
	for len(a) > 0 && len(b) > 0 {
		switch c := compareKey(a[0], b[0]); {
		case c < 0:
			out, a = append(out, a[0]), a[1:]
		case c > 0:
			out, b = append(out, b[0]), b[1:]
		default:
			if CompareFence(b[0], a[0]) > 0 {
				out = append(out, b[0])
			} else {
				out = append(out, a[0])
			}
			a, b = a[1:], b[1:]
		}
	}
	out = append(append(out, a...), b...)
	return &Payload{Statuses: out}
}

// unmergeable is what merge returns for payloads it cannot merge.
type unmergeable struct{ Older, Newer string }

// scanStatus checks that data is a ManifestBundleStatus as sdk-go's
// payload package declares it (pkg/cloudevents/clients/work/payload:
// {"conditions":[metav1.Condition], "resourceStatus":[ManifestCondition],
// "manifestBundle"?}) and reports whether its conditions hold Deleted=True,
// which is how an agent says the work is gone (the agent client's
// deleteWork sets common.ResourceDeleted, "Deleted", to True, and
// Maestro's handleStatusUpdate deletes the resource on it). Empty data is
// no status and not a delete. PostgreSQL's jsonb cannot hold a NUL
// character, so "\u0000" is refused here rather than failing the write of
// the cluster's other statuses.
func scanStatus(data []byte) (deleted bool, err error) {
	if len(bytes.TrimSpace(data)) == 0 {
		return false, nil
	}
	if t := bytes.TrimSpace(data); t[0] != '{' {
		return false, errNoObject
	}
	if bytes.Contains(data, []byte(`\u0000`)) {
		return false, errors.New(`holds "\u0000", which jsonb cannot store`)
	}
	d := jsonscan.NewDecoder(data)
	err = d.Object(func(name []byte) error {
		switch string(name) {
		case "conditions":
			return d.Array(func() error {
				var typ, status string
				err := d.Object(func(f []byte) error {
					switch string(f) {
					case "type":
						return setString(d, &typ, "type")
					case "status":
						return setString(d, &status, "status")
					}
					return nil
				})
				if err != nil {
					return fmt.Errorf("conditions: %w", err)
				}
				if typ == "" {
					return errors.New("conditions: a condition without a type")
				}
				if typ == "Deleted" && status == "True" {
					deleted = true
				}
				return nil
			})
		case "resourceStatus":
			return d.Array(func() error {
				return d.Object(nil) // each a ManifestCondition
			})
		}
		return nil
	})
	if err == nil {
		err = d.Done()
	}
	if err != nil {
		return false, err
	}
	return deleted, nil
}

// errNoObject is scanStatus's error for data that is not a JSON object.
var errNoObject = errors.New("want a JSON object (ManifestBundleStatus)")

// setString reads a string member into *dst (null leaves it alone).
func setString(d *jsonscan.Decoder, dst *string, field string) error {
	s, ok, err := d.String()
	if err != nil {
		return fmt.Errorf("%s: %w", field, err)
	}
	if ok {
		*dst = s
	}
	return nil
}
