package bridge

import (
	"context"
	"errors"
	"strings"
	"testing"

	"go.uber.org/zap"

	"github.com/stbridge/stb/pkg/db"
	"github.com/stbridge/stb/pkg/db/dbtest"
)

// TestNewOnAnUnmigratedDatabaseSaysToMigrate: without --migrate, a bridge
// on a database nobody migrated fails in New with what to do, not with
// the first missing relation it happens to read.
func TestNewOnAnUnmigratedDatabaseSaysToMigrate(t *testing.T) {
	cfg := DefaultConfig()
	cfg.Migrate = false
	cfg.Reader.Brokers, cfg.DatabaseURL, cfg.HTTPAddr, cfg.AdminAddr = "127.0.0.1:1", dbtest.Empty(t), "", ""
	b, err := New(context.Background(), cfg, Deps{Logger: zap.NewNop()})
	if err == nil {
		b.Close()
		t.Fatal("a bridge started on an unmigrated database")
	}
	var nm *db.NotMigratedError
	if !errors.As(err, &nm) || !strings.Contains(err.Error(), "run `stb migrate`") {
		t.Fatalf("New: %v, want a NotMigratedError saying to run stb migrate", err)
	}
}
