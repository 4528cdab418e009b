package main

import (
	"bytes"
	"context"
	"os"
	"path/filepath"
	"strings"
	"testing"

	"github.com/gpuledger/gpuledger/ledger/clickhouse/chtest"
)

// `ledger migrate --prices` stores the book for the ClickHouse dashboards;
// a bad book, or a file ledger, is refused before anything changes.
func TestLedgerMigratePrices(t *testing.T) {
	ctx := context.Background()
	prices := filepath.Join("..", "..", "deploy", "prices.yaml")
	bad := filepath.Join(t.TempDir(), "bad.yaml")
	if err := os.WriteFile(bad, []byte("currency: USD\npolicy: allocation\nrates: {}\n"), 0o644); err != nil {
		t.Fatal(err)
	}
	var out bytes.Buffer
	err := runLedger(ctx, []string{"migrate", "--ledger", filepath.Join(t.TempDir(), "l.db"), "--prices", prices}, &out)
	if err == nil || !strings.Contains(err.Error(), "--prices applies to ClickHouse") {
		t.Errorf("file ledger with --prices: %v", err)
	}

	h := chtest.Setup()
	t.Cleanup(h.Close)
	h.Require(t)
	dsn := h.DSN(t)
	err = runLedger(ctx, []string{"migrate", "--ledger", dsn, "--prices", bad}, &out)
	if err == nil || !strings.Contains(err.Error(), "defaultRate") {
		t.Errorf("bad price book: %v", err)
	}
	if out.Len() != 0 {
		t.Errorf("a refused migrate printed %q", out.String())
	}
	for i := 0; i < 2; i++ {
		out.Reset()
		if err := runLedger(ctx, []string{"migrate", "--ledger", dsn, "--prices", prices}, &out); err != nil {
			t.Fatal(err)
		}
		if !strings.Contains(out.String(), "schema up to date") || !strings.Contains(out.String(), "price book "+prices+" stored") {
			t.Errorf("migrate --prices printed %q", out.String())
		}
	}
}
