package clickhouse

import (
	"bytes"
	"compress/gzip"
	"crypto/sha256"
	"encoding/hex"
	"encoding/json"
	"errors"
	"math"
	"os"
	"path/filepath"
	"regexp"
	"slices"
	"strings"
	"testing"
	"time"
)

// Every table the migrations create is either backed up or rebuilt on
// restore; a new table lands in the backup by itself.
func TestBackupCoversEveryTable(t *testing.T) {
	ddl, err := MigrationDDL("db", "")
	if err != nil {
		t.Fatal(err)
	}
	re := regexp.MustCompile(`CREATE TABLE IF NOT EXISTS db\.(\w+)`)
	var created []string
	for _, stmt := range ddl {
		// Migration 8's copies take their tables' names (rekeyDDL).
		if m := re.FindStringSubmatch(stmt); m != nil && m[1] != "schema_migrations" && !strings.HasSuffix(m[1], "_v8") {
			created = append(created, m[1])
		}
	}
	got := append(backupTables(SchemaVersion), derivedTables...)
	slices.Sort(got)
	slices.Sort(created)
	if !slices.Equal(got, created) {
		t.Errorf("backed up + rebuilt %v, the migrations create %v", got, created)
	}
	want := []string{"ledger_rows", "ledger_findings", "gpuledger_prices", "quota_changes", "node_labels", "month_closings", "price_books", "cluster_identities"}
	if b := backupTables(SchemaVersion); !slices.Equal(b, want) {
		t.Errorf("backupTables(%d) = %v, want %v", SchemaVersion, b, want)
	}
	// Schema version 3 had neither quota changes (4) nor node labels (5).
	if b := backupTables(3); !slices.Equal(b, want[:3]) {
		t.Errorf("backupTables(3) = %v, want %v", b, want[:3])
	}
}

// Values come back bit for bit, strings byte for byte, and the text is
// ClickHouse's TabSeparated escaping.
func TestTSVValuesRoundTrip(t *testing.T) {
	if got := string(appendEscaped(nil, "a\tb\\c\nd\re\x00f")); got != `a\tb\\c\nd\re\0f` {
		t.Errorf("escaped %q", got)
	}
	for _, s := range []string{"", "plain", "tab\there", "\\", "\\t", "line\nbreak", "\xff\xfe not utf-8", "日本", "\x00"} {
		got, err := parseValue(typeString, appendTSV(nil, &s))
		if err != nil || got != s {
			t.Errorf("string %q came back %q, %v", s, got, err)
		}
	}
	for _, f := range []float64{0, math.Copysign(0, -1), 0.1 + 0.2, 1e-300, math.MaxFloat64, math.SmallestNonzeroFloat64, -123.456, 1e21, math.Inf(1), math.Inf(-1)} {
		got, err := parseValue(typeFloat64, appendTSV(nil, &f))
		if err != nil || math.Float64bits(got.(float64)) != math.Float64bits(f) {
			t.Errorf("float %v (%s) came back %v, %v", f, appendTSV(nil, &f), got, err)
		}
	}
	nan := math.NaN()
	if got, err := parseValue(typeFloat64, appendTSV(nil, &nan)); err != nil || !math.IsNaN(got.(float64)) {
		t.Errorf("NaN came back %v, %v", got, err)
	}
	at := time.Date(2026, 11, 1, 23, 59, 58, 0, time.UTC)
	if s := string(appendTSV(nil, &at)); s != "2026-11-01 23:59:58" {
		t.Errorf("time written as %q", s)
	}
	if got, err := parseValue(typeDateTime, appendTSV(nil, &at)); err != nil || !got.(time.Time).Equal(at) {
		t.Errorf("time came back %v, %v", got, err)
	}
	u := uint64(math.MaxUint64)
	if got, err := parseValue(typeUInt64, appendTSV(nil, &u)); err != nil || got != u {
		t.Errorf("uint64 came back %v, %v", got, err)
	}
	for typ, bad := range map[string]string{typeUInt8: "256", typeUInt32: "-1", typeInt64: "1.5", typeString: `a\`, typeDateTime: "2026-13-01 00:00:00"} {
		if _, err := parseValue(typ, []byte(bad)); err == nil {
			t.Errorf("%s %q accepted", typ, bad)
		}
	}
}

// writeFixtureBackup writes a one-version backup by hand: the format as
// docs/ledger-format.md describes it, not as Backup writes it.
func writeFixtureBackup(t *testing.T, version int, rows map[string]string) string {
	t.Helper()
	dir := t.TempDir()
	m := BackupManifest{Format: BackupFormat, GpuledgerVersion: "test", CreatedAt: time.Date(2026, 11, 27, 0, 0, 0, 0, time.UTC),
		Database: "src", SchemaVersion: version, Rebuilt: derivedTables}
	for _, name := range backupTables(version) {
		cols := []BackupColumn{{"a", "String"}, {"n", "UInt64"}}
		body := "a\tn\nString\tUInt64\n" + rows[name]
		var buf bytes.Buffer
		zw := gzip.NewWriter(&buf)
		zw.Write([]byte(body))
		zw.Close()
		sum := sha256.Sum256(buf.Bytes())
		if err := os.WriteFile(filepath.Join(dir, name+".tsv.gz"), buf.Bytes(), 0o644); err != nil {
			t.Fatal(err)
		}
		m.Tables = append(m.Tables, BackupTable{Name: name, File: name + ".tsv.gz", Columns: cols,
			Rows: uint64(strings.Count(rows[name], "\n")), Bytes: int64(buf.Len()), SHA256: hex.EncodeToString(sum[:])})
	}
	data, _ := json.Marshal(m)
	if err := os.WriteFile(filepath.Join(dir, BackupManifestFile), data, 0o644); err != nil {
		t.Fatal(err)
	}
	return dir
}

// A truncated, altered or mislabelled backup is refused, naming the file
// and what is wrong, before anything could be written.
func TestVerifyBackupRefusesDamage(t *testing.T) {
	good := map[string]string{"ledger_rows": "x\t1\ny\\tz\t2\n", "quota_changes": "q\t3\n"}
	if _, err := VerifyBackup(writeFixtureBackup(t, SchemaVersion, good)); err != nil {
		t.Fatalf("intact backup refused: %v", err)
	}
	damage := map[string]struct {
		edit func(dir string)
		want string
	}{
		"truncated": {func(dir string) {
			p := filepath.Join(dir, "ledger_rows.tsv.gz")
			b, _ := os.ReadFile(p)
			os.WriteFile(p, b[:len(b)-5], 0o644)
		}, "ledger_rows.tsv.gz: SHA-256"},
		"one byte altered": {func(dir string) {
			p := filepath.Join(dir, "quota_changes.tsv.gz")
			b, _ := os.ReadFile(p)
			b[len(b)/2] ^= 1
			os.WriteFile(p, b, 0o644)
		}, "quota_changes.tsv.gz: SHA-256"},
		"file missing": {func(dir string) { os.Remove(filepath.Join(dir, "node_labels.tsv.gz")) }, "node_labels.tsv.gz"},
		"newer schema": {func(dir string) {
			editManifest(t, dir, func(m *BackupManifest) { m.SchemaVersion = SchemaVersion + 1 })
		},
			"this binary knows up to"},
		"row count":     {func(dir string) { editManifest(t, dir, func(m *BackupManifest) { m.Tables[0].Rows = 3 }) }, "2 rows, the manifest says 3"},
		"table dropped": {func(dir string) { editManifest(t, dir, func(m *BackupManifest) { m.Tables = m.Tables[1:] }) }, "a backup of schema version"},
		"bad column type": {func(dir string) {
			editManifest(t, dir, func(m *BackupManifest) { m.Tables[1].Columns[0].Type = "Array(String)" })
		}, "is not a ledger column"},
		"header disagrees": {func(dir string) {
			editManifest(t, dir, func(m *BackupManifest) { m.Tables[0].Columns[1].Type = "Int64" })
		}, "header: column 2"},
	}
	for name, d := range damage {
		t.Run(name, func(t *testing.T) {
			dir := writeFixtureBackup(t, SchemaVersion, good)
			d.edit(dir)
			_, err := VerifyBackup(dir)
			if err == nil || !strings.Contains(err.Error(), d.want) {
				t.Errorf("got %v, want an error containing %q", err, d.want)
			}
		})
	}
	if _, err := VerifyBackup(writeFixtureBackup(t, SchemaVersion, map[string]string{"ledger_rows": "only-one-field\n"})); err == nil ||
		!strings.Contains(err.Error(), "line 3: 1 fields, want 2") {
		t.Errorf("short row: %v", err)
	}
	_, err := VerifyBackup(writeFixtureBackup(t, SchemaVersion+1, nil))
	if !errors.Is(err, ErrSchemaTooNew) {
		t.Errorf("a backup newer than the binary: %v", err)
	}
}

func editManifest(t *testing.T, dir string, fn func(*BackupManifest)) {
	t.Helper()
	p := filepath.Join(dir, BackupManifestFile)
	data, err := os.ReadFile(p)
	if err != nil {
		t.Fatal(err)
	}
	var m BackupManifest
	if err := json.Unmarshal(data, &m); err != nil {
		t.Fatal(err)
	}
	fn(&m)
	data, _ = json.Marshal(m)
	if err := os.WriteFile(p, data, 0o644); err != nil {
		t.Fatal(err)
	}
}
