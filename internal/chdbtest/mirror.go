package chdbtest

import (
	"context"
	"fmt"
	"io"
	"net/http"
	"net/url"
	"strings"
	"time"
)

// Server is a ClickHouse server's HTTP interface (the 18.16 server the
// other tests start), read to bring the same rows into the engine.
type Server struct {
	Addr, User, Password string
}

// serverTimeout bounds one statement on the server; maxServerOutput one
// answer (a table part of the tests' ledgers is a few MB).
const (
	serverTimeout   = 2 * time.Minute
	maxServerOutput = 512 << 20
)

// Query runs sql on the server and returns its output (the statement
// names its FORMAT; TabSeparated otherwise).
func (s Server) Query(ctx context.Context, sql string) (string, error) {
	ctx, cancel := context.WithTimeout(ctx, serverTimeout)
	defer cancel()
	q := url.Values{"user": {s.User}, "password": {s.Password}}
	req, err := http.NewRequestWithContext(ctx, http.MethodPost, "http://"+s.Addr+"/?"+q.Encode(), strings.NewReader(sql))
	if err != nil {
		return "", fmt.Errorf("cannot query %s: %w", s.Addr, err)
	}
	resp, err := http.DefaultClient.Do(req)
	if err != nil {
		return "", fmt.Errorf("cannot query %s: %w", s.Addr, err)
	}
	defer resp.Body.Close()
	body, err := io.ReadAll(io.LimitReader(resp.Body, maxServerOutput+1))
	if err != nil {
		return "", fmt.Errorf("cannot read answer of %s: %w", s.Addr, err)
	}
	if len(body) > maxServerOutput {
		return "", fmt.Errorf("answer of %s over %d bytes for %s", s.Addr, maxServerOutput, head(sql))
	}
	if resp.StatusCode != http.StatusOK {
		return "", fmt.Errorf("server %s: HTTP %d: %s", s.Addr, resp.StatusCode, strings.TrimSpace(string(body)))
	}
	return string(body), nil
}

// Tables are the MergeTree tables of database db on the server, by name.
func (s Server) Tables(ctx context.Context, db string) ([]string, error) {
	out, err := s.Query(ctx, "SELECT name FROM system.tables WHERE database = "+quote(db)+" AND engine LIKE '%MergeTree' ORDER BY name")
	if err != nil {
		return nil, fmt.Errorf("cannot list tables of %s: %w", db, err)
	}
	return strings.Fields(out), nil
}

// Mirror brings database db of the server into the engine: with create,
// the database and each table as the server's SHOW CREATE TABLE gives it
// (without, they must exist already, e.g. from the statements the
// migrations sent), then every table's rows. Merges are stopped on the
// engine's tables, and rows go part by part, so rows that the server
// holds in separate unmerged parts (replaced rows FINAL collapses) stay
// apart in the engine too. Tables already in the engine are emptied first.
func (e *Engine) Mirror(ctx context.Context, src Server, db string, create bool) error {
	tables, err := src.Tables(ctx, db)
	if err != nil {
		return err
	}
	if create {
		if err := e.Exec(ctx, "CREATE DATABASE IF NOT EXISTS "+db); err != nil {
			return fmt.Errorf("cannot create database %s in chDB: %w", db, err)
		}
	}
	for _, t := range tables {
		if err := e.MirrorTable(ctx, src, db, t, create); err != nil {
			return err
		}
	}
	return nil
}

// MirrorTable brings one table's rows (see Mirror).
func (e *Engine) MirrorTable(ctx context.Context, src Server, db, table string, create bool) error {
	name := db + "." + table
	if create {
		ddl, err := src.Query(ctx, "SHOW CREATE TABLE "+name+" FORMAT TabSeparatedRaw")
		if err != nil {
			return fmt.Errorf("cannot read the definition of %s: %w", name, err)
		}
		if err := e.Exec(ctx, strings.Replace(ddl, "CREATE TABLE", "CREATE TABLE IF NOT EXISTS", 1)); err != nil {
			return fmt.Errorf("cannot create %s in chDB: %w", name, err)
		}
	}
	for _, q := range []string{"SYSTEM STOP MERGES " + name, "TRUNCATE TABLE " + name} {
		if err := e.Exec(ctx, q); err != nil {
			return fmt.Errorf("cannot empty %s in chDB: %w", name, err)
		}
	}
	parts, err := src.Query(ctx, "SELECT name FROM system.parts WHERE active AND database = "+quote(db)+" AND table = "+quote(table)+" ORDER BY name")
	if err != nil {
		return fmt.Errorf("cannot list parts of %s: %w", name, err)
	}
	for _, p := range strings.Fields(parts) {
		rows, err := src.Query(ctx, "SELECT * FROM "+name+" WHERE _part = "+quote(p)+" FORMAT TabSeparated")
		if err != nil {
			return fmt.Errorf("cannot read part %s of %s: %w", p, name, err)
		}
		if rows == "" {
			continue
		}
		if err := e.Exec(ctx, "INSERT INTO "+name+" FORMAT TabSeparated\n"+rows); err != nil {
			return fmt.Errorf("cannot copy part %s of %s into chDB: %w", p, name, err)
		}
	}
	return nil
}

// quote is s as an SQL string literal (names of databases, tables and
// parts: no quote or backslash in them, but escaped all the same).
func quote(s string) string {
	return "'" + strings.NewReplacer(`\`, `\\`, `'`, `\'`).Replace(s) + "'"
}
