package transport

import (
	"slices"
	"strings"
)

// SecretProperty reports whether the librdkafka property k can carry a
// credential, so that its value must never reach a log line, a page or an
// error: every sasl.* property but the mechanism, the user name and the
// Kerberos service and principal names (sasl.password,
// sasl.oauthbearer.config with its clientSecret, sasl.oauthbearer.client.*,
// sasl.kerberos.keytab, …), every ssl.key.* and ssl.keystore.* property,
// and anything named like a password, a secret, a token or a private key.
func SecretProperty(k string) bool {
	k = strings.ToLower(strings.TrimSpace(k))
	switch k {
	case "sasl.mechanism", "sasl.mechanisms", "sasl.username",
		"sasl.kerberos.service.name", "sasl.kerberos.principal":
		return false
	}
	for _, prefix := range []string{"sasl.", "ssl.key.", "ssl.keystore.", "ssl_key", "ssl.engine."} {
		if strings.HasPrefix(k, prefix) {
			return true
		}
	}
	for _, word := range []string{"password", "secret", "token", "credential", "private", ".pem", "jaas"} {
		if strings.Contains(k, word) {
			return true
		}
	}
	return false
}

// redacted stands for a secret value wherever it would show.
const redacted = "***"

// RedactedProperties returns props as "key=value,…", sorted by key, with
// the value of every SecretProperty replaced by ***.
func RedactedProperties(props map[string]string) string {
	keys := make([]string, 0, len(props))
	for k := range props {
		keys = append(keys, k)
	}
	slices.Sort(keys)
	parts := make([]string, len(keys))
	for i, k := range keys {
		v := props[k]
		if SecretProperty(k) {
			v = redacted
		}
		parts[i] = k + "=" + v
	}
	return strings.Join(parts, ",")
}

// RedactError returns err with every secret property value of props in
// its text replaced by ***, keeping what it wraps for errors.Is. The Kafka
// client's errors quote configuration values.
func RedactError(err error, props map[string]string) error {
	if err == nil {
		return nil
	}
	msg := err.Error()
	clean := msg
	for k, v := range props {
		if v != "" && SecretProperty(k) {
			clean = strings.ReplaceAll(clean, v, redacted)
		}
	}
	if clean == msg {
		return err
	}
	return &redactedError{msg: clean, err: err}
}

type redactedError struct {
	msg string
	err error
}

func (e *redactedError) Error() string { return e.msg }

// Unwrap lets errors.Is and errors.As see the cause; its own text is not
// shown by them.
func (e *redactedError) Unwrap() error { return e.err }
