package bridge

import (
	"testing"

	"github.com/stbridge/stb/dbsyncers"
)

// The reader rejects a message of a type that applies only on exactly the
// version it names when it names none; only deltas are such types.
func TestDecoderNeedsDependency(t *testing.T) {
	reg, err := dbsyncers.ForProfiles(true, true)
	if err != nil {
		t.Fatal(err)
	}
	d := registryDecoder{reg}
	for typ, want := range map[string]bool{
		"compliancedelta":                   true,
		"compliance":                        false, // waits for its clusterspolicies, but may name none
		"heartbeat":                         false,
		"clusterspolicies":                  false,
		dbsyncers.GHLocalCompleteCompliance: true,
		"nosuchtype":                        false,
	} {
		if got := d.NeedsDependency(typ); got != want {
			t.Errorf("NeedsDependency(%q) = %v, want %v", typ, got, want)
		}
	}
}
