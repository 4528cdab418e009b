package main

import (
	"context"
	"database/sql"
	"encoding/binary"
	"fmt"
	"os"
	"path/filepath"
	"strings"
	"testing"
	"time"

	"github.com/gpuledger/gpuledger/attribution"
	"github.com/gpuledger/gpuledger/ledger/filestore"
	"github.com/gpuledger/gpuledger/tenancy"
)

// threeDayLedger writes three days of two GPUs at five-minute rows, one
// container and one idle row each, for teams ml and vision.
func threeDayLedger(t *testing.T) string {
	t.Helper()
	ctx := context.Background()
	path := filepath.Join(t.TempDir(), "ledger.db")
	st, err := filestore.OpenFile(ctx, path, filestore.FileOptions{})
	if err != nil {
		t.Fatal(err)
	}
	from := time.Date(2026, 3, 1, 0, 0, 0, 0, time.UTC)
	var rows []attribution.Row
	for m := 0; m < 3*24*12; m++ {
		start := from.Add(time.Duration(m) * 5 * time.Minute)
		for g, team := range []string{"ml", "vision"} {
			gpu := fmt.Sprintf("GPU-%d", g)
			used := 300 * float64(1+(m+g)%5) / 7
			base := attribution.Row{IntervalStart: start, IntervalEnd: start.Add(5 * time.Minute), Node: "n1", GPUUUID: gpu,
				GPUModel: "A100-SXM4-80GB", SliceID: gpu, SharingMode: string(tenancy.Exclusive), Method: attribution.MethodMeasured}
			c, idle := base, base
			c.Kind, c.Namespace, c.Team, c.Pod, c.PodUID, c.Container = attribution.KindContainer, team, team, team+"-0", team+"-uid", "main"
			c.AllocatedGPUSeconds, c.UsedGPUSeconds, c.MemoryMiBSeconds = 300, used, 300*4000
			idle.Kind, idle.UsedGPUSeconds = attribution.KindIdle, 300-used
			rows = append(rows, c, idle)
		}
	}
	if err := st.Append(ctx, rows, nil); err != nil {
		t.Fatal(err)
	}
	if err := st.Close(); err != nil {
		t.Fatal(err)
	}
	return path
}

// rollupKeyBytes returns the file offsets of the low byte of the slot key
// of every row on the leaf pages of table (a WITHOUT ROWID rollup), found
// with SQLite's dbstat and the file format: page header, cell pointers,
// cell = payload-size varint, record header, first value.
func rollupKeyBytes(t *testing.T, path, table string) []int {
	t.Helper()
	db, err := sql.Open("sqlite", "file:"+path+"?mode=ro&immutable=1")
	if err != nil {
		t.Fatal(err)
	}
	defer db.Close()
	var pageSize int
	if err := db.QueryRow("PRAGMA page_size").Scan(&pageSize); err != nil {
		t.Fatal(err)
	}
	rs, err := db.Query("SELECT pageno FROM dbstat WHERE name = ? AND pagetype = 'leaf' ORDER BY pageno", table)
	if err != nil {
		t.Fatal(err)
	}
	var pages []int
	for rs.Next() {
		var p int
		if err := rs.Scan(&p); err != nil {
			t.Fatal(err)
		}
		pages = append(pages, p)
	}
	rs.Close()
	b, err := os.ReadFile(path)
	if err != nil {
		t.Fatal(err)
	}
	varint := func(at int) (uint64, int) { // SQLite's big-endian varint
		var v uint64
		for i := 0; i < 8; i++ {
			v = v<<7 | uint64(b[at+i]&0x7f)
			if b[at+i] < 0x80 {
				return v, i + 1
			}
		}
		return v<<8 | uint64(b[at+8]), 9
	}
	sizes := map[uint64]int{1: 1, 2: 2, 3: 3, 4: 4, 5: 6, 6: 8}
	var out []int
	for _, p := range pages {
		base := (p - 1) * pageSize
		if b[base] != 10 { // an index-type leaf, as WITHOUT ROWID tables use
			t.Fatalf("page %d of %s is of type %d", p, table, b[base])
		}
		for i := 0; i < int(binary.BigEndian.Uint16(b[base+3:])); i++ {
			cell := base + int(binary.BigEndian.Uint16(b[base+8+2*i:]))
			_, n := varint(cell)
			hsize, n2 := varint(cell + n)
			serial, _ := varint(cell + n + n2)
			if sizes[serial] > 0 {
				out = append(out, cell+n+int(hsize)+sizes[serial]-1)
			}
		}
	}
	return out
}

// lastPage is the highest page number of a table or index of the file,
// and the file's page size.
func lastPage(t *testing.T, path, name string) (page, size int) {
	t.Helper()
	db, err := sql.Open("sqlite", "file:"+path+"?mode=ro&immutable=1")
	if err != nil {
		t.Fatal(err)
	}
	defer db.Close()
	if err := db.QueryRow("SELECT max(pageno), (SELECT page_size FROM pragma_page_size) FROM dbstat WHERE name = ?", name).Scan(&page, &size); err != nil {
		t.Fatal(err)
	}
	return page, size
}

// `gpuledger report` on a ledger file with one flipped bit in a rollup key
// (SQLite's quick_check passes such a file), or in the raw rows of the
// slot still being written, either prints the bill of the undamaged file
// or exits non-zero with an error naming the file: before the rollups had
// checksums it printed a short bill and exited 0.
func TestReportOfADamagedLedgerNeverPrintsAShortBill(t *testing.T) {
	t.Setenv("GPULEDGER_LEDGER", "")
	t.Setenv("GPULEDGER_PRICES", "")
	fixNow(t, time.Date(2026, 3, 10, 0, 0, 0, 0, time.UTC))
	path := threeDayLedger(t)
	prices := pricesFile(t, "allocation")
	args := func(p string) []string {
		return []string{"report", "--from", "2026-03-01", "--to", "2026-03-04", "--prices", prices, "--ledger", p}
	}
	code, want, stderr := runCLI(args(path)...)
	if code != 0 || want == "" {
		t.Fatalf("report of the undamaged ledger: exit %d, stdout %q, stderr %s", code, want, stderr)
	}
	intact, err := os.ReadFile(path)
	if err != nil {
		t.Fatal(err)
	}
	offsets := rollupKeyBytes(t, path, "ledger_rollup")
	if len(offsets) < 100 {
		t.Fatalf("%d rollup rows found, want one per slot and group (about 580)", len(offsets))
	}
	type flip struct {
		what string
		off  int
		bit  uint
	}
	var flips []flip
	for i, off := range offsets {
		if i%7 == 3 { // every seventh row: slots all through the three days
			flips = append(flips, flip{fmt.Sprintf("rollup row %d", i), off, 0}, flip{fmt.Sprintf("rollup row %d", i), off, 4})
		}
	}
	// The last pages of the raw rows and of their key index hold the slot
	// still being written, which the report reads raw.
	for _, table := range []string{"ledger_rows", "ledger_rows_key"} {
		last, size := lastPage(t, path, table)
		for at := 16; at < size; at += 131 {
			flips = append(flips, flip{fmt.Sprintf("%s page %d byte %d", table, last, at), (last-1)*size + at, uint(at % 8)})
		}
	}
	dir := t.TempDir()
	refused := 0
	for i, f := range flips {
		damaged := append([]byte(nil), intact...)
		damaged[f.off] ^= 1 << f.bit
		p := filepath.Join(dir, fmt.Sprintf("flip-%d.db", i))
		if err := os.WriteFile(p, damaged, 0o644); err != nil {
			t.Fatal(err)
		}
		code, got, stderr := runCLI(args(p)...)
		switch {
		case code != 0:
			refused++
			if !strings.Contains(stderr, p) || !strings.Contains(stderr, "damaged") && !strings.Contains(stderr, "corrupt") {
				t.Errorf("%s, bit %d: exit %d, but stderr does not name %s as damaged: %s", f.what, f.bit, code, p, stderr)
			}
		case got != want:
			t.Errorf("%s, bit %d: exit 0 with a different bill:\n%s\nwant\n%s", f.what, f.bit, got, want)
		}
		os.Remove(p)
	}
	t.Logf("%d damaged files: %d refused naming the file, the rest billed exactly", len(flips), refused)
	if refused == 0 {
		t.Error("no damaged file was refused: the flips did not reach the rollup")
	}
}
