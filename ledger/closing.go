package ledger

import (
	"context"
	"crypto/sha256"
	"encoding/hex"
	"errors"
	"fmt"
	"regexp"
	"strconv"
	"time"

	"github.com/gpuledger/gpuledger/calendar"
)

// What a month's history of closings records: a closing stores the
// month's bill, a reopening lets it be recomputed again, a post records a
// price book whose recomputed difference the next open month bills as
// adjustments (docs/report.md, "Closing a month").
const (
	ActionClose  = "close"
	ActionReopen = "reopen"
	ActionPost   = "post"
)

// ClosedFiles are the report formats a closing stores, in the order the
// digest reads them (report.Format names).
var ClosedFiles = []string{"csv", "json", "html", "focus", "focus-jsonl"}

// Bounds of one record: a price book is at most 1 MiB (pricebook's
// limit), a reason a line, and the files together a size a fleet's
// month reaches only with its per-device FOCUS rows.
const (
	MaxClosingReason    = 1000
	MaxClosingPriceBook = 1 << 20
	MaxClosedBytes      = 512 << 20
)

// ErrAlreadyClosed is AppendClosing's answer to closing a closed month;
// ErrNotClosed to reopening or posting to an open one.
// ErrCorrupt marks what a ledger read back damaged: a stored bill whose
// digest does not match, or (filestore.ErrCorrupt) a damaged file.
var ErrCorrupt = errors.New("the ledger file is damaged")

var (
	ErrAlreadyClosed = errors.New("the month is already closed")
	ErrNotClosed     = errors.New("the month is not closed")
)

// Closing is one entry of a month's append-only history.
type Closing struct {
	// Seq orders the history (assigned by the store).
	Seq int64
	// Period is the month, YYYY-MM in the price book's time zone.
	Period string
	Action string
	At     time.Time
	// Reason is the operator's words (reopen, post); may be empty on close.
	Reason string
	// PriceBook is the price book the files were priced with (close) or
	// the recomputation is priced with (post), byte for byte, and its
	// SHA-256 in hex.
	PriceBook       []byte
	PriceBookSHA256 string
	// Files are a closing's stored reports by ClosedFiles name, and
	// Digest the SHA-256 over them (FilesDigest); empty otherwise, and
	// Files nil when the history was read without them.
	Files  map[string][]byte
	Digest string
}

// ClosingStore is the history of closings both ledgers keep.
type ClosingStore interface {
	// AppendClosing records c in one atomic write after checking it
	// against the month's history (CheckClosing): a closing of a closed
	// month is ErrAlreadyClosed, a reopening or post of an open one
	// ErrNotClosed, and nothing is written.
	AppendClosing(ctx context.Context, c Closing) error
	// ClosingHistory is period's history ("" for every month's) in
	// order; withFiles reads the closings' files too (verified against
	// their digest), else Files is nil.
	ClosingHistory(ctx context.Context, period string, withFiles bool) ([]Closing, error)
}

var periodPattern = regexp.MustCompile(`^[0-9]{4}-(0[1-9]|1[0-2])$`)

// ValidPeriod reports whether p is a month YYYY-MM.
func ValidPeriod(p string) bool { return periodPattern.MatchString(p) }

// PriceBookDigest is the SHA-256 of a price book's bytes, in hex.
func PriceBookDigest(b []byte) string {
	h := sha256.Sum256(b)
	return hex.EncodeToString(h[:])
}

// FilesDigest is the SHA-256 over a closing's files: for each name of
// ClosedFiles in order, the name, its length and its bytes, so no two
// sets of files share a digest by moving bytes between files.
func FilesDigest(files map[string][]byte) string {
	h := sha256.New()
	for _, name := range ClosedFiles {
		b := files[name]
		fmt.Fprintf(h, "%s\n%s\n", name, strconv.Itoa(len(b)))
		h.Write(b)
	}
	return hex.EncodeToString(h.Sum(nil))
}

// Validate checks what a store is asked to record: a month, an action,
// bounded text, the price book's digest, and a closing's files whole.
func (c *Closing) Validate() error {
	where := fmt.Sprintf("%s of %q", c.Action, c.Period)
	switch {
	case !ValidPeriod(c.Period):
		return fmt.Errorf("%s: the period is not a month YYYY-MM", where)
	case c.Action != ActionClose && c.Action != ActionReopen && c.Action != ActionPost:
		return fmt.Errorf("%s: unknown action (want %s, %s or %s)", where, ActionClose, ActionReopen, ActionPost)
	case c.At.IsZero() || c.At.Before(calendar.MinTime) || c.At.After(calendar.MaxTime):
		return fmt.Errorf("%s: no valid time", where)
	case len(c.Reason) > MaxClosingReason:
		return fmt.Errorf("%s: the reason is %d bytes, more than %d", where, len(c.Reason), MaxClosingReason)
	case len(c.PriceBook) > MaxClosingPriceBook:
		return fmt.Errorf("%s: the price book is %d bytes, more than %d", where, len(c.PriceBook), MaxClosingPriceBook)
	case c.Action != ActionReopen && len(c.PriceBook) == 0:
		return fmt.Errorf("%s: no price book", where)
	case len(c.PriceBook) > 0 && c.PriceBookSHA256 != PriceBookDigest(c.PriceBook):
		return fmt.Errorf("%s: the price book's SHA-256 does not match its bytes", where)
	}
	if c.Action != ActionClose {
		if len(c.Files) > 0 {
			return fmt.Errorf("%s: only a closing stores files", where)
		}
		return nil
	}
	var n int
	for _, name := range ClosedFiles {
		if len(c.Files[name]) == 0 {
			return fmt.Errorf("%s: the %s file is missing", where, name)
		}
		n += len(c.Files[name])
	}
	if len(c.Files) != len(ClosedFiles) {
		return fmt.Errorf("%s: %d files, want %d (%v)", where, len(c.Files), len(ClosedFiles), ClosedFiles)
	}
	if n > MaxClosedBytes {
		return fmt.Errorf("%s: the files are %d bytes, more than %d", where, n, MaxClosedBytes)
	}
	if c.Digest != FilesDigest(c.Files) {
		return fmt.Errorf("%s: the digest does not match the files", where)
	}
	return nil
}

// Verify checks a closing read back: its files against its digest and
// its price book against its SHA-256. Damage is an error naming the
// month, never a silently different bill.
func (c *Closing) Verify(store string) error {
	if len(c.PriceBook) > 0 && PriceBookDigest(c.PriceBook) != c.PriceBookSHA256 {
		return fmt.Errorf("%w: %s: the price book stored with the %s of %s (seq %d) does not match its SHA-256", ErrCorrupt, store, c.Action, c.Period, c.Seq)
	}
	if c.Action == ActionClose && c.Files != nil && FilesDigest(c.Files) != c.Digest {
		return fmt.Errorf("%w: %s: the files stored with the closing of %s (seq %d) do not match their digest", ErrCorrupt, store, c.Period, c.Seq)
	}
	return nil
}

// CheckClosing is the state check AppendClosing makes against the
// month's history.
func CheckClosing(history []Closing, c Closing) error {
	closed := Closed(history) != nil
	switch {
	case c.Action == ActionClose && closed:
		return fmt.Errorf("cannot close %s: %w", c.Period, ErrAlreadyClosed)
	case c.Action != ActionClose && !closed:
		return fmt.Errorf("cannot %s %s: %w", c.Action, c.Period, ErrNotClosed)
	}
	return nil
}

// Closed is the closing in force in a month's history (the last closing
// when no reopening follows it), nil when the month is open.
func Closed(history []Closing) *Closing {
	for i := len(history) - 1; i >= 0; i-- {
		switch history[i].Action {
		case ActionClose:
			return &history[i]
		case ActionReopen:
			return nil
		}
	}
	return nil
}

// LastPost is the last post after the closing in force, nil when none.
func LastPost(history []Closing) *Closing {
	for i := len(history) - 1; i >= 0; i-- {
		switch history[i].Action {
		case ActionPost:
			return &history[i]
		case ActionClose, ActionReopen:
			return nil
		}
	}
	return nil
}

// Closings asks s for its history of closings: an error naming s when it
// keeps none. Every reader of a bill requires it: a wrapped store that
// forgot the method would otherwise recompute a closed month as if open.
func Closings(s any) (ClosingStore, error) { return need[ClosingStore](s, "keeps no closed months") }
