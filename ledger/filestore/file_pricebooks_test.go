package filestore

import (
	"bytes"
	"context"
	"crypto/sha256"
	"encoding/hex"
	"path/filepath"
	"strings"
	"testing"
	"time"

	"github.com/gpuledger/gpuledger/ledger"
)

// pbRecord is a price book record of body, effective at eff.
func pbRecord(body string, eff time.Time) ledger.PriceBookRecord {
	sum := sha256.Sum256([]byte(body))
	return ledger.PriceBookRecord{EffectiveFrom: eff, SHA256: hex.EncodeToString(sum[:]), Source: "prices.yaml", Body: []byte(body)}
}

// TestFilePriceBooks: books are recorded in force order, a change never
// applies backwards, bad records are refused naming the field, and the
// file keeps them across a reopen.
func TestFilePriceBooks(t *testing.T) {
	ctx := context.Background()
	path := filepath.Join(t.TempDir(), "ledger.db")
	st, err := OpenFile(ctx, path, FileOptions{})
	if err != nil {
		t.Fatal(err)
	}
	CheckPriceBookStore(t, st)
	st.Close()
	ro, err := OpenReadOnly(ctx, path, FileOptions{})
	if err != nil {
		t.Fatal(err)
	}
	defer ro.Close()
	books, err := ro.PriceBooks(ctx)
	if err != nil || len(books) != 3 {
		t.Fatalf("after reopening: %d books (%v), want 3", len(books), err)
	}
	if _, err := ro.RecordPriceBook(ctx, pbRecord("d", books[2].EffectiveFrom), books[2].EffectiveFrom); err == nil || !strings.Contains(err.Error(), "read-only") {
		t.Errorf("recording in a read-only ledger: %v", err)
	}
}

// CheckPriceBookStore runs the price book checks on an empty store.
func CheckPriceBookStore(t *testing.T, st ledger.PriceBookStore) {
	t.Helper()
	ctx := context.Background()
	now := time.Date(2026, 11, 15, 13, 27, 5, 0, time.UTC)
	if books, err := st.PriceBooks(ctx); err != nil || len(books) != 0 {
		t.Fatalf("a new ledger has %d books (%v), want none", len(books), err)
	}
	a := pbRecord("currency: USD\n", time.Date(2026, 11, 1, 0, 0, 0, 0, time.UTC))
	a.RecordedAt = now
	for i, want := range []bool{true, false} {
		if ok, err := st.RecordPriceBook(ctx, a, now); err != nil || ok != want {
			t.Fatalf("recording the first book, time %d: recorded %v (%v), want %v", i+1, ok, err, want)
		}
	}
	b := pbRecord("currency: EUR\n", time.Date(2026, 11, 16, 0, 0, 0, 0, time.UTC))
	b.RecordedAt = now.Add(time.Second)
	for _, c := range []struct {
		name string
		edit func(*ledger.PriceBookRecord)
		want []string
	}{
		{"backwards", func(r *ledger.PriceBookRecord) { r.EffectiveFrom = time.Date(2026, 10, 31, 23, 0, 0, 0, time.UTC) }, []string{"effective_from 2026-10-31T23:00:00Z", "before the last recorded", a.SHA256[:12]}},
		{"too far ahead", func(r *ledger.PriceBookRecord) {
			r.EffectiveFrom = now.Truncate(time.Hour).Add(ledger.MaxPriceBookLead + time.Hour)
		}, []string{"effective_from", "more than 400 days after now"}},
		{"not a whole hour", func(r *ledger.PriceBookRecord) { r.EffectiveFrom = r.EffectiveFrom.Add(30 * time.Minute) }, []string{"effective_from 2026-11-16T00:30:00Z", "not a whole hour"}},
		{"no instant", func(r *ledger.PriceBookRecord) { r.EffectiveFrom = time.Time{} }, []string{"effective_from", "not a whole hour"}},
		{"wrong sum", func(r *ledger.PriceBookRecord) { r.SHA256 = a.SHA256 + "0" }, []string{"sha256", "not the SHA-256 of its body"}},
		{"empty", func(r *ledger.PriceBookRecord) { *r = pbRecord("", r.EffectiveFrom) }, []string{"body is empty"}},
	} {
		r := b
		c.edit(&r)
		_, err := st.RecordPriceBook(ctx, r, now)
		for _, w := range c.want {
			if err == nil || !strings.Contains(err.Error(), w) {
				t.Errorf("%s: %v, want an error with %q", c.name, err, w)
			}
		}
	}
	if ok, err := st.RecordPriceBook(ctx, b, now); err != nil || !ok {
		t.Fatalf("recording a later book: %v %v", ok, err)
	}
	// A third at the same instant: recorded later, it is in force.
	c := pbRecord("currency: GBP\n", b.EffectiveFrom)
	c.RecordedAt = now.Add(2 * time.Second)
	if ok, err := st.RecordPriceBook(ctx, c, now); err != nil || !ok {
		t.Fatalf("recording a book at the last one's instant: %v %v", ok, err)
	}
	books, err := st.PriceBooks(ctx)
	if err != nil {
		t.Fatal(err)
	}
	if len(books) != 3 {
		t.Fatalf("%d books, want 3", len(books))
	}
	for i, w := range []ledger.PriceBookRecord{a, b, c} {
		g := books[i]
		if g.SHA256 != w.SHA256 || !bytes.Equal(g.Body, w.Body) || !g.EffectiveFrom.Equal(w.EffectiveFrom) || !g.RecordedAt.Equal(w.RecordedAt) || g.Source != w.Source {
			t.Errorf("book %d: %+v, want %+v", i, g, w)
		}
	}
}

// TestCheckPriceBookClosedMonth: a book may not take effect in a closed
// month.
func TestCheckPriceBookClosedMonth(t *testing.T) {
	closed := time.Date(2026, 11, 1, 0, 0, 0, 0, time.UTC)
	r := pbRecord("x", closed.Add(-time.Hour))
	err := ledger.CheckPriceBook(r, nil, closed, closed.AddDate(0, 0, 3))
	if err == nil || !strings.Contains(err.Error(), "effective_from 2026-10-31T23:00:00Z lies in a closed month") {
		t.Fatalf("%v", err)
	}
	r.EffectiveFrom = closed
	if err := ledger.CheckPriceBook(r, nil, closed, closed.AddDate(0, 0, 3)); err != nil {
		t.Fatal(err)
	}
}

// A book that would take effect in a closed month is refused by the
// store, from the ledger's own history of closings: October closed, a
// book effective on 31 October 12:00 UTC (still October at UTC-12) is
// refused; one effective at 1 November 12:00 UTC, after October ended
// everywhere, is recorded; after a reopening, October takes books again.
func TestFileRefusesABookInAClosedMonth(t *testing.T) {
	ctx := context.Background()
	st, err := OpenFile(ctx, filepath.Join(t.TempDir(), "ledger.db"), FileOptions{})
	if err != nil {
		t.Fatal(err)
	}
	defer st.Close()
	now := time.Date(2026, 11, 3, 0, 0, 0, 0, time.UTC)
	if err := st.AppendClosing(ctx, testClosing("2026-10", now)); err != nil {
		t.Fatal(err)
	}
	in := pbRecord("currency: USD\n", time.Date(2026, 10, 31, 12, 0, 0, 0, time.UTC))
	in.RecordedAt = now
	if _, err := st.RecordPriceBook(ctx, in, now); err == nil || !strings.Contains(err.Error(), "closed") {
		t.Fatalf("a book effective in closed October: err %v, want a refusal naming the closed month", err)
	}
	after := pbRecord("currency: EUR\n", time.Date(2026, 11, 1, 12, 0, 0, 0, time.UTC))
	after.RecordedAt = now
	if ok, err := st.RecordPriceBook(ctx, after, now); err != nil || !ok {
		t.Fatalf("a book effective after October ended everywhere: recorded %v, err %v", ok, err)
	}
	reopen := ledger.Closing{Period: "2026-10", Action: ledger.ActionReopen, At: now.Add(time.Hour), Reason: "late rows"}
	if err := st.AppendClosing(ctx, reopen); err != nil {
		t.Fatal(err)
	}
	through, err := ledger.ClosedThroughOf(ctx, st)
	if err != nil || !through.IsZero() {
		t.Fatalf("after reopening October: closed through %v (%v), want none", through, err)
	}
}
