package filestore

import (
	"context"
	"errors"
	"path/filepath"
	"strings"
	"testing"
	"time"

	"github.com/gpuledger/gpuledger/ledger"
)

// testClosing is a closing of period with small files.
func testClosing(period string, at time.Time) ledger.Closing {
	book := []byte("currency: USD\nrates: {}\ndefaultRate: 1\n")
	c := ledger.Closing{Period: period, Action: ledger.ActionClose, At: at, PriceBook: book, PriceBookSHA256: ledger.PriceBookDigest(book), Files: map[string][]byte{}}
	for _, name := range ledger.ClosedFiles {
		c.Files[name] = []byte(name + " of " + period + "\n")
	}
	c.Digest = ledger.FilesDigest(c.Files)
	return c
}

// The file ledger keeps a month's history append-only: a closing with its
// files byte for byte, closing twice refused, reopen and post only of a
// closed month, bad records refused naming what, and a damaged file
// stored with a closing read as an error, never as another bill.
func TestFileClosings(t *testing.T) {
	ctx := context.Background()
	path := filepath.Join(t.TempDir(), "ledger.db")
	s, err := OpenFile(ctx, path, FileOptions{})
	if err != nil {
		t.Fatal(err)
	}
	defer s.Close()
	at := time.Date(2026, 11, 3, 0, 0, 0, 0, time.UTC)
	c := testClosing("2026-10", at)
	if err := s.AppendClosing(ctx, c); err != nil {
		t.Fatal(err)
	}
	if err := s.AppendClosing(ctx, testClosing("2026-10", at.Add(time.Hour))); !errors.Is(err, ledger.ErrAlreadyClosed) {
		t.Fatalf("closing twice: %v", err)
	}
	post := ledger.Closing{Period: "2026-10", Action: ledger.ActionPost, At: at.Add(2 * time.Hour), Reason: "new rate", PriceBook: []byte("x"), PriceBookSHA256: ledger.PriceBookDigest([]byte("x"))}
	if err := s.AppendClosing(ctx, post); err != nil {
		t.Fatal(err)
	}
	post.Period = "2026-09"
	if err := s.AppendClosing(ctx, post); !errors.Is(err, ledger.ErrNotClosed) {
		t.Fatalf("posting to an open month: %v", err)
	}
	for name, bad := range map[string]func(*ledger.Closing){
		"period":  func(c *ledger.Closing) { c.Period = "2026-13" },
		"digest":  func(c *ledger.Closing) { c.Files["csv"] = []byte("other") },
		"missing": func(c *ledger.Closing) { delete(c.Files, "html") },
		"SHA-256": func(c *ledger.Closing) { c.PriceBookSHA256 = "00" },
		"reason":  func(c *ledger.Closing) { c.Reason = strings.Repeat("x", ledger.MaxClosingReason+1) },
	} {
		b := testClosing("2026-08", at)
		bad(&b)
		if err := s.AppendClosing(ctx, b); err == nil || !strings.Contains(err.Error(), path) {
			t.Errorf("%s: a bad closing was recorded or the error names no ledger: %v", name, err)
		}
	}
	reopen := ledger.Closing{Period: "2026-10", Action: ledger.ActionReopen, At: at.Add(3 * time.Hour), Reason: "wrong labels"}
	if err := s.AppendClosing(ctx, reopen); err != nil {
		t.Fatal(err)
	}
	h, err := s.ClosingHistory(ctx, "2026-10", true)
	if err != nil {
		t.Fatal(err)
	}
	if len(h) != 3 || h[0].Action != ledger.ActionClose || h[1].Action != ledger.ActionPost || h[2].Action != ledger.ActionReopen || ledger.Closed(h) != nil {
		t.Fatalf("history %+v", h)
	}
	if string(h[0].Files["focus-jsonl"]) != "focus-jsonl of 2026-10\n" || h[0].Digest != c.Digest || !h[0].At.Equal(at) {
		t.Fatalf("stored closing %+v", h[0])
	}
	// A closing again after the reopening is in force.
	if err := s.AppendClosing(ctx, testClosing("2026-10", at.Add(4*time.Hour))); err != nil {
		t.Fatal(err)
	}
	if h, _ = s.ClosingHistory(ctx, "2026-10", false); ledger.Closed(h) == nil || !ledger.Closed(h).At.Equal(at.Add(4*time.Hour)) || h[0].Files != nil {
		t.Fatalf("history after closing again %+v", h)
	}

	// Damage: a stored file changed under the ledger.
	if _, err := s.w.ExecContext(ctx, "UPDATE month_closings SET csv = X'00' WHERE seq = 1"); err != nil {
		t.Fatal(err)
	}
	if _, err := s.ClosingHistory(ctx, "2026-10", true); !errors.Is(err, ErrCorrupt) || !strings.Contains(err.Error(), "2026-10") {
		t.Fatalf("damaged closing read as %v", err)
	}

	// A read-only open records nothing.
	ro, err := OpenReadOnly(ctx, path, FileOptions{})
	if err != nil {
		t.Fatal(err)
	}
	defer ro.Close()
	if err := ro.AppendClosing(ctx, testClosing("2026-07", at)); err == nil || !strings.Contains(err.Error(), "read-only") {
		t.Fatalf("closing through a read-only open: %v", err)
	}
}
