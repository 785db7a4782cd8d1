package db

import (
	"context"
	"net/url"

	"github.com/jackc/pgx/v5"
)

// Recreate drops database name on the server of baseURL, if it exists,
// creates it empty and returns its URL. For the demo and the bench, which
// start from nothing every time.
func Recreate(ctx context.Context, baseURL, name string) (string, error) {
	u, err := url.Parse(baseURL)
	if err != nil {
		return "", RedactError(err, baseURL)
	}
	conn, err := pgx.Connect(ctx, baseURL)
	if err != nil {
		return "", RedactError(err, baseURL)
	}
	defer conn.Close(ctx)
	ident := pgx.Identifier{name}.Sanitize()
	if _, err := conn.Exec(ctx, "DROP DATABASE IF EXISTS "+ident+" WITH (FORCE)"); err != nil {
		return "", err
	}
	if _, err := conn.Exec(ctx, "CREATE DATABASE "+ident); err != nil {
		return "", err
	}
	u.Path = "/" + name
	return u.String(), nil
}
