package bridge

import (
	"context"
	"net/url"
	"testing"

	"github.com/stbridge/stb/pkg/db/dbtest"
)

// TestWaitForDatabaseLeavesAnswersToNew: a server that answers with an
// error waiting does not cure (here, a database that does not exist) is
// not waited for: New reports it at once, as before. With a timeout of 0
// (for ever) a retry would never return.
func TestWaitForDatabaseLeavesAnswersToNew(t *testing.T) {
	u, err := url.Parse(dbtest.BaseURL())
	if err != nil {
		t.Fatal(err)
	}
	u.Path = "/stb_no_such_database_here"
	if err := WaitForDatabase(context.Background(), u.String(), 0, "", nil); err != nil {
		t.Fatalf("WaitForDatabase: %v, want nil (New reports the missing database)", err)
	}
	if err := WaitForDatabase(context.Background(), dbtest.BaseURL(), 0, "", nil); err != nil {
		t.Fatalf("a reachable database: %v", err)
	}
}
