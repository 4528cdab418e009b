package clickhouse

import (
	"bytes"
	"context"
	"crypto/sha256"
	"encoding/hex"
	"strings"
	"testing"
	"time"

	"github.com/gpuledger/gpuledger/ledger"
)

func pbRecord(body string, eff, at time.Time) ledger.PriceBookRecord {
	sum := sha256.Sum256([]byte(body))
	return ledger.PriceBookRecord{EffectiveFrom: eff, RecordedAt: at, SHA256: hex.EncodeToString(sum[:]), Source: "prices.yaml", Body: []byte(body)}
}

// TestPriceBooksClickHouse: the ClickHouse ledger records price books as
// the embedded one does: in force order, the same book once, never
// backwards, bad records refused naming the field.
func TestPriceBooksClickHouse(t *testing.T) {
	ctx := context.Background()
	s, _ := openTest(t)
	now := time.Date(2026, 11, 15, 13, 27, 5, 123, time.UTC)
	if books, err := s.PriceBooks(ctx); err != nil || len(books) != 0 {
		t.Fatalf("a new database has %d books (%v)", len(books), err)
	}
	a := pbRecord("currency: USD\n", time.Date(2026, 11, 1, 0, 0, 0, 0, time.UTC), now)
	for i, want := range []bool{true, false} {
		if ok, err := s.RecordPriceBook(ctx, a, now); err != nil || ok != want {
			t.Fatalf("recording the first book, time %d: %v (%v), want %v", i+1, ok, err, want)
		}
	}
	back := pbRecord("currency: EUR\n", time.Date(2026, 10, 31, 23, 0, 0, 0, time.UTC), now)
	if _, err := s.RecordPriceBook(ctx, back, now); err == nil || !strings.Contains(err.Error(), "effective_from 2026-10-31T23:00:00Z is before the last recorded") {
		t.Errorf("a book effective before the last: %v", err)
	}
	far := pbRecord("currency: EUR\n", now.Truncate(time.Hour).Add(ledger.MaxPriceBookLead+time.Hour), now)
	if _, err := s.RecordPriceBook(ctx, far, now); err == nil || !strings.Contains(err.Error(), "effective_from") {
		t.Errorf("a book effective too far ahead: %v", err)
	}
	b := pbRecord("currency: EUR\n", time.Date(2026, 11, 16, 0, 0, 0, 0, time.UTC), now.Add(time.Second))
	c := pbRecord("currency: GBP\n", b.EffectiveFrom, now.Add(2*time.Second))
	for _, r := range []ledger.PriceBookRecord{b, c} {
		if ok, err := s.RecordPriceBook(ctx, r, now); err != nil || !ok {
			t.Fatalf("recording %s: %v %v", r.Body, ok, err)
		}
	}
	books, err := s.PriceBooks(ctx)
	if err != nil || len(books) != 3 {
		t.Fatalf("%d books (%v), want 3", len(books), err)
	}
	for i, w := range []ledger.PriceBookRecord{a, b, c} {
		g := books[i]
		if g.SHA256 != w.SHA256 || !bytes.Equal(g.Body, w.Body) || !g.EffectiveFrom.Equal(w.EffectiveFrom) || !g.RecordedAt.Equal(w.RecordedAt) || g.Source != w.Source {
			t.Errorf("book %d: %+v, want %+v", i, g, w)
		}
	}
}

// TestBackupRestorePriceBooks: the recorded books are part of the record:
// a backup carries them and a restore gives them back byte for byte.
func TestBackupRestorePriceBooks(t *testing.T) {
	harness.Require(t)
	ctx := context.Background()
	s, src := openTest(t)
	now := time.Date(2026, 11, 15, 13, 27, 5, 0, time.UTC)
	odd := pbRecord("currency: USD\n# tab\there, NUL \x00, not UTF-8 \xff\\n\n", time.Date(2026, 11, 1, 0, 0, 0, 0, time.UTC), now)
	if _, err := s.RecordPriceBook(ctx, odd, now); err != nil {
		t.Fatal(err)
	}
	dir := t.TempDir() + "/b"
	if _, err := Backup(ctx, src, Options{}, dir, "test"); err != nil {
		t.Fatal(err)
	}
	dst := mustDSN(t, harness.DSN(t))
	if _, err := Restore(ctx, dst, Options{}, dir, RestoreOptions{}); err != nil {
		t.Fatal(err)
	}
	b, err := Open(ctx, dst, Options{})
	if err != nil {
		t.Fatal(err)
	}
	defer b.Close()
	books, err := b.PriceBooks(ctx)
	if err != nil || len(books) != 1 || !bytes.Equal(books[0].Body, odd.Body) || books[0].SHA256 != odd.SHA256 || !books[0].EffectiveFrom.Equal(odd.EffectiveFrom) {
		t.Fatalf("restored books %+v (%v), want %+v", books, err, odd)
	}
}
