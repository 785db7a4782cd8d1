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
// security.alert_counts, latest per (hub, source): complete, as upstream's
// manager registers it (manager/pkg/status/handlers/security/
// security_alert_counts_handler.go, CompleteStateMode).
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
	for _, f := range []struct{ name, v string }{{"source", p.Source}, {"detail_url", p.DetailURL}} {
		if err := checkText(f.name, f.v); err != nil {
			return nil, badPayload(fmt.Errorf("%s: %w", GHAlertCounts, err))
		}
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

// upsertAlertCountsSQL is upstream's upsert of models.SecurityAlertCounts
// (manager/pkg/status/handlers/security/security_alert_counts_handler.go:
// OnConflict (hub_name, source) UpdateAll): every count, detail_url and
// updated_at are the latest report's; created_at stays.
const upsertAlertCountsSQL = `
INSERT INTO security.alert_counts AS t (hub_name, source, low, medium, high, critical, detail_url, created_at, updated_at)
VALUES ($1, $2, $3, $4, $5, $6, $7, ` + nowUTC + `, ` + nowUTC + `)
ON CONFLICT (hub_name, source) DO UPDATE SET
	low        = excluded.low,
	medium     = excluded.medium,
	high       = excluded.high,
	critical   = excluded.critical,
	detail_url = excluded.detail_url,
	updated_at = excluded.updated_at`

func planAlertCounts(bundles []*bundle.Bundle) (Write, error) {
	b := bundles[len(bundles)-1]
	p, err := payloadOf[AlertCountsPayload](b)
	if err != nil {
		return Write{}, err
	}
	return Write{Statements: []Statement{{What: "upsert alert counts", SQL: upsertAlertCountsSQL,
		Args: []any{b.Hub, p.Source, p.Low, p.Medium, p.High, p.Critical, p.DetailURL}}}}, nil
}
