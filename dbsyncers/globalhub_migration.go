package dbsyncers

import (
	"cmp"
	"encoding/json"
	"fmt"

	"github.com/stbridge/stb/pkg/bundle"
	"github.com/stbridge/stb/pkg/bundle/globalhub"
)

// MigrationPayload is the decoded data of a managedclustermigration event
// (pkg/bundle/migration's MigrationStatusBundle): what a hub reports of
// one stage of a managed cluster migration. The migration id and stage
// come as the extensions migrationid and migrationstage, which the
// transport keeps in the bundle's Attrs (globalhub.MigrationAttrs), or,
// from older agents, as the data's members migrationId and stage.
type MigrationPayload struct {
	MigrationID string `json:"migrationId"`
	Stage       string `json:"stage"`
	ErrMessage  string `json:"errMessage"`
	Resync      bool   `json:"resync"`
	Object      json.RawMessage
}

// GlobalHubMigration returns the syncer of managedclustermigration events
// into stb.cluster_migrations: a stream (upstream's manager handles
// them one by one, DeltaStateMode), the latest report per migration and
// stage; a report with resync set clears the hub's (upstream:
// ResetMigrationStatus).
func GlobalHubMigration() Syncer {
	return Syncer{
		TypeInfo:     bundle.TypeInfo{Name: GHMigration, Kind: bundle.Stream},
		DecodeBundle: decodeMigration,
		Plan:         planMigration,
	}
}

// decodeMigration decodes b's data, its Attrs (a
// *globalhub.MigrationAttrs, or nil) taking the place of the data's
// migrationId and stage where they hold a value.
func decodeMigration(b *bundle.Bundle) (any, error) {
	data := b.Raw
	var p MigrationPayload
	if err := strictObject(data, &p); err != nil {
		return nil, badPayload(fmt.Errorf("%s: %w", GHMigration, err))
	}
	if a, ok := b.Attrs.(*globalhub.MigrationAttrs); ok && a != nil {
		p.MigrationID = cmp.Or(a.ID, p.MigrationID)
		p.Stage = cmp.Or(a.Stage, p.Stage)
	} else if b.Attrs != nil {
		return nil, badPayload(fmt.Errorf("%s: attributes %T, want the migration's", GHMigration, b.Attrs))
	}
	if !p.Resync && (p.MigrationID == "" || p.Stage == "") {
		return nil, badPayload(fmt.Errorf("%s: no migration id or stage (extensions %s, %s)", GHMigration, "migrationid", "migrationstage"))
	}
	for _, f := range []struct{ name, v string }{{"migrationId", p.MigrationID}, {"stage", p.Stage}, {"errMessage", p.ErrMessage}} {
		if err := checkText(f.name, f.v); err != nil {
			return nil, badPayload(fmt.Errorf("%s: %w", GHMigration, err))
		}
	}
	// The payload column keeps the rest of the data as the agent sent
	// it: the id and stage are columns.
	var members map[string]json.RawMessage
	if err := json.Unmarshal(data, &members); err != nil {
		return nil, badPayload(fmt.Errorf("%s: %w", GHMigration, err))
	}
	delete(members, "migrationId")
	delete(members, "stage")
	obj, err := json.Marshal(members)
	if err != nil {
		return nil, badPayload(fmt.Errorf("%s: %w", GHMigration, err))
	}
	p.Object = obj
	return &p, nil
}

const (
	upsertMigrationSQL = `
INSERT INTO stb.cluster_migrations AS t (hub, migration_id, stage, error_message, payload)
VALUES ($1, $2, $3, $4, $5::text::jsonb)
ON CONFLICT (hub, migration_id, stage) DO UPDATE SET
	error_message = excluded.error_message, payload = excluded.payload, updated_at = now()`

	resetMigrationsSQL = `DELETE FROM stb.cluster_migrations WHERE hub = $1`
)

func planMigration(bundles []*bundle.Bundle) (Write, error) {
	var stmts []Statement
	for _, b := range bundles {
		p, err := payloadOf[MigrationPayload](b)
		if err != nil {
			return Write{}, err
		}
		if p.Resync {
			stmts = append(stmts, Statement{What: "reset migrations", SQL: resetMigrationsSQL, Args: []any{b.Hub}})
			continue
		}
		stmts = append(stmts, Statement{What: "upsert migration stage", SQL: upsertMigrationSQL,
			Args: []any{b.Hub, p.MigrationID, p.Stage, p.ErrMessage, string(p.Object)}})
	}
	return Write{Statements: stmts}, nil
}
