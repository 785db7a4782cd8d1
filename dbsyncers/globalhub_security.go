package dbsyncers

import (
	"bytes"
	"encoding/json"
	"fmt"

	"github.com/stbridge/stb/pkg/bundle"
)

// AlertCountsPayload is the decoded data of a security.alertcounts event:
// the violation counts of one ACS Central (source, "<namespace>/<name>")
// by severity, and where to see them (agent/pkg/status/syncers/security/
// stackrox_syncer.go; the counts are omitempty, so a missing one is 0).
type AlertCountsPayload struct {
	Low       int32  `json:"low"`
	Medium    int32  `json:"medium"`
	High      int32  `json:"high"`
	Critical  int32  `json:"critical"`
	DetailURL string `json:"detail_url"`
	Source    string `json:"source"`
}

// GlobalHubAlertCounts returns the syncer of security.alertcounts into
// status.security_alert_counts, latest per (hub, source): complete, as
// upstream's manager registers it.
func GlobalHubAlertCounts() Syncer {
	return Syncer{
		TypeInfo: bundle.TypeInfo{Name: GHAlertCounts, Kind: bundle.Complete},
		Decode:   decodeAlertCounts,
		Plan:     planAlertCounts,
	}
}

func decodeAlertCounts(data []byte) (any, error) {
	var p AlertCountsPayload
	if err := strictObject(data, &p); err != nil {
		return nil, badPayload(fmt.Errorf("%s: %w", GHAlertCounts, err))
	}
	if err := checkText("source", p.Source); err != nil {
		return nil, badPayload(fmt.Errorf("%s: %w", GHAlertCounts, err))
	}
	if p.Low < 0 || p.Medium < 0 || p.High < 0 || p.Critical < 0 {
		return nil, badPayload(fmt.Errorf("%s: a negative count", GHAlertCounts))
	}
	return &p, nil
}

// strictObject decodes one JSON object (not null) into v with
// encoding/json, nothing after it.
func strictObject(data []byte, v any) error {
	d := json.NewDecoder(bytes.NewReader(data))
	t := bytes.TrimSpace(data)
	if len(t) == 0 || t[0] != '{' {
		return errNotObject
	}
	if err := d.Decode(v); err != nil {
		return err
	}
	if d.More() {
		return fmt.Errorf("data after the object")
	}
	return nil
}

const upsertAlertCountsSQL = `
INSERT INTO status.security_alert_counts AS t (hub, source, low, medium, high, critical, detail_url)
VALUES ($1, $2, $3, $4, $5, $6, $7)
ON CONFLICT (hub, source) DO UPDATE SET
	low = excluded.low, medium = excluded.medium, high = excluded.high, critical = excluded.critical,
	detail_url = excluded.detail_url, updated_at = now()
WHERE (t.low, t.medium, t.high, t.critical, t.detail_url)
	IS DISTINCT FROM (excluded.low, excluded.medium, excluded.high, excluded.critical, excluded.detail_url)`

func planAlertCounts(bundles []*bundle.Bundle) (Write, error) {
	b := bundles[len(bundles)-1]
	p, err := payloadOf[AlertCountsPayload](b)
	if err != nil {
		return Write{}, err
	}
	return Write{Statements: []Statement{{What: "upsert alert counts", SQL: upsertAlertCountsSQL,
		Args: []any{b.Hub, p.Source, p.Low, p.Medium, p.High, p.Critical, p.DetailURL}}}}, nil
}
