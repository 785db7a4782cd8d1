package transport

import (
	"errors"
	"strings"
	"testing"
)

// Every librdkafka property that can carry a credential is redacted; the
// ones an operator needs to read a configuration are not. The list is
// librdkafka's CONFIGURATION.md (sasl.*, ssl.key.*, ssl.keystore.*) and
// names that say what they hold.
func TestSecretProperty(t *testing.T) {
	secret := []string{
		"sasl.password", "SASL.PASSWORD", "sasl.oauthbearer.config", "sasl.oauthbearer.client.secret",
		"sasl.oauthbearer.client.id", "sasl.oauthbearer.extensions", "sasl.oauthbearer.token.endpoint.url",
		"sasl.kerberos.keytab", "sasl.kerberos.kinit.cmd", "sasl.aws.secret.access.key",
		"ssl.key.password", "ssl.key.pem", "ssl.key.location", "ssl.keystore.password", "ssl.keystore.location",
		"ssl_key", "ssl.engine.id", "ssl.certificate.pem.private", "some.api.token", "client.credentials",
		"plugin.secret", "sasl.jaas.config",
	}
	public := []string{
		"sasl.mechanism", "sasl.mechanisms", "sasl.username", "sasl.kerberos.service.name", "sasl.kerberos.principal",
		"security.protocol", "ssl.ca.location", "ssl.certificate.location", "bootstrap.servers",
		"fetch.max.bytes", "client.id", "ssl.endpoint.identification.algorithm",
	}
	for _, k := range secret {
		if !SecretProperty(k) {
			t.Errorf("%s can carry a credential, but is not redacted", k)
		}
		const value = "hunter2-value"
		if s := RedactedProperties(map[string]string{k: value, "security.protocol": "SASL_SSL"}); strings.Contains(s, value) || !strings.Contains(s, "SASL_SSL") {
			t.Errorf("%s: %s", k, s)
		}
	}
	for _, k := range public {
		if SecretProperty(k) {
			t.Errorf("%s is redacted, but an operator needs to read it", k)
		}
	}
}

// The Kafka client quotes configuration values in its errors ("Invalid
// value \"…\" for configuration property …"): whatever error the bridge
// reports about its configuration, a credential in it shows as ***, and
// the cause stays reachable.
func TestRedactError(t *testing.T) {
	props := map[string]string{"sasl.oauthbearer.config": "clientId=stb clientSecret=topsecret-value",
		"sasl.password": "hunter2", "security.protocol": "SASL_SSL"}
	cause := errors.New(`Invalid value "clientId=stb clientSecret=topsecret-value" for configuration property "sasl.oauthbearer.config"; sasl.password=hunter2; security.protocol=SASL_SSL`)
	red := RedactError(cause, props)
	if strings.Contains(red.Error(), "topsecret") || strings.Contains(red.Error(), "hunter2") {
		t.Fatalf("secret in %q", red)
	}
	if !strings.Contains(red.Error(), "sasl.oauthbearer.config") || !strings.Contains(red.Error(), "SASL_SSL") {
		t.Fatalf("the rest of the message is gone: %q", red)
	}
	if !errors.Is(red, cause) {
		t.Fatal("the redacted error does not wrap its cause")
	}
	if plain := errors.New("broker down"); RedactError(plain, props) != plain {
		t.Fatal("an error without a secret is changed")
	}
}
