package main

import (
	"bytes"
	"context"
	"errors"
	"fmt"
	"io"
	"os"
	"path/filepath"
	"reflect"
	"slices"
	"strings"
	"testing"
	"time"

	ch "github.com/ClickHouse/clickhouse-go/v2"
	"github.com/ClickHouse/clickhouse-go/v2/lib/driver"

	"github.com/gpuledger/gpuledger/attribution"
	"github.com/gpuledger/gpuledger/ledger"
	"github.com/gpuledger/gpuledger/ledger/clickhouse"
	"github.com/gpuledger/gpuledger/ledger/clickhouse/chtest"
	"github.com/gpuledger/gpuledger/nodelabel"
	"github.com/gpuledger/gpuledger/quota"
)

// The flags alone: refused before any server is reached.
func TestLedgerBackupFlags(t *testing.T) {
	ctx := context.Background()
	dir := t.TempDir()
	for _, c := range []struct {
		args []string
		want string
	}{
		{[]string{"backup", "--ledger", "clickhouse://h:9000/db"}, "needs --out DIR"},
		{[]string{"backup", "--ledger", "clickhouse://h:9000/db", "--out", "-"}, "cannot go to standard output"},
		{[]string{"backup", "--out", filepath.Join(dir, "b")}, "needs --ledger"},
		{[]string{"backup", "--ledger", filepath.Join(dir, "l.db"), "--out", filepath.Join(dir, "b")}, "not a ClickHouse ledger"},
		{[]string{"restore", "--ledger", "clickhouse://h:9000/db"}, "needs --from DIR"},
		{[]string{"restore", "--ledger", "clickhouse://h:9000/db", "--from", "-"}, "not standard input"},
		{[]string{"restore", "--ledger", "clickhouse://h:9000/db", "--from", filepath.Join(dir, "none")}, "no such file"},
		{[]string{"restore", "--ledger", "clickhouse://h:9000/db", "--from", filepath.Join("..", "..", "go.mod")}, "not a directory"},
	} {
		err := runLedger(ctx, c.args, io.Discard)
		if err == nil || !strings.Contains(err.Error(), c.want) {
			t.Errorf("ledger %s: %v, want an error containing %q", strings.Join(c.args, " "), err, c.want)
		}
	}
}

// A month of the demo fleet's rows in a real ClickHouse, with replayed
// (unmerged) duplicates, findings, quota changes, node labels and a price
// book: backed up, the database dropped, restored; every report of both
// months is byte for byte what it was, and so are the quota changes, node
// labels and the stored row counts. A restore into the live database is
// refused without --force, and a damaged backup is refused before
// anything is written.
func TestLedgerBackupRestoreRoundTrip(t *testing.T) {
	db, prices := serveFixture(t)
	h := chtest.Setup()
	t.Cleanup(h.Close)
	h.Require(t)
	ctx := context.Background()
	dsn := h.DSN(t)
	if err := runLedger(ctx, []string{"migrate", "--ledger", dsn, "--prices", prices}, io.Discard); err != nil {
		t.Fatal(err)
	}
	copyLedger(t, db, dsn)
	quotaPrices := filepath.Join(t.TempDir(), "quota.yaml")
	if err := os.WriteFile(quotaPrices, []byte("currency: USD\npolicy: quota\ndefaultRate: 2.00\nquota: {source: kueue, rate: 1.50, aboveRate: 3.00}\n"), 0o600); err != nil {
		t.Fatal(err)
	}
	st, err := ledger.Open(ctx, dsn, storeOpeners)
	if err != nil {
		t.Fatal(err)
	}
	// A replayed batch: the same rows again under a newer version, which
	// FINAL collapses and a restore must carry as it is.
	var replay []attribution.Row
	if err := st.Rows(ctx, time.Date(2026, 11, 1, 0, 0, 0, 0, time.UTC), time.Date(2026, 11, 1, 2, 0, 0, 0, time.UTC), func(r attribution.Row) error {
		replay = append(replay, r)
		return nil
	}); err != nil {
		t.Fatal(err)
	}
	if len(replay) == 0 {
		t.Fatal("the fixture has no rows in the first hours of November")
	}
	if err := st.Append(ctx, replay, nil); err != nil {
		t.Fatal(err)
	}
	// Teams' quota: one raised, one deleted; a node's region relabelled.
	at := func(d, hour int) time.Time { return time.Date(2026, 10, d, hour, 0, 0, 0, time.UTC) }
	ml := quota.Entry{Key: quota.Key{Source: quota.SourceKueue, Object: "cq-ml", Resource: "A100-SXM4-80GB"}, Team: "ml", Milli: 4000, LimitMilli: 6000}
	vision := quota.Entry{Key: quota.Key{Source: quota.SourceResourceQuota, Object: "vision", Resource: "mig-1g.10gb"}, Team: "vision", Milli: 7000}
	ml2 := ml
	ml2.Milli = 2000
	if err := st.(quota.Store).AppendQuota(ctx, []quota.Change{{At: at(1, 0), Entry: ml}, {At: at(1, 0), Entry: vision}}); err != nil {
		t.Fatal(err)
	}
	if err := st.(quota.Store).AppendQuota(ctx, []quota.Change{{At: at(31, 6), Entry: ml2}, {At: at(31, 12), Entry: vision, Deleted: true}}); err != nil {
		t.Fatal(err)
	}
	if err := st.(nodelabel.Store).AppendNodeLabels(ctx, []nodelabel.Change{
		{Node: "node-a", Key: "topology.kubernetes.io/region", Value: "eu-west-1", At: at(1, 0)},
		{Node: "node-b", Key: "topology.kubernetes.io/region", Value: "us-east-1", At: at(1, 0)},
		{Node: "node-a", Key: "topology.kubernetes.io/region", Value: "eu-north-1", At: at(31, 9)},
	}); err != nil {
		t.Fatal(err)
	}
	// A closed month (August: none of the reports below), its stored
	// files to come back byte for byte.
	aug := ledger.Closing{Period: "2026-08", Action: ledger.ActionClose, At: time.Date(2026, 9, 3, 0, 0, 0, 0, time.UTC),
		PriceBook: []byte("currency: USD\n"), Files: map[string][]byte{}}
	aug.PriceBookSHA256 = ledger.PriceBookDigest(aug.PriceBook)
	for _, name := range ledger.ClosedFiles {
		aug.Files[name] = []byte("a,b\n\"quoted\ttab\"\n\x00 " + name)
	}
	aug.Digest = ledger.FilesDigest(aug.Files)
	if err := st.(ledger.ClosingStore).AppendClosing(ctx, aug); err != nil {
		t.Fatal(err)
	}
	st.Close()

	before := ledgerSnapshot(t, true, dsn, prices, quotaPrices)
	if before.stored["ledger_rows"] <= before.final["ledger_rows"] {
		t.Fatalf("the replay left no unmerged duplicate: %d stored rows, %d after FINAL", before.stored["ledger_rows"], before.final["ledger_rows"])
	}

	backup := filepath.Join(t.TempDir(), "ledger-backup")
	var out bytes.Buffer
	if err := runLedger(ctx, []string{"backup", "--ledger", dsn, "--out", backup}, &out); err != nil {
		t.Fatal(err)
	}
	t.Log(strings.TrimSpace(out.String()))
	if !strings.Contains(out.String(), "schema version 10, 8 tables") {
		t.Errorf("backup printed %q", out.String())
	}
	if err := runLedger(ctx, []string{"backup", "--ledger", dsn, "--out", backup}, io.Discard); err == nil || !strings.Contains(err.Error(), "it exists") {
		t.Errorf("a backup over an existing directory: %v", err)
	}
	if err := runLedger(ctx, []string{"restore", "--from", backup, "--check"}, &out); err != nil {
		t.Errorf("restore --check: %v", err)
	}

	// Into the live database: refused, and nothing changed.
	err = runLedger(ctx, []string{"restore", "--ledger", dsn, "--from", backup}, io.Discard)
	if !errors.Is(err, clickhouse.ErrNotEmpty) || !strings.Contains(err.Error(), "--force") || !strings.Contains(err.Error(), "ledger_rows:") {
		t.Errorf("restore into a database holding the ledger: %v", err)
	}
	before.equal(t, "after a refused restore", ledgerSnapshot(t, false, dsn, prices, quotaPrices))

	// A damaged copy is refused before the (new) database is even created.
	damaged := filepath.Join(t.TempDir(), "damaged")
	copyDir(t, backup, damaged)
	rowsFile := filepath.Join(damaged, "ledger_rows.tsv.gz")
	data, err := os.ReadFile(rowsFile)
	if err != nil {
		t.Fatal(err)
	}
	data[len(data)/2] ^= 0x20
	if err := os.WriteFile(rowsFile, data, 0o644); err != nil {
		t.Fatal(err)
	}
	fresh := h.DSN(t)
	err = runLedger(ctx, []string{"restore", "--ledger", fresh, "--from", damaged}, io.Discard)
	if err == nil || !strings.Contains(err.Error(), "ledger_rows.tsv.gz") || !strings.Contains(err.Error(), "truncated or altered") {
		t.Errorf("restore of an altered file: %v", err)
	}
	if n := databaseTables(t, fresh); n != 0 {
		t.Errorf("a refused restore created %d tables", n)
	}
	if err := os.WriteFile(rowsFile, data[:len(data)/3], 0o644); err != nil {
		t.Fatal(err)
	}
	if err := runLedger(ctx, []string{"restore", "--ledger", fresh, "--from", damaged}, io.Discard); err == nil || !strings.Contains(err.Error(), "truncated or altered") {
		t.Errorf("restore of a truncated file: %v", err)
	}

	// The volume is lost: the database dropped, then restored.
	dropDatabase(t, dsn)
	if _, err := ledger.Open(ctx, dsn, storeOpeners); err == nil {
		t.Fatal("the ledger opens after its database was dropped")
	}
	out.Reset()
	if err := runLedger(ctx, []string{"restore", "--ledger", dsn, "--from", backup}, &out); err != nil {
		t.Fatal(err)
	}
	if !strings.Contains(out.String(), "rows of 8 tables restored") {
		t.Errorf("restore printed %q", out.String())
	}
	before.equal(t, "after the restore", ledgerSnapshot(t, true, dsn, prices, quotaPrices))

	// --force over the restored ledger: emptied first, so nothing doubles
	// (the price book is a plain MergeTree: a second copy would stay).
	if err := runLedger(ctx, []string{"restore", "--ledger", dsn, "--from", backup, "--force"}, io.Discard); err != nil {
		t.Fatal(err)
	}
	before.equal(t, "after restore --force", ledgerSnapshot(t, false, dsn, prices, quotaPrices))
}

// snapshot is everything a restore must give back.
type snapshot struct {
	reports       map[string][]byte
	closings      []ledger.Closing
	quota         []quota.Change
	labels        map[string]map[string]string
	stored, final map[string]uint64
}

func ledgerSnapshot(t *testing.T, full bool, dsn string, books ...string) snapshot {
	t.Helper()
	ctx := context.Background()
	s := snapshot{reports: map[string][]byte{}, labels: map[string]map[string]string{}, stored: map[string]uint64{}, final: map[string]uint64{}}
	// Every format of November under the shipped book, October's finance
	// CSV, and under the quota book October's (the month of the quota
	// changes). Each report takes seconds, tens on a loaded machine: a
	// quick snapshot (full false) has one.
	for _, r := range []struct{ book, month, format string }{
		{books[0], "2026-11", "csv"}, {books[0], "2026-11", "json"}, {books[0], "2026-11", "html"}, {books[0], "2026-11", "focus"},
		{books[0], "2026-10", "csv"}, {books[1], "2026-10", "csv"},
	} {
		s.reports[fmt.Sprintf("%s %s %s", filepath.Base(r.book), r.month, r.format)] = cliReport(t, dsn, r.book, r.month, r.format)
		if !full {
			break
		}
	}
	st, err := ledger.Open(ctx, dsn, storeOpeners)
	if err != nil {
		t.Fatal(err)
	}
	defer st.Close()
	if err := st.(quota.Store).QuotaChanges(ctx, time.Date(2026, 9, 1, 0, 0, 0, 0, time.UTC), time.Date(2026, 12, 1, 0, 0, 0, 0, time.UTC), func(c quota.Change) error {
		s.quota = append(s.quota, c)
		return nil
	}); err != nil {
		t.Fatal(err)
	}
	for _, at := range []time.Time{time.Date(2026, 10, 15, 0, 0, 0, 0, time.UTC), time.Date(2026, 11, 1, 0, 0, 0, 0, time.UTC)} {
		m, err := st.(nodelabel.Store).NodeLabels(ctx, "topology.kubernetes.io/region", at)
		if err != nil {
			t.Fatal(err)
		}
		s.labels[at.Format(time.DateOnly)] = m
	}
	if s.closings, err = st.(ledger.ClosingStore).ClosingHistory(ctx, "", true); err != nil {
		t.Fatal(err)
	}
	conn, name := rawConn(t, dsn)
	for _, table := range []string{"ledger_rows", "ledger_findings", "gpuledger_prices", "quota_changes", "node_labels", "month_closings", "price_books", "cluster_identities"} {
		var n, f uint64
		if err := conn.QueryRow(ctx, "SELECT count() FROM "+name+"."+table).Scan(&n); err != nil {
			t.Fatal(err)
		}
		final := " FINAL"
		if table == "gpuledger_prices" || table == "price_books" || table == "cluster_identities" { // plain MergeTree tables
			final = ""
		}
		if err := conn.QueryRow(ctx, "SELECT count() FROM "+name+"."+table+final).Scan(&f); err != nil {
			t.Fatal(err)
		}
		s.stored[table], s.final[table] = n, f
	}
	return s
}

func (s snapshot) equal(t *testing.T, when string, got snapshot) {
	t.Helper()
	if len(s.quota) != 4 || !slices.Equal(got.quota, s.quota) {
		t.Errorf("%s: quota changes %+v, want the 4 of %+v", when, got.quota, s.quota)
	}
	for day, want := range s.labels {
		if fmt.Sprint(got.labels[day]) != fmt.Sprint(want) || len(want) != 2 {
			t.Errorf("%s: node labels at %s %v, want %v", when, day, got.labels[day], want)
		}
	}
	for name, report := range got.reports {
		if want := s.reports[name]; !bytes.Equal(report, want) || len(want) == 0 {
			t.Errorf("%s: report %s differs (%d bytes, was %d)", when, name, len(report), len(want))
		}
	}
	if len(s.closings) != 1 || !reflect.DeepEqual(got.closings, s.closings) {
		t.Errorf("%s: month closings %+v, want the 1 of %+v", when, got.closings, s.closings)
	}
	if fmt.Sprint(got.stored) != fmt.Sprint(s.stored) || fmt.Sprint(got.final) != fmt.Sprint(s.final) {
		t.Errorf("%s: stored rows %v (FINAL %v), were %v (FINAL %v)", when, got.stored, got.final, s.stored, s.final)
	}
}

// rawConn is a plain driver connection to dsn's server, for what the
// ledger has no call for (counting stored rows, dropping the database).
func rawConn(t *testing.T, dsn string) (driver.Conn, string) {
	t.Helper()
	d, err := ledger.ParseDSN(dsn)
	if err != nil {
		t.Fatal(err)
	}
	user := d.User
	if user == "" {
		user = "default"
	}
	conn, err := ch.Open(&ch.Options{Addr: []string{fmt.Sprintf("%s:%d", d.Host, d.Port)}, Auth: ch.Auth{Username: user, Password: d.Password}})
	if err != nil {
		t.Fatal(err)
	}
	t.Cleanup(func() { conn.Close() })
	return conn, d.Database
}

func dropDatabase(t *testing.T, dsn string) {
	t.Helper()
	conn, name := rawConn(t, dsn)
	if err := conn.Exec(context.Background(), "DROP DATABASE "+name); err != nil {
		t.Fatal(err)
	}
}

func databaseTables(t *testing.T, dsn string) uint64 {
	t.Helper()
	conn, name := rawConn(t, dsn)
	var n uint64
	if err := conn.QueryRow(context.Background(), "SELECT count() FROM system.tables WHERE database = '"+name+"'").Scan(&n); err != nil {
		t.Fatal(err)
	}
	return n
}

func copyDir(t *testing.T, from, to string) {
	t.Helper()
	if err := os.MkdirAll(to, 0o755); err != nil {
		t.Fatal(err)
	}
	entries, err := os.ReadDir(from)
	if err != nil {
		t.Fatal(err)
	}
	for _, e := range entries {
		data, err := os.ReadFile(filepath.Join(from, e.Name()))
		if err != nil {
			t.Fatal(err)
		}
		if err := os.WriteFile(filepath.Join(to, e.Name()), data, 0o644); err != nil {
			t.Fatal(err)
		}
	}
}
