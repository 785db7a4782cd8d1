package transport

import (
	"bytes"
	"context"
	"errors"
	"fmt"
	"io"
	"net/url"
	"strings"
	"sync"
	"time"

	"github.com/cloudevents/sdk-go/protocol/kafka_confluent/v2"
	"github.com/cloudevents/sdk-go/v2/binding"
	"github.com/cloudevents/sdk-go/v2/binding/format"
	"github.com/cloudevents/sdk-go/v2/binding/spec"
	"github.com/cloudevents/sdk-go/v2/event"
	"github.com/cloudevents/sdk-go/v2/types"
	"github.com/confluentinc/confluent-kafka-go/v2/kafka"
)

// How a message becomes the attributes a bundle needs.
//
// The CloudEvents binding turns a message into an event.Event: it copies
// every header into a map, adds the topic, partition, offset and key as
// four more, converts each value into the event's context and copies the
// extensions into another map. That was a quarter of the CPU of a
// catch-up. A binary-mode message with the headers every agent sends is
// read here instead, into eventAttrs, by attrsWriter: a binding.BinaryWriter
// that applies the binding's own conversions and checks to each attribute
// (the spec table of the kafka_confluent binding, the event context's
// setters and extension-name rules, types.ToTime) and keeps only what a
// bundle needs. Anything else, structured mode, another spec version,
// headers the binding would fold together (a repeated key, a key with
// capitals), goes the binding's whole way (readEvent). FuzzDecodePaths
// checks that both decode every message to the same bundle or reject.

// eventAttrs is what the decoders read of one CloudEvent.
type eventAttrs struct {
	// specVersion is the event's spec version; only 1.0 is decoded.
	specVersion string
	// id and typ are as the binding keeps them (trimmed); see eventID.
	id, typ string
	// rawID is the id as attrsWriter read it from its header, trimmed,
	// where id is left empty: only the global-hub profile keeps ids, and
	// STB's format needs to know only that there is one.
	rawID []byte
	// source is the ce_source header as it came when the message has
	// one, else the source as the binding wrote it (structured mode):
	// the hub's name is taken from what the sender wrote.
	source string
	time   time.Time
	data   []byte
	// The extensions the decoders read, nil when absent, as the binding
	// keeps them (a string in binary mode).
	version, dependency, chunkSize, sendMode any
	// migrationID and migrationStage are the global-hub agent's
	// managedclustermigration extensions.
	migrationID, migrationStage any
	// authedHub is the hub the transport authenticated a global-hub
	// event's sender as (ExtAuthedHub).
	authedHub any

	// w is the pooled writer that holds these attributes, nil when the
	// binding's event made them (readEvent); see release.
	w *attrsWriter
}

// hasID reports whether the event has a (non-blank) id.
func (a *eventAttrs) hasID() bool { return a.id != "" || len(a.rawID) > 0 }

// eventID is the event's id.
func (a *eventAttrs) eventID() string {
	if a.id == "" && len(a.rawID) > 0 {
		return string(a.rawID)
	}
	return a.id
}

// release gives the attributes' writer back for the next message; the
// attributes must not be used after it (what was copied out of them, the
// strings and the data's slice, stays valid). Safe on nil.
func (a *eventAttrs) release() {
	if a == nil || a.w == nil {
		return
	}
	w := a.w
	w.reset()
	attrsWriters.Put(w)
}

// ceSpecs are the binding's binary-mode attribute names ("ce_id", …).
var ceSpecs = spec.WithPrefix(kafkaHeaderPrefix)

// ceV1 is the CloudEvents 1.0 attribute table of binary mode.
var ceV1 = ceSpecs.Version(event.CloudEventsVersionV1)

const (
	kafkaHeaderPrefix = "ce_"
	headerContentType = "content-type"
)

// readAttrs reads msg's attributes: through attrsWriter when it is a
// binary-mode event whose headers need nothing of what the binding does to
// unusual ones, else through the binding's event.
func readAttrs(msg *kafka.Message, raw rawAttrs) (*eventAttrs, error) {
	if plainBinaryV1(msg) {
		w := attrsWriters.Get().(*attrsWriter)
		w.raw = raw
		if err := w.read(msg); err != nil {
			w.a.release()
			return nil, err
		}
		return &w.a, nil
	}
	return readEvent(msg, raw)
}

// readEvent reads msg's attributes through the binding's event.Event.
func readEvent(msg *kafka.Message, raw rawAttrs) (*eventAttrs, error) {
	ev, err := binding.ToEvent(context.Background(), kafka_confluent.NewMessage(msg))
	if err != nil {
		return nil, err
	}
	a := &eventAttrs{
		specVersion: ev.SpecVersion(),
		id:          ev.ID(),
		typ:         ev.Type(),
		source:      raw.source,
		time:        ev.Time(),
		data:        ev.Data(),
	}
	if !raw.hasSource {
		a.source = ev.Source()
	}
	if v1, ok := ev.Context.(*event.EventContextV1); ok {
		a.version = v1.Extensions[ExtVersion]
		a.dependency = v1.Extensions[ExtDependencyVersion]
		a.chunkSize = v1.Extensions[ExtChunkSize]
		a.sendMode = v1.Extensions[ExtSendMode]
		a.migrationID = v1.Extensions[ExtMigrationID]
		a.migrationStage = v1.Extensions[ExtMigrationStage]
		a.authedHub = v1.Extensions[ExtAuthedHub]
	}
	return a, nil
}

// plainBinaryV1 reports whether the binding reads msg as a binary-mode
// CloudEvents 1.0 event (ce_specversion 1.0, no event format as content
// type), with header keys that are all distinct and lower case, so that
// each header is one attribute or extension exactly as it came.
func plainBinaryV1(msg *kafka.Message) bool {
	v1 := false
	for i, h := range msg.Headers {
		for j := range h.Key {
			if c := h.Key[j]; 'A' <= c && c <= 'Z' || c >= 0x80 {
				return false
			}
		}
		for _, prev := range msg.Headers[:i] {
			if prev.Key == h.Key {
				return false
			}
		}
		switch h.Key {
		case ceSpecs.PrefixedSpecVersionName():
			if string(h.Value) != event.CloudEventsVersionV1 {
				return false
			}
			v1 = true
		case headerContentType:
			if format.Lookup(string(h.Value)) != nil {
				return false // structured mode
			}
		}
	}
	return v1
}

// attrsWriter is a binding.BinaryWriter that keeps only what eventAttrs
// holds, converting and checking each value as the binding does when it
// builds an event.
type attrsWriter struct {
	a eventAttrs
	// ext checks extension names with the event context's own rules; its
	// map holds one key that no valid name can be, so that checking a
	// name (setting it to nil) allocates nothing.
	ext event.EventContextV1
	// raw, when read has been given it, holds the ce_source and ce_type
	// headers as strings already: with every key once, the same values.
	raw rawAttrs
}

var _ binding.BinaryWriter = (*attrsWriter)(nil)

// attrsWriters keeps writers between messages: a writer, its attributes
// and the extension-name map were three allocations per message.
var attrsWriters = sync.Pool{New: func() any { return newAttrsWriter() }}

func newAttrsWriter() *attrsWriter {
	w := &attrsWriter{ext: event.EventContextV1{Extensions: map[string]any{"": nil}}}
	w.reset()
	return w
}

// reset makes w as new: its map keeps only the key no valid name can be
// (a name checked is set to nil, which deletes it).
func (w *attrsWriter) reset() {
	w.a = eventAttrs{specVersion: event.CloudEventsVersionV1, w: w}
	w.raw = rawAttrs{}
}

// read feeds the writer msg's headers and value as the kafka_confluent
// binding's ReadBinary does, without copying the headers into a map first
// (plainBinaryV1 must hold: no two headers fold into one key), and without
// turning the values it does not keep into strings.
func (w *attrsWriter) read(msg *kafka.Message) error {
	for _, h := range msg.Headers {
		name, ok := strings.CutPrefix(h.Key, kafkaHeaderPrefix)
		if !ok {
			continue // content-type is datacontenttype: never refused, unread
		}
		var err error
		if attr := ceV1.Attribute(h.Key); attr != nil {
			err = w.setAttribute(attr.Kind(), h.Value)
		} else {
			err = w.setExtension(name, h.Value)
		}
		if err != nil {
			return err
		}
	}
	// The binding also adds the topic, partition, offset and key as
	// extensions (kafkatopic, …): valid names, values no decoder reads.
	if len(msg.Value) > 0 {
		w.a.data = msg.Value
	}
	return nil
}

// Start implements binding.BinaryWriter.
func (w *attrsWriter) Start(context.Context) error { return nil }

// End implements binding.BinaryWriter.
func (w *attrsWriter) End(context.Context) error { return nil }

// SetData keeps the data without copying it, as the binding's event does.
func (w *attrsWriter) SetData(r io.Reader) error {
	buf, ok := r.(*bytes.Buffer)
	if !ok {
		buf = new(bytes.Buffer)
		if _, err := io.Copy(buf, r); err != nil {
			return err
		}
	}
	if buf.Len() > 0 {
		w.a.data = buf.Bytes()
	}
	return nil
}

// SetAttribute implements binding.BinaryWriter.
func (w *attrsWriter) SetAttribute(attr spec.Attribute, value any) error {
	if attr.Kind() == spec.Time {
		t, err := types.ToTime(value)
		if err != nil {
			return fmt.Errorf("invalid value for %s: %#v", attr.Kind(), value)
		}
		w.a.time = t
		return nil
	}
	s, err := types.ToString(value)
	if err != nil {
		return fmt.Errorf("invalid value for %s: %#v", attr.Kind(), value)
	}
	return w.setAttribute(attr.Kind(), []byte(s))
}

// SetExtension implements binding.BinaryWriter.
func (w *attrsWriter) SetExtension(name string, value any) error {
	s, err := types.ToString(value)
	if err != nil {
		return err
	}
	return w.setExtension(name, []byte(s))
}

// setAttribute converts a binary-mode attribute's value as the event
// context's setter of the attribute does, failing where it fails.
func (w *attrsWriter) setAttribute(kind spec.Kind, v []byte) error {
	switch kind {
	case spec.SpecVersion:
		if string(v) != event.CloudEventsVersionV1 {
			return fmt.Errorf("spec version %q read as %s", v, event.CloudEventsVersionV1)
		}
	case spec.ID:
		if w.a.rawID = bytes.TrimSpace(v); len(w.a.rawID) == 0 {
			return errors.New("id is required to be a non-empty string")
		}
	case spec.Source:
		s := w.raw.source
		if !w.raw.hasSource {
			s = string(v)
		}
		if !unreservedOnly(s) { // else url.Parse cannot fail, nor allocate
			if _, err := url.Parse(s); err != nil {
				return err
			}
		}
		w.a.source = s
	case spec.Type:
		if w.raw.hasTyp {
			w.a.typ = strings.TrimSpace(w.raw.typ)
		} else {
			w.a.typ = strings.TrimSpace(string(v))
		}
	case spec.Time:
		// types.ToTime of a string.
		t, err := time.Parse(time.RFC3339Nano, string(v))
		if err != nil {
			return fmt.Errorf("invalid value for %s: %q", kind, v)
		}
		w.a.time = t
	case spec.DataSchema:
		if s := strings.TrimSpace(string(v)); s != "" {
			if _, err := url.Parse(s); err != nil {
				return err
			}
		}
	}
	// datacontenttype and subject: trimmed by the binding, never refused,
	// read by no decoder.
	return nil
}

// setExtension checks an extension's name as the event context does and
// keeps the ones the decoders read, as strings (what a binary-mode
// extension is).
func (w *attrsWriter) setExtension(name string, v []byte) error {
	if err := w.ext.SetExtension(name, nil); err != nil {
		return err
	}
	var keep *any
	switch strings.ToLower(name) {
	case ExtVersion:
		keep = &w.a.version
	case ExtDependencyVersion:
		keep = &w.a.dependency
	case ExtChunkSize:
		keep = &w.a.chunkSize
	case ExtSendMode:
		keep = &w.a.sendMode
	case ExtMigrationID:
		keep = &w.a.migrationID
	case ExtMigrationStage:
		keep = &w.a.migrationStage
	case ExtAuthedHub:
		keep = &w.a.authedHub
	default:
		return nil
	}
	*keep = string(v)
	return nil
}

// unreservedOnly reports whether s holds only URI unreserved characters
// (RFC 3986: letters, digits, "-", ".", "_", "~"), which url.Parse reads
// as a relative path without an error: no scheme, no escape, no control
// character, no colon in a first segment.
func unreservedOnly(s string) bool {
	for i := 0; i < len(s); i++ {
		switch c := s[i]; {
		case 'a' <= c && c <= 'z', 'A' <= c && c <= 'Z', '0' <= c && c <= '9', c == '-', c == '.', c == '_', c == '~':
		default:
			return false
		}
	}
	return true
}
