package verify

import (
	"context"
	"fmt"
	"strings"

	"github.com/jackc/pgx/v5"

	"github.com/stbridge/stb/pkg/bundle"
	stbdb "github.com/stbridge/stb/pkg/db"
)

// versionsSQL reads every version row. numeric(20,0) is read as text, which
// carries every uint64 exactly.
const versionsSQL = `
SELECT hub, bundle_type, incarnation::text, generation::text
FROM stb.bundle_versions`

// versions compares stb.bundle_versions with the last version each hub
// sent per type. For a type whose version is only bounded
// (HubState.VersionsAtMost) a missing row or any version up to the bound
// matches. The global-hub agent's types (bundle.GlobalHubPrefix) are left out:
// the bridge maps the agent's versions onto runs of its own, so their
// rows say nothing the simulator can predict; their tables are the truth.
//
// A row of a type the hub did not send is not a difference when it is a
// tombstone (stb hub delete: the hub had sent the type before it was
// deleted) or older than the run (a version an earlier run left, below
// sim.Expected.FirstIncarnation).
func (v *verifier) versions(ctx context.Context, db Querier) error {
	rows, err := db.Query(ctx, versionsSQL)
	if err != nil {
		return err
	}
	found := make(map[string]map[string]bool, len(v.exp.Hubs))
	var hub, typ, inc, gen string
	_, err = pgx.ForEachRow(rows, []any{&hub, &typ, &inc, &gen}, func() error {
		st := v.expected(hub, "stb.bundle_versions")
		if st == nil || strings.HasPrefix(typ, bundle.GlobalHubPrefix) {
			return nil
		}
		got, err := bundle.ParseVersion(inc + "." + gen)
		if err != nil {
			return fmt.Errorf("hub %q, type %q: %w", hub, typ, err)
		}
		if found[hub] == nil {
			found[hub] = make(map[string]bool, len(st.Versions))
		}
		found[hub][typ] = true
		want, ok := st.Versions[typ]
		bound, bounded := st.VersionsAtMost[typ]
		switch {
		case ok || bounded:
		case got.Generation == stbdb.TombstoneGeneration:
			v.report.Tombstones++ // a delete's, of a type the hub did not send since
			return nil
		case v.earlier(got.Incarnation):
			v.report.Earlier++
			return nil
		}
		if !ok && bounded {
			if got.Newer(bound) {
				v.report.add(Category{NewerVersion, typ}, hub, "%s version %s, want at most %s (newer than the last sent)", typ, got, bound)
			}
			return nil
		}
		switch {
		case !ok:
			v.report.add(Category{UnexpectedVersion, typ}, hub, "%s version %s, but no %s bundle was sent", typ, got, typ)
		case got.Compare(want) < 0:
			v.report.add(Category{StaleVersion, typ}, hub, "%s version %s, want %s (stale)", typ, got, want)
		case got.Compare(want) > 0:
			v.report.add(Category{NewerVersion, typ}, hub, "%s version %s, want %s (newer than the last sent)", typ, got, want)
		}
		return nil
	})
	if err != nil {
		return err
	}
	for _, hub := range v.hubNames {
		st := v.exp.Hubs[hub]
		for _, typ := range sortedKeys(st.Versions) {
			if want := st.Versions[typ]; !found[hub][typ] {
				v.report.add(Category{MissingVersion, typ}, hub, "no %s version, want %s", typ, want)
			}
		}
	}
	return nil
}
