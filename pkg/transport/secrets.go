package transport

import (
	"slices"
	"strings"

	"github.com/stbridge/stb/pkg/redact"
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

// shownProperty reports whether the value of the librdkafka property k
// may be printed: only for properties known to hold no credential. A name
// the bridge does not know may be a secret one misspelt, or a secret
// pasted where a key was meant, so its value is hidden too.
func shownProperty(k string) bool {
	k = strings.ToLower(strings.TrimSpace(k))
	if SecretProperty(k) {
		return false
	}
	switch k {
	case "security.protocol", "sasl.mechanism", "sasl.mechanisms", "sasl.username",
		"sasl.kerberos.service.name", "sasl.kerberos.principal",
		"ssl.ca.location", "ssl.certificate.location", "ssl.endpoint.identification.algorithm",
		"enable.ssl.certificate.verification", "ssl.cipher.suites", "ssl.curves.list", "ssl.sigalgs.list",
		"client.id", "client.rack", "debug", "log_level", "broker.address.family",
		"auto.offset.reset", "isolation.level", "partition.assignment.strategy", "group.instance.id",
		"group.protocol", "compression.codec", "compression.type", "api.version.request",
		"broker.version.fallback", "enable.auto.commit", "enable.auto.offset.store",
		"allow.auto.create.topics", "check.crcs", "enable.partition.eof",
		"socket.keepalive.enable", "socket.nagle.disable", "topic.metadata.propagation.max.ms":
		return true
	}
	for _, suffix := range []string{".ms", ".bytes", ".kbytes", ".messages", ".max", ".count"} {
		if strings.HasSuffix(k, suffix) {
			return true
		}
	}
	return false
}

// RedactedProperties returns props as "key=value,…", sorted by key, with
// the value of every property not known to be harmless (shownProperty),
// every SecretProperty among them, replaced by ***.
func RedactedProperties(props map[string]string) string {
	keys := make([]string, 0, len(props))
	for k := range props {
		keys = append(keys, k)
	}
	slices.Sort(keys)
	parts := make([]string, len(keys))
	for i, k := range keys {
		v := props[k]
		if !shownProperty(k) {
			v = redact.Mask
		}
		parts[i] = k + "=" + v
	}
	return strings.Join(parts, ",")
}

// RedactError returns err with every secret property value of props in
// its text replaced by ***, keeping what it wraps for errors.Is. The Kafka
// client's errors quote configuration values.
func RedactError(err error, props map[string]string) error {
	var oldnew []string
	for k, v := range props {
		if SecretProperty(k) {
			oldnew = append(oldnew, v, redact.Mask)
		}
	}
	return redact.Error(err, oldnew...)
}
