package db

import (
	"fmt"
	"strings"
)

// CheckURL reports a database URL whose scheme is not PostgreSQL's, such
// as a typo ("postgress://…"), which pgconn would otherwise try to read as
// keyword/value pairs and refuse with a message that hides the mistake.
// A keyword/value string ("host=… dbname=…") has no scheme and passes;
// everything else about the URL is left to pgconn. The error shows the URL
// with its password redacted.
func CheckURL(s string) error {
	scheme, _, ok := strings.Cut(s, "://")
	if !ok || strings.ContainsAny(scheme, " =") {
		return nil // keyword/value, which may hold "://" in a value
	}
	switch strings.ToLower(scheme) {
	case "postgres", "postgresql":
		return nil
	}
	return fmt.Errorf("db: database URL %s has scheme %q: want postgres:// or postgresql:// "+
		"(postgres://user@host:5432/dbname?sslmode=disable) or keyword/value pairs (host=… dbname=…)",
		RedactURL(s), scheme)
}
