package ledger

import (
	"context"
	"crypto/sha256"
	"encoding/hex"
	"fmt"
	"time"
	"unicode/utf8"
)

// PriceBookRecord is a price book as the ledger records it: its bytes,
// their SHA-256 and the instant its rates hold from (docs/report.md,
// "Price books over time").
type PriceBookRecord struct {
	// EffectiveFrom is a whole UTC hour: every hour starting at or after
	// it is priced by this book, until a later book takes effect.
	EffectiveFrom time.Time
	// RecordedAt is when it was recorded; of two books effective at the
	// same instant, the one recorded later is in force.
	RecordedAt time.Time
	SHA256     string // hex, of Body
	Source     string // the file it was read from, for people
	Body       []byte
}

// Short is the book's name in reports and messages: its SHA-256's first
// 12 hex digits.
func (r PriceBookRecord) Short() string { return ShortSHA(r.SHA256) }

// ShortSHA is a hex SHA-256's first 12 digits.
func ShortSHA(sum string) string {
	if len(sum) > 12 {
		return sum[:12]
	}
	return sum
}

// PriceBookStore is a ledger that records price books: both stores are.
type PriceBookStore interface {
	// RecordPriceBook records rec after CheckPriceBook against the last
	// recorded book and the ledger's closed months. A book whose SHA-256
	// is the last recorded one's is not recorded again: recorded is
	// false.
	RecordPriceBook(ctx context.Context, rec PriceBookRecord, now time.Time) (recorded bool, err error)
	// PriceBooks is every recorded book, in force order: by effective
	// instant, then by recording time. At most MaxPriceBooks.
	PriceBooks(ctx context.Context) ([]PriceBookRecord, error)
}

// Bounds of recorded price books.
const (
	// MaxPriceBookLead is how far after the recording a book may take
	// effect: further is a typo (a year for 2026), not a plan.
	MaxPriceBookLead = 400 * 24 * time.Hour
	// MaxPriceBooks and MaxPriceBooksBytes bound what a ledger holds and
	// a report reads: a change a week for twenty years, of books of 64
	// KiB on average.
	MaxPriceBooks      = 1000
	MaxPriceBooksBytes = 64 << 20
	// MaxPriceBookBytes is the price book's own size bound.
	MaxPriceBookBytes = 1 << 20
	maxSourceLen      = 1024
)

// RefusedPriceBook is CheckPriceBook's error: the record breaks a rule
// (a change never applies backwards, nor in a closed month), which no
// retry mends.
type RefusedPriceBook struct{ Err error }

func (e *RefusedPriceBook) Error() string { return e.Err.Error() }
func (e *RefusedPriceBook) Unwrap() error { return e.Err }

// CheckPriceBook refuses a record that cannot be recorded after last (nil
// when none is) in a ledger whose months are closed through closed (zero:
// none), at now. Every error names the field.
func CheckPriceBook(rec PriceBookRecord, last *PriceBookRecord, closed, now time.Time) error {
	if err := checkPriceBook(rec, last, closed, now); err != nil {
		return &RefusedPriceBook{err}
	}
	return nil
}

func checkPriceBook(rec PriceBookRecord, last *PriceBookRecord, closed, now time.Time) error {
	sum := sha256.Sum256(rec.Body)
	eff := rec.EffectiveFrom
	switch {
	case len(rec.Body) == 0:
		return fmt.Errorf("price book %s: body is empty", rec.Source)
	case len(rec.Body) > MaxPriceBookBytes:
		return fmt.Errorf("price book %s: body has %d bytes, more than %d", rec.Source, len(rec.Body), MaxPriceBookBytes)
	case rec.SHA256 != hex.EncodeToString(sum[:]):
		return fmt.Errorf("price book %s: sha256 %q is not the SHA-256 of its body", rec.Source, rec.SHA256)
	case len(rec.Source) > maxSourceLen || !utf8.ValidString(rec.Source):
		return fmt.Errorf("price book source: want UTF-8 of at most %d bytes", maxSourceLen)
	case eff.IsZero() || !eff.Truncate(time.Hour).Equal(eff):
		return fmt.Errorf("price book %s: effective_from %s is not a whole hour", rec.Source, FormatTime(eff))
	case eff.After(now.Add(MaxPriceBookLead)):
		return fmt.Errorf("price book %s: effective_from %s is more than %d days after now (%s)", rec.Source, FormatTime(eff),
			MaxPriceBookLead/(24*time.Hour), FormatTime(now))
	case !closed.IsZero() && eff.Before(closed):
		return fmt.Errorf("price book %s: effective_from %s lies in a closed month (closed through %s): a closed month never changes; take effect at %s or later",
			rec.Source, FormatTime(eff), FormatTime(closed), FormatTime(closed))
	case last != nil && eff.Before(last.EffectiveFrom):
		return fmt.Errorf("price book %s: effective_from %s is before the last recorded price book's (%s, effective %s): a price change never applies backwards",
			rec.Source, FormatTime(eff), last.Short(), FormatTime(last.EffectiveFrom))
	}
	return nil
}

// CheckPriceBookRoom refuses a record that would take the ledger holding
// books past MaxPriceBooks or MaxPriceBooksBytes.
func CheckPriceBookRoom(rec PriceBookRecord, books []PriceBookRecord) error {
	n := len(rec.Body)
	for _, b := range books {
		n += len(b.Body)
	}
	if len(books) >= MaxPriceBooks || n > MaxPriceBooksBytes {
		return &RefusedPriceBook{fmt.Errorf("price book %s: the ledger holds %d price books already, and may hold at most %d of %d MiB together",
			rec.Source, len(books), MaxPriceBooks, MaxPriceBooksBytes>>20)}
	}
	return nil
}

// LastInForce is the book recorded last in force order, nil for none.
func LastInForce(books []PriceBookRecord) *PriceBookRecord {
	if len(books) == 0 {
		return nil
	}
	return &books[len(books)-1]
}

// ClosedThroughOf is the end of st's last closed month (its closings,
// ClosingStore), zero when none is closed: no price book may take effect
// before it, since a closed month never changes. A month is named in the
// price book's time zone, which the ledger does not keep, so its end is
// taken at the latest instant it ends anywhere (00:00 of the next month
// at UTC-12): a book is refused rather than allowed into a closed month.
func ClosedThroughOf(ctx context.Context, st any) (time.Time, error) {
	cs, ok := st.(ClosingStore)
	if !ok {
		return time.Time{}, fmt.Errorf("cannot read the closed months: ledger %s keeps no closings", kind(st))
	}
	history, err := cs.ClosingHistory(ctx, "", false)
	if err != nil {
		return time.Time{}, fmt.Errorf("cannot read the ledger's closed months: %w", err)
	}
	byPeriod := map[string][]Closing{}
	for _, c := range history {
		byPeriod[c.Period] = append(byPeriod[c.Period], c)
	}
	var through time.Time
	latest := time.FixedZone("UTC-12", -12*3600)
	for p, h := range byPeriod {
		if Closed(h) == nil {
			continue
		}
		m, err := time.ParseInLocation("2006-01", p, latest)
		if err != nil {
			return time.Time{}, fmt.Errorf("cannot read the ledger's closed months: period %q: %w", p, err)
		}
		if end := m.AddDate(0, 1, 0).UTC(); end.After(through) {
			through = end
		}
	}
	return through, nil
}
