package dbsyncers

import (
	"bytes"
	"errors"
	"fmt"
	"reflect"
	"testing"

	"github.com/go-json-experiment/json/jsontext"
)

// Issue 13 asks whether github.com/go-json-experiment/json/jsontext (what
// becomes encoding/json/jsontext) could replace pkg/jsonscan in the
// decoders. decodeComplianceJSONText is the compliance decoder written on
// it, with the same checks and the same result, for
// BenchmarkComplianceDecode to compare the two on the same input.
func decodeComplianceJSONText(data []byte) (*CompliancePayload, error) {
	// Duplicate names are allowed (the last wins), as encoding/json and
	// jsonscan do; jsontext rejects them by default.
	d := jsontext.NewDecoder(bytes.NewBuffer(data), jsontext.AllowDuplicateNames(true))
	policies := []PolicyCompliance{}
	if err := want(d, '{'); err != nil {
		return nil, err
	}
	for d.PeekKind() == '"' {
		name, err := d.ReadToken()
		if err != nil {
			return nil, err
		}
		if name.String() != "objects" {
			if err := d.SkipValue(); err != nil {
				return nil, err
			}
			continue
		}
		policies = policies[:0]
		if err := want(d, '['); err != nil {
			return nil, err
		}
		for d.PeekKind() == '{' {
			p, err := readPolicyCompliance(d)
			if err != nil {
				return nil, err
			}
			policies = append(policies, p)
		}
		if err := want(d, ']'); err != nil {
			return nil, err
		}
	}
	if err := want(d, '}'); err != nil {
		return nil, err
	}
	return &CompliancePayload{Policies: lastPerPolicy(policies, func(p PolicyCompliance) string { return p.PolicyID })}, nil
}

func readPolicyCompliance(d *jsontext.Decoder) (PolicyCompliance, error) {
	var (
		policyID              string
		nonCompliant, unknown []string
	)
	if err := want(d, '{'); err != nil {
		return PolicyCompliance{}, err
	}
	for d.PeekKind() == '"' {
		name, err := d.ReadToken()
		if err != nil {
			return PolicyCompliance{}, err
		}
		switch name.String() {
		case "policyId":
			policyID, err = readString(d)
		case "nonCompliantClusters":
			nonCompliant, err = readStrings(d)
		case "unknownComplianceClusters":
			unknown, err = readStrings(d)
		case "resourceVersion":
			_, err = readString(d)
		default:
			err = d.SkipValue()
		}
		if err != nil {
			return PolicyCompliance{}, fmt.Errorf("%s: %w", name.String(), err)
		}
	}
	if err := want(d, '}'); err != nil {
		return PolicyCompliance{}, err
	}
	if err := checkName("policyId", policyID); err != nil {
		return PolicyCompliance{}, err
	}
	if err := checkNames("nonCompliantClusters", nonCompliant); err != nil {
		return PolicyCompliance{}, err
	}
	if err := checkNames("unknownComplianceClusters", unknown); err != nil {
		return PolicyCompliance{}, err
	}
	nc := sortedSet(nonCompliant)
	return PolicyCompliance{PolicyID: policyID, NonCompliant: nc, Unknown: without(sortedSet(unknown), nc)}, nil
}

func want(d *jsontext.Decoder, k jsontext.Kind) error {
	t, err := d.ReadToken()
	if err != nil {
		return err
	}
	if t.Kind() != k {
		return fmt.Errorf("want %v, got %v", k, t.Kind())
	}
	return nil
}

func readString(d *jsontext.Decoder) (string, error) {
	t, err := d.ReadToken()
	if err != nil {
		return "", err
	}
	switch t.Kind() {
	case '"':
		return t.String(), nil
	case 'n':
		return "", nil
	}
	return "", errors.New("not a string")
}

func readStrings(d *jsontext.Decoder) ([]string, error) {
	t, err := d.ReadToken()
	if err != nil {
		return nil, err
	}
	if t.Kind() == 'n' {
		return nil, nil
	}
	if t.Kind() != '[' {
		return nil, errors.New("not a list")
	}
	var out []string
	for d.PeekKind() != ']' {
		s, err := readString(d)
		if err != nil {
			return nil, err
		}
		out = append(out, s)
	}
	_, err = d.ReadToken()
	return out, err
}

// benchComplianceData is a report of policies policies, each non-compliant
// on a tenth of clusters clusters and unknown on another tenth.
func benchComplianceData(policies, clusters int) []byte {
	objs := make([]any, policies)
	for p := range objs {
		var nc, unk []string
		for c := range clusters {
			switch (c + p) % 10 {
			case 0:
				nc = append(nc, fmt.Sprintf("cluster-%05d", c))
			case 1:
				unk = append(unk, fmt.Sprintf("cluster-%05d", c))
			}
		}
		objs[p] = policyCompliance(fmt.Sprintf("policy-%03d", p), nc, unk)
	}
	return objectsData(objs...)
}

// TestJSONTextDecoderAgrees: the comparison is fair only if both decoders
// build the same payload.
func TestJSONTextDecoderAgrees(t *testing.T) {
	data := benchComplianceData(20, 300)
	a, err := decodeCompliance(data)
	if err != nil {
		t.Fatal(err)
	}
	b, err := decodeComplianceJSONText(data)
	if err != nil {
		t.Fatal(err)
	}
	if !reflect.DeepEqual(a, b) {
		t.Fatalf("jsontext decoded %+v, jsonscan %+v", b, a)
	}
}

// BenchmarkComplianceDecode compares the compliance decoder on jsonscan
// with the same decoder on jsontext, on a hub of 3,000 clusters and 50
// policies (a 1,000-hub catch-up's reports are about this size).
func BenchmarkComplianceDecode(b *testing.B) {
	data := benchComplianceData(50, 3000)
	b.Run("jsonscan", func(b *testing.B) {
		b.SetBytes(int64(len(data)))
		for b.Loop() {
			if _, err := decodeCompliance(data); err != nil {
				b.Fatal(err)
			}
		}
	})
	b.Run("jsontext", func(b *testing.B) {
		b.SetBytes(int64(len(data)))
		for b.Loop() {
			if _, err := decodeComplianceJSONText(data); err != nil {
				b.Fatal(err)
			}
		}
	})
}
