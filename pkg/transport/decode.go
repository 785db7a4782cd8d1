package transport

import (
	"errors"
	"fmt"
	"net/url"
	"strings"
	"time"
	"unicode"
	"unicode/utf8"

	"github.com/cloudevents/sdk-go/v2/event"
	"github.com/cloudevents/sdk-go/v2/types"
	"github.com/confluentinc/confluent-kafka-go/v2/kafka"

	"github.com/stbridge/stb/pkg/bundle"
	"github.com/stbridge/stb/pkg/deadletter"
	"github.com/stbridge/stb/pkg/jsonscan"
)

// Decoder knows the bundle types and turns a type's data into its
// payload.
//
// The reader decodes only what its profile must look into to know whether
// a message counts at all (the global-hub agent's hub info without a
// cluster id): every other bundle leaves the reader with its data raw
// (bundle.Bundle.Raw), to be decoded when a worker writes it, since most
// are replaced by a newer one of their hub and type before that. Its data
// is checked then, and dead-lettered if it does not decode. So the reader
// tells an unknown type by Known, before anything else, never by a decode
// error.
type Decoder interface {
	// Known reports whether typ, the short type such as "heartbeat", is a
	// bundle type the bridge handles.
	Known(typ string) bool
	// Decode returns the payload of b, a bundle the reader built (its
	// Type, its Raw, and its family's Attrs if any), leaving b as it is
	// (bundle.DecodeFunc); an error wrapping bundle.ErrUnknownType for a
	// type it does not know (an unknown_type reject); any other error
	// makes the message a bad_payload reject, or a reject with the
	// reason the error carries (deadletter.Reasoned).
	Decode(b *bundle.Bundle) (payload any, err error)
}

// DependencyChecker is optionally implemented by a Decoder: a type it
// names can only be applied on the version its extdependencyversion
// names, so a message of it without one is rejected (missing_attribute)
// instead of waiting for a base that cannot come.
type DependencyChecker interface {
	NeedsDependency(typ string) bool
}

// MaxHubNameBytes is the longest hub name taken: hubs are managed
// clusters, whose names are Kubernetes object names (DNS subdomains, at
// most 253 characters).
const MaxHubNameBytes = 253

// checkHubName says what is wrong with a hub's name, if anything: it
// becomes a key of every table and a label on pages, so it must be valid
// UTF-8 without control characters and of a bounded length.
func checkHubName(hub string) error {
	switch {
	case len(hub) > MaxHubNameBytes:
		return fmt.Errorf("hub name of %d bytes, limit %d", len(hub), MaxHubNameBytes)
	case !utf8.ValidString(hub):
		return fmt.Errorf("hub name %q is not valid UTF-8", hub)
	case strings.IndexFunc(hub, unicode.IsControl) >= 0:
		return fmt.Errorf("hub name %q holds a control character", hub)
	}
	return nil
}

// rawAttrs are the binary-mode attribute headers as they came, which the
// checks compare with what the CloudEvents library made of them; read in
// one pass over the headers.
type rawAttrs struct {
	source, typ       string
	hasSource, hasTyp bool
}

func rawAttrsOf(msg *kafka.Message) rawAttrs {
	var a rawAttrs
	for _, h := range msg.Headers {
		switch h.Key {
		case headerSource:
			a.source, a.hasSource = string(h.Value), true
		case headerType:
			a.typ, a.hasTyp = string(h.Value), true
		}
	}
	return a
}

// typeAltered reports whether the binding changed the type it was sent:
// it trims the header, and a type with white space around it is not the
// type without.
func (a rawAttrs) typeAltered(typ string) bool { return a.hasTyp && a.typ != typ }

// unescapeSource returns a source as the hub named itself. The CloudEvents
// library parses source as a URI reference and writes it percent-encoded
// (a hub "a b" goes out as "a%20b", "ü" as "%C3%BC"); this undoes that.
func unescapeSource(sent string) string {
	decoded, err := url.PathUnescape(sent)
	if err != nil {
		return sent
	}
	return decoded
}

// payloadReason is the dead-letter reason of a decoder's error: the one it
// carries, else unknown_type for a type the decoder does not know, else
// bad_payload.
func payloadReason(err error) deadletter.Reason {
	var reasoned deadletter.Reasoned
	switch {
	case errors.As(err, &reasoned):
		return reasoned.DeadLetterReason()
	case errors.Is(err, bundle.ErrUnknownType):
		return deadletter.UnknownType
	}
	return deadletter.BadPayload
}

// checkSyntax says what is wrong with a bundle's data if it is not one
// JSON value, without decoding it: a scan (jsonscan.Valid, what
// encoding/json.Valid accepts), so that data that can never decode is
// dead-lettered once, when read, whether or not a newer bundle replaces
// it before a worker would decode it (late decoding lettered only the
// bundles it wrote: 3,272 of a flood of 18,000, which ones depending on
// timing; issue 34, item 10, and BENCHMARKS.md for what it costs). What
// only decoding finds (a member missing, a name too long) is still found
// when written. Empty data is left to the decoder (a global-hub heartbeat
// may have none).
func checkSyntax(data []byte) error {
	if len(data) == 0 || jsonscan.Valid(data) {
		return nil
	}
	d := jsonscan.NewDecoder(data) // the failure's place, on this path only
	err := d.Skip()
	if err == nil {
		err = d.Done()
	}
	if err == nil {
		err = errors.New("not a JSON value")
	}
	return fmt.Errorf("data is not JSON: %w", err)
}

// header returns the value of the message's header key, if it has one.
func header(msg *kafka.Message, key string) (string, bool) {
	for _, h := range msg.Headers {
		if h.Key == key {
			return string(h.Value), true
		}
	}
	return "", false
}

// Decoders is a Decoder from a map of short type to decode function, for
// types whose data is all they carry (dbsyncers.Syncer.Decode).
type Decoders map[string]func(data []byte) (any, error)

// Known reports whether typ has a decode function.
func (d Decoders) Known(typ string) bool { _, ok := d[typ]; return ok }

// Decode runs the decode function of b's type on b's Raw.
func (d Decoders) Decode(b *bundle.Bundle) (any, error) {
	fn, ok := d[b.Type]
	if !ok {
		return nil, fmt.Errorf("%w: %q", bundle.ErrUnknownType, b.Type)
	}
	return fn(b.Raw)
}

// Rules say what Decode accepts. The Reader builds them from its Config.
type Rules struct {
	TypePrefix     string
	VerifySource   bool
	MaxBundleBytes int
	// Decoder is required.
	Decoder Decoder
}

// Decode turns one Kafka message into a bundle, or says why it cannot. It
// checks what the version fence and the conflation need (the envelope, the
// hub, the type, the versions, the size) and keeps the data raw, undecoded
// (see Decoder). It is pure (no I/O, no shared state) and returns exactly
// one non-nil result; it never panics on bad input. receivedAt becomes the
// bundle's ReceivedAt.
func Decode(msg *kafka.Message, rules Rules, receivedAt time.Time) (*bundle.Bundle, *Reject) {
	return decode(readAttrs, msg, rules, receivedAt)
}

// attrsReader reads a message's attributes: readAttrs, or readEvent
// (always the binding's event), which tests compare it with.
type attrsReader func(msg *kafka.Message, raw rawAttrs) (*eventAttrs, error)

func decode(read attrsReader, msg *kafka.Message, rules Rules, receivedAt time.Time) (*bundle.Bundle, *Reject) {
	if msg == nil {
		return nil, newReject(nil, bundle.Origin{}, deadletter.NotCloudEvent, errors.New("nil message"))
	}
	tp := msg.TopicPartition
	origin := bundle.Origin{Partition: tp.Partition, Offset: int64(tp.Offset)}
	if tp.Topic != nil {
		origin.Topic = *tp.Topic
	}
	// The binding panics on these; a consumer never delivers them, but
	// Decode is also fed by fuzzing and tests.
	if tp.Topic == nil || tp.Partition < 0 || tp.Offset < 0 {
		return nil, newReject(msg, origin, deadletter.NotCloudEvent, fmt.Errorf("message has no topic, partition or offset (%v)", tp))
	}

	raw := rawAttrsOf(msg)
	if raw.hasSource {
		// Before the library, which refuses some of these as URIs.
		if err := checkHubName(raw.source); err != nil {
			r := newReject(msg, origin, deadletter.InvalidHub, err)
			r.Hub = raw.source
			return nil, r
		}
	}
	ev, err := read(msg, raw)
	if err != nil {
		return nil, newReject(msg, origin, deadletter.NotCloudEvent, err)
	}
	defer ev.release() // what the bundle keeps is copied out of it
	if ev.specVersion != event.CloudEventsVersionV1 {
		return nil, newReject(msg, origin, deadletter.NotCloudEvent, fmt.Errorf("specversion %q, want %s", ev.specVersion, event.CloudEventsVersionV1))
	}
	// The hub is the source, decoded. When the Kafka key is the source as
	// sent or decoded, the key is the hub's own name: the source,
	// percent-encoded by the sender's library, cannot tell "a b" from
	// "a%20b", the key can, so two hubs never meet in one row.
	sent := ev.source
	decoded := unescapeSource(sent)
	keyIsSource := len(msg.Key) > 0 && (string(msg.Key) == sent || string(msg.Key) == decoded)
	hub, typ := decoded, ev.typ
	if keyIsSource {
		hub = string(msg.Key)
	}
	var versionText string
	reject := func(reason deadletter.Reason, err error) (*bundle.Bundle, *Reject) {
		r := newReject(msg, origin, reason, err)
		r.Hub, r.Type, r.Version = hub, typ, versionText
		return nil, r
	}
	switch {
	case !ev.hasID():
		return reject(deadletter.MissingAttribute, errors.New("no id"))
	case sent == "":
		return reject(deadletter.MissingAttribute, errors.New("no source"))
	case typ == "":
		return reject(deadletter.MissingAttribute, errors.New("no type"))
	case raw.typeAltered(typ):
		return reject(deadletter.UnknownType, fmt.Errorf("type %q is not %q", raw.typ, typ))
	}
	if err := checkHubName(hub); err != nil {
		return reject(deadletter.InvalidHub, err)
	}

	short, ok := strings.CutPrefix(typ, rules.TypePrefix)
	if !ok || short == "" {
		return reject(deadletter.UnknownType, fmt.Errorf("type %q does not start with %q", typ, rules.TypePrefix))
	}
	if !rules.Decoder.Known(short) {
		return reject(deadletter.UnknownType, fmt.Errorf("%w: %q", bundle.ErrUnknownType, short))
	}

	rawVersion := ev.version
	if rawVersion == nil {
		return reject(deadletter.MissingAttribute, errors.New("no "+ExtVersion))
	}
	versionText, err = types.ToString(rawVersion)
	if err != nil {
		return reject(deadletter.MalformedVersion, fmt.Errorf("%s: %w", ExtVersion, err))
	}
	version, err := bundle.ParseVersion(versionText)
	if err != nil {
		return reject(deadletter.MalformedVersion, fmt.Errorf("%s: %w", ExtVersion, err))
	}
	b := &bundle.Bundle{Hub: hub, Type: short, Version: version, Origin: origin, ReceivedAt: receivedAt}
	if rawDep := ev.dependency; rawDep != nil {
		depText, err := types.ToString(rawDep)
		if err == nil {
			b.Dependency, err = bundle.ParseVersion(depText)
		}
		if err != nil {
			return reject(deadletter.MalformedVersion, fmt.Errorf("%s: %w", ExtDependencyVersion, err))
		}
		b.HasDependency = true
	} else if dc, ok := rules.Decoder.(DependencyChecker); ok && dc.NeedsDependency(short) {
		return reject(deadletter.MissingAttribute, fmt.Errorf("no %s: a %s applies only on the version it names", ExtDependencyVersion, short))
	}

	data := ev.data
	if len(data) > rules.MaxBundleBytes {
		return reject(deadletter.TooLarge, fmt.Errorf("data is %d bytes, limit %d", len(data), rules.MaxBundleBytes))
	}
	// string(msg.Key) in a comparison does not allocate.
	if rules.VerifySource && !keyIsSource {
		return reject(deadletter.SourceMismatch, fmt.Errorf("source %q is not the message key %q", sent, msg.Key))
	}

	if err := checkSyntax(data); err != nil {
		return reject(deadletter.BadPayload, err)
	}

	b.Raw, b.Size, b.Message, b.Held = data, len(data), keepMessage(msg), heldBytes(msg, len(data))
	b.EventTime = ev.time
	if b.EventTime.IsZero() {
		// time is optional in CloudEvents; the broker's timestamp is the
		// next best measure of the bundle's age.
		b.EventTime = msg.Timestamp
	}
	return b, nil
}
